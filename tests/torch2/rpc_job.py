"""An unchanged PyTorch RPC job: every rank asks the next one to add two tensors, then
rank 0 prints the sums it saw. Run under ddprun (init_rpc's env:// reaches the agent's
store)."""
import os

import torch
import torch.distributed.rpc as rpc

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
rpc.init_rpc(f"worker{rank}", rank=rank, world_size=world)
peer = f"worker{(rank + 1) % world}"
total = rpc.rpc_sync(peer, torch.add, args=(torch.ones(2) * rank, torch.ones(2)))
print(f"rank {rank} got {total.tolist()} from {peer}", flush=True)
rpc.shutdown()
