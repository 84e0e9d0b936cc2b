"""A small gloo DDP job for straggler detection: rank DDPRUN_TEST_SLOW_RANK's data
loader sleeps DDPRUN_TEST_SLOW_SECONDS per batch (a starving loader), and it moves
itself into the cgroup DDPRUN_TEST_SLOW_CGROUP if given (a CPU quota); or no rank is
slow.
With --explicit the steps are marked by ddprun_tracking.step() (PyTorch 1.x has no
optimizer hooks); otherwise ddprun's own hook times PyTorch 2's optimizer steps."""
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

explicit = "--explicit" in sys.argv
steps = int(os.environ.get("DDPRUN_TEST_STEPS", "60"))
slow_rank = int(os.environ.get("DDPRUN_TEST_SLOW_RANK", "-1"))
slow_s = float(os.environ.get("DDPRUN_TEST_SLOW_SECONDS", "0.05"))


class Batches(torch.utils.data.Dataset):
    def __len__(self):
        return steps * 8

    def __getitem__(self, i):
        if dist.get_rank() == slow_rank and i % 8 == 0:
            time.sleep(slow_s)
        return torch.randn(32), torch.randn(1)


dist.init_process_group("gloo")
group = os.environ.get("DDPRUN_TEST_SLOW_CGROUP")
if group and dist.get_rank() == slow_rank:
    with open(os.path.join(group, "cgroup.procs"), "w") as f:
        f.write(str(os.getpid()))
torch.manual_seed(dist.get_rank())
model = DistributedDataParallel(torch.nn.Sequential(torch.nn.Linear(32, 256), torch.nn.ReLU(), torch.nn.Linear(256, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
loader = torch.utils.data.DataLoader(Batches(), batch_size=8)
if explicit:
    import ddprun_tracking as run
# Every rank works ~20 ms of its own per step (a model's compute, here spun). With a CPU
# quota in the job that work is this thread's CPU time, as a model's compute is, so the
# quota stretches it: spun on the wall clock, the spin ended on time however throttled
# and the quota fell on the rest of the step, or on none of it where a step's CPU fit in
# one of the quota's periods (the slow rank then scored 1.08). Otherwise it is wall time,
# so a loaded machine stretches no rank's spin.
clock = time.thread_time if group else time.perf_counter
for x, y in loader:
    end = clock() + 0.02
    while clock() < end:
        pass
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    if explicit:
        with run.waiting():
            loss.backward()
    else:
        loss.backward()
    opt.step()
    if explicit:
        run.step()
dist.destroy_process_group()
