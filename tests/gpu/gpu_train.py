"""A DDP job on the GPU (NCCL) that keeps the GPU busy for a few seconds, so that ddprun's
NVML samples see it, then logs its loss through ddprun_tracking. Run under ddprun."""
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import ddprun_tracking

local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl")
device = torch.device("cuda", local_rank)
model = DDP(torch.nn.Linear(4096, 4096).to(device), device_ids=[local_rank])
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
x = torch.randn(4096, 4096, device=device)
end = time.time() + float(os.environ.get("GPU_TRAIN_SECONDS", "4"))
step = 0
while time.time() < end:
    loss = model(x).square().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    step += 1
    if step % 20 == 0:
        ddprun_tracking.log({"loss": loss.item()}, step=step)
t = torch.ones(1, device=device)
dist.all_reduce(t)
print(f"rank {dist.get_rank()} steps {step} all_reduce {t.item():.0f} on {torch.cuda.get_device_name()}",
      flush=True)
dist.destroy_process_group()
