#!/usr/bin/env python3
"""ddprun vs torchrun and vs a shell's floor, side by side in one run: trivial
launch, 512 workers, NUMA binding's cost, one restart, memory.

    /usr/bin/python3 bench/launch_bench.py [--ddprun build/launcher/ddprun] [--repeat 10]
        [--wide 512] [--no-torch]

Prints a Markdown table: median wall time over the repetitions, peak RSS of the
launcher and the ratios to ddprun. The floor is the same N programs started by a
shell (`sh -c 'P & P & ... wait'`): no launcher can start them faster. Peak RSS is GNU time's %M (ru_maxrss of the
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


def floor(n, program):
    """A shell starting `program` n times in the background and waiting for all."""
    return ["/bin/sh", "-c", f"{program} & " * n + "wait"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddprun", default=os.path.join(ROOT, "build", "launcher", "ddprun"))
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--torch-repeat", type=int, default=3)
    ap.add_argument("--wide", type=int, default=512, help="workers in the wide case")
    ap.add_argument("--no-torch", action="store_true", help="skip torchrun's rows")
    args = ap.parse_args()
    d, t = args.ddprun, TORCHRUN
    n = args.wide
    trivial = ["--standalone", "--nproc_per_node=4", "--no_python", "/bin/true"]
    wide = ["--standalone", f"--nproc_per_node={n}", "--no_python", "/bin/sleep", "1"]
    restart = ["--standalone", "--nproc_per_node=2", "--max_restarts=1", "--no_python", *FAIL_ONCE]
    torch = [] if args.no_torch else None
    cases = [
        ("trivial launch, 4 x /bin/true", [d, *trivial], args.repeat,
         [("shell floor", floor(4, "/bin/true"), args.repeat)] + (torch if torch is not None else
         [("torchrun (default)", [*t, *trivial], args.torch_repeat),
          ("torchrun --monitor_interval=0.1", [*t, "--monitor_interval=0.1", *trivial],
           args.torch_repeat)])),
        (f"{n} x /bin/sleep 1 on one node", [d, *wide], max(3, args.repeat // 3),
         [("shell floor", floor(n, "/bin/sleep 1"), max(3, args.repeat // 3))]),
        ("4 x /bin/true, --numa_binding=node", [d, "--numa_binding=node", *trivial],
         args.repeat, [("ddprun without binding", [d, *trivial], args.repeat)]),
        ("rank 1 fails once, 1 restart", [d, *restart], args.repeat,
         torch if torch is not None else
         [("torchrun --monitor_interval=0.1", [*t, "--monitor_interval=0.1", *restart],
           args.torch_repeat)]),
    ]
    print("| case | launcher | wall (median) | peak RSS | it / ddprun |")
    print("|---|---|---|---|---|")
    for name, ours, repeat, refs in cases:
        wall, rss = measure(ours, repeat)
        print(f"| {name} | ddprun | {wall * 1000:.1f} ms | {rss:.1f} MiB | 1 |", flush=True)
        for label, cmd, ref_repeat in refs:
            twall, trss = measure(cmd, ref_repeat)
            ratio = f"time x{twall / wall:.2f}" if twall < 2 * wall else f"time x{twall / wall:.0f}"
            print(f"| {name} | {label} | {twall * 1000:.1f} ms | {trss:.1f} MiB | "
                  f"{ratio}, memory x{trss / rss:.2f} |", flush=True)


if __name__ == "__main__":
    main()
