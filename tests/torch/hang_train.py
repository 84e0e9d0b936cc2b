"""A gloo job in which one rank stops making progress, for ddprun's hang detection.

    hang_train.py --hang-rank R --hang-step S [--hang-attempts N] [--steps K]
                  [--step-time T] [--section-sleep SECONDS]

Rank R sleeps "forever" in load_batch() at step S of attempts < N while the others
block in all_reduce; every step is logged to the shared run (progress).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist

import ddprun_tracking as run

p = argparse.ArgumentParser()
p.add_argument("--hang-rank", type=int, default=-1)
p.add_argument("--hang-step", type=int, default=5)
p.add_argument("--hang-attempts", type=int, default=1)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--step-time", type=float, default=0.1)
p.add_argument("--section-sleep", type=float, default=0)
args = p.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])


def load_batch(step):
    if rank == args.hang_rank and step == args.hang_step and attempt < args.hang_attempts:
        time.sleep(3600)
    time.sleep(args.step_time)
    return torch.ones(4) * step


for step in range(args.steps):
    batch = load_batch(step)
    dist.all_reduce(batch)
    run.log({"sum": float(batch[0])}, step=step)
    if args.section_sleep and step == 2:
        # A long quiet phase that every rank knows about (rank 0 "checkpoints").
        with run.section("checkpoint", timeout=60):
            if rank == 0:
                time.sleep(args.section_sleep)
            dist.barrier()
print(f"rank {rank} finished attempt {attempt}", flush=True)
dist.destroy_process_group()
