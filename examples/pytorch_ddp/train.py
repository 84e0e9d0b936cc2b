"""The classic DDP recipe, runnable under ddprun or torchrun unchanged.

env:// initialisation from RANK/WORLD_SIZE/LOCAL_RANK, gloo on CPU and nccl on GPU,
DistributedSampler with set_epoch, SyncBatchNorm on GPU, rank-0-only printing and
checkpointing after every epoch; a restarted job resumes from the checkpoint.
Deterministic: the same seed gives the same losses under any launcher.

    ddprun --standalone --nproc_per_node=2 examples/pytorch_ddp/train.py --epochs 3
"""
import argparse
import os
import signal

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

try:  # ddprun's shared run; absent under other launchers
    import ddprun_tracking as tracking
except ImportError:
    tracking = None


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--checkpoint", default="checkpoint.pt")
    p.add_argument("--fail-rank", type=int, default=-1,
                   help="this rank raises in the first attempt (to try restarts)")
    p.add_argument("--kill-rank", type=int, default=-1,
                   help="this rank is SIGKILLed after the first epoch is checkpointed, in the "
                        "first attempt (to try restarts that resume)")
    return p.parse_args()


def make_dataset():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 8, generator=g)
    w = torch.arange(1.0, 9.0).unsqueeze(1)
    y = x @ w + 0.1 * torch.randn(256, 1, generator=g)
    return TensorDataset(x, y)


@record
def main():
    args = parse_args()
    rank = int(os.environ["RANK"])
    local_rank = int(os.environ["LOCAL_RANK"])
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if use_cuda else "gloo", init_method="env://")
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")

    restart = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
    if rank == args.fail_rank and restart == 0:
        raise RuntimeError(f"rank {rank} fails on purpose in attempt {restart}")

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16),
                                torch.nn.ReLU(), torch.nn.Linear(16, 1))
    if use_cuda:
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = DDP(model.to(device), device_ids=[local_rank] if use_cuda else None)
    dataset = make_dataset()
    sampler = DistributedSampler(dataset, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = 0
    if os.path.exists(args.checkpoint):  # a restart: go on where the job was
        state = torch.load(args.checkpoint, map_location=device)
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["epochs"]
        if rank == 0:
            print(f"resuming from epoch {start}", flush=True)

    for epoch in range(start, args.epochs):
        if rank == args.kill_rank and restart == 0 and epoch > 0:
            os.kill(os.getpid(), signal.SIGKILL)  # dies mid-training, no error file
        sampler.set_epoch(epoch)
        total = torch.zeros(1, device=device)
        for x, y in loader:
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x.to(device)), y.to(device))
            loss.backward()
            opt.step()
            total += loss.detach()
        dist.all_reduce(total)
        mean = total.item() / (len(loader) * dist.get_world_size())
        if tracking:
            tracking.log({"loss": mean, "epoch": epoch}, step=epoch)
        if rank == 0:
            print(f"epoch {epoch} loss {mean:.6f}", flush=True)
            save(model, opt, epoch + 1, args.checkpoint)
        dist.barrier()  # nobody runs ahead of the checkpoint

    if rank == 0:
        print(f"saved {args.checkpoint}", flush=True)
    if tracking:
        tracking.summary({"epochs": args.epochs})
    # The DDP model goes first: when its reducer holds the group's last reference,
    # PyTorch 1.13 joins gloo's threads holding the GIL that one of them may still need
    # to free a tensor, and the rank never exits (a deadlock seen under load).
    del model
    dist.destroy_process_group()


def save(model, opt, epochs, path):
    """Writes the checkpoint whole or not at all (a kill mid-write keeps the last one)."""
    tmp = path + ".tmp"
    torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(),
                "epochs": epochs}, tmp)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
