"""A real NCCL rank (PyTorch's ProcessGroupNCCL, its flight recorder on as ddprun sets it
up) that runs 10 all_reduces, says so, and then hangs outside NCCL: ddprun's hang
detection must ask PyTorch for the flight recorder's dump and read it. Run under ddprun."""
import os
import time

import torch
import torch.distributed as dist

torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("nccl")
t = torch.ones(1 << 20, device="cuda")
for _ in range(10):
    dist.all_reduce(t)
torch.cuda.synchronize()
print(f"rank {dist.get_rank()} did 10 all_reduces; now it hangs", flush=True)
time.sleep(600)
