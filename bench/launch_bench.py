#!/usr/bin/env python3
"""ddprun vs torchrun, side by side in one run: trivial launch, one restart, memory.

    /usr/bin/python3 bench/launch_bench.py [--ddprun build/launcher/ddprun] [--repeat 10]

Prints a Markdown table: median wall time over the repetitions, peak RSS of the
launcher and the ratio torchrun / ddprun. Peak RSS is GNU time's %M (ru_maxrss of the
launcher and what it reaped; with /bin/true workers that is the launcher itself):
measured through a small C program because a forked Python parent's own pages would
count as the child's high-water mark.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TORCHRUN = [sys.executable, os.path.join(ROOT, "tests", "torch", "torchrun_compat.py")]
FAIL_ONCE = ["/bin/sh", "-c",
             '[ "$RANK" != 1 ] || [ "$TORCHELASTIC_RESTART_COUNT" != 0 ] || exit 1']


def measure(cmd, repeat):
    """Median wall seconds and max peak RSS (MiB) over `repeat` runs."""
    walls, rss = [], []
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, env=env)
        walls.append(time.perf_counter() - start)
        if proc.returncode != 0:
            sys.exit(f"benchmark command failed ({proc.returncode}): {' '.join(cmd)}\n"
                     f"{proc.stderr}")
        rss.append(int(proc.stderr.strip().splitlines()[-1]) / 1024)
    return statistics.median(walls), max(rss)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddprun", default=os.path.join(ROOT, "build", "launcher", "ddprun"))
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--torch-repeat", type=int, default=3)
    args = ap.parse_args()
    d, t = args.ddprun, TORCHRUN
    trivial = ["--standalone", "--nproc_per_node=4", "--no_python", "/bin/true"]
    restart = ["--standalone", "--nproc_per_node=2", "--max_restarts=1", "--no_python", *FAIL_ONCE]
    cases = [
        ("trivial launch, 4 x /bin/true", [d, *trivial],
         [("torchrun (default)", [*t, *trivial]),
          ("torchrun --monitor_interval=0.1", [*t, "--monitor_interval=0.1", *trivial])]),
        ("rank 1 fails once, 1 restart", [d, *restart],
         [("torchrun --monitor_interval=0.1", [*t, "--monitor_interval=0.1", *restart])]),
    ]
    print("| case | launcher | wall (median) | peak RSS | torchrun / ddprun |")
    print("|---|---|---|---|---|")
    for name, ours, refs in cases:
        wall, rss = measure(ours, args.repeat)
        print(f"| {name} | ddprun | {wall * 1000:.1f} ms | {rss:.1f} MiB | 1 |")
        for label, cmd in refs:
            twall, trss = measure(cmd, args.torch_repeat)
            print(f"| {name} | {label} | {twall * 1000:.0f} ms | {trss:.0f} MiB | "
                  f"time x{twall / wall:.0f}, memory x{trss / rss:.0f} |", flush=True)


if __name__ == "__main__":
    main()
