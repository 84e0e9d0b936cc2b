"""A deterministic data-parallel training job for chaos runs.

The same seed and world size give bit-identical weights, however often the job is
stopped and resumed: every rank's batch of step k is drawn from a generator seeded with
(seed, k, rank), each parameter's gradient is averaged by its own all-reduce (gloo), in
the parameters' order, and rank 0 checkpoints the model
and optimizer after every step (written whole, then renamed), so a restart resumes
after the last step checkpointed and repeats exactly what was lost.

Each worker writes "<pid> <rank> <restart count> <node>" to DIR/pids/<pid> (the chaos
harness kills and stops workers by these, and checks that none is left), rank 0 writes
the last step it checkpointed to DIR/step, and at the end DIR/weights.pt.

    chaos_train.py DIR --steps 60 --step-time 0.1
"""
import argparse
import os
import sys
import time


def write_atomically(text, path):
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


# Before torch is imported (a second or two): the harness sees the worker start.
if __name__ == "__main__" and len(sys.argv) > 1:
    os.makedirs(os.path.join(sys.argv[1], "pids"), exist_ok=True)
    write_atomically(f"{os.getpid()} {os.environ['RANK']} "
                     f"{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')} "
                     f"{os.environ.get('CHAOS_NODE', '?')}\n",
                     os.path.join(sys.argv[1], "pids", str(os.getpid())))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402


def save_atomically(obj, path):
    tmp = f"{path}.{os.getpid()}.tmp"
    torch.save(obj, tmp)
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--step-time", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1234)
    args = p.parse_args()
    rank = int(os.environ["RANK"])

    torch.manual_seed(args.seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://")
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    ckpt = os.path.join(args.dir, "ckpt.pt")
    first = 0
    if os.path.exists(ckpt):
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        first = state["step"] + 1
    # Not DDP: it re-lays its gradient buckets after its first step, and an all-reduce
    # sums each element in an order that depends on where it lies in the bucket, so a
    # job resumed at step k would sum step k otherwise than one that never stopped.
    world = dist.get_world_size()
    for step in range(first, args.steps):
        g = torch.Generator().manual_seed(args.seed * 1_000_003 + step * 1009 + rank)
        x = torch.randn(64, 16, generator=g)
        y = x.sum(dim=1, keepdim=True).sin()
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        for param in model.parameters():
            dist.all_reduce(param.grad)
            param.grad /= world
        optimizer.step()
        # Every rank is past this step's all-reduce before rank 0 records it.
        dist.barrier()
        if rank == 0:
            save_atomically({"step": step, "model": model.state_dict(),
                             "optimizer": optimizer.state_dict()}, ckpt)
            write_atomically(str(step), os.path.join(args.dir, "step"))
        print(f"step {step} loss {loss.item():.6f}", flush=True)
        time.sleep(args.step_time)
    if rank == 0:
        save_atomically(model.state_dict(), os.path.join(args.dir, "weights.pt"))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
