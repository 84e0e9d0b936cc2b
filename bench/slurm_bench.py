#!/usr/bin/env python3
"""Time from `srun` to every worker running, 2 Slurm nodes x 2 workers, in one run on
one real Slurm cluster (tests/slurm/slurm_cluster.py: slurmctld and two slurmd here):

  - ddprun:   srun -N2 --ntasks-per-node=1 ddprun --nproc_per_node=2 worker.py
  - torchrun: the usual recipe, a wrapper script per node that expands the node list
              with scontrol, takes the first node's address, derives a port from the
              job id and runs torchrun --nnodes --node_rank --master_addr --master_port
  - floor:    srun -N2 --ntasks-per-node=2 python3 worker.py (Slurm starting the four
              workers itself, no launcher: nothing can be faster)

    sudo /usr/bin/python3 bench/slurm_bench.py [--ddprun build/launcher/ddprun] [--repeat 5]

"Running" is the first line of the worker's own code (after the interpreter started);
"done" is srun's exit with the workers finished. Median over the repetitions.
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "slurm"))
from slurm_cluster import SlurmCluster  # noqa: E402

TORCHRUN = os.path.join(ROOT, "tests", "torch", "torchrun_compat.py")
WORKER = """import os, sys, time
with open(os.path.join(sys.argv[1], "start." + os.environ.get("RANK", os.environ.get("SLURM_PROCID", "?"))), "w") as f:
    f.write(repr(time.time()))
"""
RECIPE = """#!/bin/sh
# The usual torchrun-on-Slurm wrapper: everything ddprun derives by itself.
head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
addr=$(getent hosts "$head" | cut -d' ' -f1)
[ -n "$addr" ] || addr=$(scontrol show node "$head" | grep -o 'NodeAddr=[^ ]*' | cut -d= -f2)
exec /usr/bin/python3 {torchrun} --nnodes="$SLURM_NNODES" --node_rank="$SLURM_NODEID" \\
  --master_addr="$addr" --master_port=$((20000 + SLURM_JOB_ID % 10000)) \\
  --nproc_per_node=2 --monitor_interval=0.1 {worker} "$@"
"""


def measure(cluster, argv, workdir, env, repeat):
    """Median (to every worker running, to srun's exit) in seconds."""
    running, done = [], []
    for i in range(repeat):
        out = os.path.join(workdir, f"run{time.monotonic_ns()}")
        os.makedirs(out)
        start = time.time()
        r = cluster.run([*argv, out], env=env, cwd=workdir, timeout=300)
        end = time.time()
        if r.returncode != 0:
            sys.exit(f"failed ({r.returncode}): {' '.join(argv)}\n{r.stderr}")
        starts = [float(open(p).read()) for p in glob.glob(os.path.join(out, "start.*"))]
        if len(starts) != 4:
            sys.exit(f"{len(starts)} workers started, not 4: {' '.join(argv)}\n{r.stderr}")
        running.append(max(starts) - start)
        done.append(end - start)
    return statistics.median(running), statistics.median(done)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddprun", default=os.path.join(ROOT, "build", "launcher", "ddprun"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ddprun_slurm_bench_")
    worker = os.path.join(work, "worker.py")
    with open(worker, "w") as f:
        f.write(WORKER)
    recipe = os.path.join(work, "torchrun_recipe.sh")
    with open(recipe, "w") as f:
        f.write(RECIPE.format(torchrun=TORCHRUN, worker=worker))
    os.chmod(recipe, 0o755)
    with SlurmCluster() as cluster:
        env = dict(cluster.env, PYTHON_EXEC="/usr/bin/python3", OMP_NUM_THREADS="1")
        srun1 = ["srun", "-N2", "--ntasks-per-node=1"]
        cases = [
            ("ddprun", [*srun1, args.ddprun, "--no_tracking", "--nproc_per_node=2", worker]),
            ("ddprun, with its shared run", [*srun1, args.ddprun, "--nproc_per_node=2", worker]),
            ("torchrun 1.13 + wrapper script", [*srun1, recipe]),
            ("floor: srun starts the 4 workers", ["srun", "-N2", "--ntasks-per-node=2",
                                                  "/usr/bin/python3", worker]),
        ]
        print("| 2 Slurm nodes x 2 workers | srun to all running (median) | srun to exit | "
              "running: it / ddprun |")
        print("|---|---|---|---|")
        base = None
        for label, argv in cases:
            repeat = args.repeat if "torchrun" not in label else max(2, args.repeat // 2)
            running, done = measure(cluster, argv, work, env, repeat)
            base = base or running
            print(f"| {label} | {running * 1000:.0f} ms | {done * 1000:.0f} ms | "
                  f"x{running / base:.2f} |", flush=True)


if __name__ == "__main__":
    main()
