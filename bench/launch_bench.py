#!/usr/bin/env python3
"""ddprun vs torchrun and vs a shell's floor, side by side in one run: trivial
launch, 512 workers, NUMA binding's cost, one restart, memory.

    /usr/bin/python3 bench/launch_bench.py [--ddprun build/launcher/ddprun] [--repeat 10]
        [--wide 512] [--no-torch]

Prints a Markdown table: median wall time over the repetitions, peak RSS of the
launcher and the ratios to ddprun. ddprun and the references run as often as it (the
floor) take turns, after one untimed run each. The floor is the same N programs started
by a shell (`sh -c 'P & P & ... wait'`): no launcher can start them faster. Each run is
timed by a small C program of the build's (bench/timed_run.cc, `scripts/build.sh` makes
it): from its fork to the reaping, not counting its own start (GNU time's would add
~1 ms to every row), and peak RSS is ru_maxrss of the command and what it reaped (with
/bin/true workers, the launcher itself); a forked Python parent's own pages would count
as the child's high-water mark.
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TIMED_RUN = os.path.join(ROOT, "build", "bench", "ddprun_timed_run")
sys.path.insert(0, HERE)
from torch_refs import torchruns  # noqa: E402
FAIL_ONCE = ["/bin/sh", "-c",
             '[ "$RANK" != 1 ] || [ "$TORCHELASTIC_RESTART_COUNT" != 0 ] || exit 1']


def run_once(cmd, env):
    """Wall seconds and peak RSS (MiB) of one run, as bench/timed_run.cc takes them."""
    proc = subprocess.run([TIMED_RUN, *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, env=env)
    if proc.returncode != 0:
        sys.exit(f"benchmark command failed ({proc.returncode}): {' '.join(cmd)}\n"
                 f"{proc.stderr}")
    wall, rss_kib = proc.stdout.split()
    return float(wall), int(rss_kib) / 1024


def measure(cmds, repeat):
    """Median wall seconds and max peak RSS (MiB) of each command over `repeat` runs.
    After one untimed run of each, the commands take turns, so that whatever the
    machine does meanwhile weighs on all of them alike."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for cmd in cmds:
        run_once(cmd, env)
    walls = [[] for _ in cmds]
    rss = [[] for _ in cmds]
    for _ in range(repeat):
        for i, cmd in enumerate(cmds):
            wall, peak = run_once(cmd, env)
            walls[i].append(wall)
            rss[i].append(peak)
    return [(statistics.median(w), max(r)) for w, r in zip(walls, rss)]


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
    if not os.access(TIMED_RUN, os.X_OK):
        sys.exit(f"{TIMED_RUN} is missing: build first (scripts/build.sh)")
    d = args.ddprun
    n = args.wide
    trivial = ["--standalone", "--nproc_per_node=4", "--no_python", "/bin/true"]
    wide = ["--standalone", f"--nproc_per_node={n}", "--no_python", "/bin/sleep", "1"]
    restart = ["--standalone", "--nproc_per_node=2", "--max_restarts=1", "--no_python", *FAIL_ONCE]
    refs = [] if args.no_torch else torchruns()
    # Each torchrun at its default monitor interval (1.13: 5 s; 2.x: 0.1 s) and at 0.1 s.
    trivial_refs = [(f"{label} (default)", [*t, *trivial], args.torch_repeat)
                    for label, t in refs]
    trivial_refs += [(f"{label} --monitor_interval=0.1", [*t, "--monitor_interval=0.1", *trivial],
                      args.torch_repeat) for label, t in refs if label.endswith("1.13")]
    restart_refs = [(f"{label} --monitor_interval=0.1", [*t, "--monitor_interval=0.1", *restart],
                     args.torch_repeat) for label, t in refs]
    cases = [
        ("trivial launch, 4 x /bin/true", [d, *trivial], args.repeat,
         [("shell floor", floor(4, "/bin/true"), args.repeat)] + trivial_refs),
        (f"{n} x /bin/sleep 1 on one node", [d, *wide], max(3, args.repeat // 3),
         [("shell floor", floor(n, "/bin/sleep 1"), max(3, args.repeat // 3))]),
        ("4 x /bin/true, --numa_binding=node", [d, "--numa_binding=node", *trivial],
         args.repeat, [("ddprun without binding", [d, *trivial], args.repeat)]),
        ("rank 1 fails once, 1 restart", [d, *restart], args.repeat, restart_refs),
    ]
    print("| case | launcher | wall (median) | peak RSS | it / ddprun |")
    print("|---|---|---|---|---|")
    for name, ours, repeat, refs in cases:
        # References run as often as ddprun take turns with it; the others (torchrun,
        # fewer runs) come after.
        together = [cmd for _, cmd, ref_repeat in refs if ref_repeat == repeat]
        results = measure([ours, *together], repeat)
        wall, rss = results[0]
        measured = iter(results[1:])
        print(f"| {name} | ddprun | {wall * 1000:.1f} ms | {rss:.1f} MiB | 1 |", flush=True)
        for label, cmd, ref_repeat in refs:
            twall, trss = next(measured) if ref_repeat == repeat else measure([cmd], ref_repeat)[0]
            ratio = f"time x{twall / wall:.2f}" if twall < 2 * wall else f"time x{twall / wall:.0f}"
            print(f"| {name} | {label} | {twall * 1000:.1f} ms | {trss:.1f} MiB | "
                  f"{ratio}, memory x{trss / rss:.2f} |", flush=True)

if __name__ == "__main__":
    main()
