#!/usr/bin/env python3
"""The portable binary (-DDDPRUN_PORTABLE=ON) against the dynamically linked one, side
by side in one run: `ddprun --version` and a 4 x /bin/true launch, wall time and CPU
time (user + system of ddprun and what it reaped), and the files' sizes.

    /usr/bin/python3 bench/portable_bench.py [--dynamic build/launcher/ddprun]
        [--portable build-clang/launcher/ddprun] [--repeat 40]

Runs alternate between the two binaries, so that both see the same machine; the
figures are medians. For the 128-agent rendezvous with each binary, run
bench/rendezvous_bench.py --ddprun PATH once per binary.
"""
import argparse
import os
import statistics
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def once(cmd):
    """Wall seconds and CPU seconds of one run of `cmd` (its own and its children's)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, OMP_NUM_THREADS="1"))
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"benchmark command failed: {' '.join(cmd)}")
    return wall, usage.ru_utime + usage.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dynamic", default=os.path.join(ROOT, "build", "launcher", "ddprun"))
    ap.add_argument("--portable", default=os.path.join(ROOT, "build-clang", "launcher", "ddprun"))
    ap.add_argument("--repeat", type=int, default=40)
    args = ap.parse_args()
    binaries = [("dynamic", args.dynamic), ("portable", args.portable)]
    cases = [("--version", ["--version"]),
             ("4 x /bin/true", ["--standalone", "--nproc_per_node=4", "--no_python", "/bin/true"]),
             ("4 x /bin/true, --no_tracking",
              ["--standalone", "--nproc_per_node=4", "--no_tracking", "--no_python", "/bin/true"])]
    print("| case | binary | wall (median) | CPU (median) | wall / dynamic |")
    print("|---|---|---|---|---|")
    for name, flags in cases:
        samples = {label: [] for label, _ in binaries}
        for _ in range(args.repeat):
            for label, path in binaries:
                samples[label].append(once([path, *flags]))
        base = statistics.median(w for w, _ in samples["dynamic"])
        for label, _ in binaries:
            wall = statistics.median(w for w, _ in samples[label])
            cpu = statistics.median(c for _, c in samples[label])
            print(f"| {name} | {label} | {wall * 1000:.2f} ms | {cpu * 1000:.2f} ms | "
                  f"x{wall / base:.2f} |", flush=True)
    for label, path in binaries:
        print(f"\n{label}: {os.path.getsize(path) / 2**20:.1f} MiB ({path})", end="")
    print()


if __name__ == "__main__":
    main()
