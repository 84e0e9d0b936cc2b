#!/usr/bin/env python3
"""Hang detection's costs, side by side: heartbeat() against log() in Python and C++,
with detection on (a progress page mapped) and off; the time from a rank's last
progress to the hang being reported (the timeout, plus ddprun's share); and from the
report to the restarted workers.

    /usr/bin/python3 bench/hang_bench.py [--build build] [--timeout 2] [--repeat 3]

Prints a Markdown table.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

PY_CALLS = r"""
import sys, time
import ddprun_tracking as run
n = int(sys.argv[1])
t = time.perf_counter()
for i in range(n):
    run.heartbeat()
beat = (time.perf_counter() - t) / n * 1e9
t = time.perf_counter()
for i in range(n):
    run.log({"loss": 0.5}, step=i)
run.flush()
log = (time.perf_counter() - t) / n * 1e9
print(f"{beat:.1f} {log:.1f}")
"""

# Logs a step every 0.1 s; rank 1 stops after step 5 of attempt 0 (printing when it
# last made progress); every worker prints when it starts.
PY_HANG = r"""
import os, time
import ddprun_tracking as run
rank, attempt = int(os.environ["RANK"]), int(os.environ["TORCHELASTIC_RESTART_COUNT"])
print(f"START {attempt} {time.time():.6f}", flush=True)
for step in range(30 if attempt == 0 else 1):
    run.log({"x": step}, step=step)
    if rank == 1 and step == 5 and attempt == 0:
        print(f"LAST {time.time():.6f}", flush=True)
        time.sleep(3600)
    time.sleep(0.1)
"""


def page(path):
    with open(path, "wb") as f:
        f.write(b"DDPRPG01" + bytes(120))


def python_costs(detection, tmp, n):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "tracking", "python"),
               DDPRUN_TRACKING_STREAM=os.path.join(tmp, "py.jsonl"))
    if detection:
        page(os.path.join(tmp, "py.page"))
        env["DDPRUN_PROGRESS_FILE"] = os.path.join(tmp, "py.page")
    out = subprocess.run([sys.executable, "-c", PY_CALLS, str(n)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return [float(v) for v in out.split()]


def cpp_costs(detection, build, tmp):
    env = dict(os.environ, DDPRUN_TRACKING_STREAM=os.path.join(tmp, "cpp.jsonl"))
    out = subprocess.run([os.path.join(build, "bench", "ddprun_heartbeat_bench"),
                          "on" if detection else "off"], env=env, check=True,
                         capture_output=True, text=True).stdout
    return [float(v) for v in out.split()]


def run_to_report(cmd, tmp):
    """Runs ddprun to its end: when it reported the hang (wall time) and the workers'
    output."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHON_EXEC=sys.executable), cwd=tmp)
    reported = None
    for line in proc.stderr:
        if line.startswith("ddprun: hang:") and reported is None:
            reported = time.time()
    out, _ = proc.communicate()
    return reported, out


def hang_timings(build, timeout, tmp):
    """Seconds from the last progress to ddprun's report, and from the report to the
    restarted workers' start."""
    script = os.path.join(tmp, "hang.py")
    with open(script, "w") as f:
        f.write(PY_HANG)
    cmd = [os.path.join(build, "launcher", "ddprun"), "--nproc_per_node=2",
           f"--hang_timeout={timeout}", "--max_restarts=1", "--tee=3", "--log_dir",
           os.path.join(tmp, "logs"), "--tracking_dir", os.path.join(tmp, "runs"), script]
    reported, out = run_to_report(cmd, tmp)
    last = float(re.search(r"LAST (\S+)", out).group(1))
    restarted = min(float(t) for a, t in re.findall(r"START (\d) (\S+)", out) if a == "1")
    return reported - last, restarted - reported


def nccl_hang_timing(build, timeout, tmp):
    """Seconds from the last progress to ddprun's report when every rank keeps PyTorch's
    flight-recorder contract (tests/torch/nccl_rank.py; no GPU needed): the dumps are
    asked for and awaited before the report."""
    cmd = [os.path.join(build, "launcher", "ddprun"), "--nproc_per_node=4",
           f"--hang_timeout={timeout}", "--log_dir", os.path.join(tmp, "logs"),
           "--tracking_dir", os.path.join(tmp, "runs"),
           os.path.join(ROOT, "tests", "torch", "nccl_rank.py"), "--behind", "2"]
    reported, out = run_to_report(cmd, tmp)
    last = max(float(t) for t in re.findall(r"entered its collectives at (\S+)", out))
    return reported - last


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--timeout", type=float, default=2)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--calls", type=int, default=300_000)
    a = p.parse_args()
    tmp = tempfile.mkdtemp(prefix="ddprun_hang_bench_")
    print("| measure | detection off | detection on |")
    print("|---|---|---|")
    for name, costs in (("Python", lambda on: python_costs(on, tmp, a.calls)),
                        ("C++", lambda on: cpp_costs(on, a.build, tmp))):
        off, on = costs(False), costs(True)
        print(f"| {name} heartbeat() | {off[0]:.0f} ns | {on[0]:.0f} ns "
              f"(x{on[0] / on[1]:.2f} of a log()) |")
        print(f"| {name} log(), one value | {off[1]:.0f} ns | {on[1]:.0f} ns |")
    runs = [hang_timings(a.build, a.timeout, tempfile.mkdtemp(dir=tmp)) for _ in range(a.repeat)]
    detect = statistics.median(r[0] for r in runs)
    restart = statistics.median(r[1] for r in runs)
    print(f"| last progress -> hang reported (timeout {a.timeout:g} s) | | {detect:.2f} s "
          f"(timeout + {detect - a.timeout:.2f} s) |")
    print(f"| hang reported -> workers restarted | | {restart:.2f} s |")
    nccl = statistics.median(nccl_hang_timing(a.build, a.timeout, tempfile.mkdtemp(dir=tmp))
                             for _ in range(a.repeat))
    print(f"| last progress -> hang reported, 4 NCCL ranks' flight records awaited | | "
          f"{nccl:.2f} s (timeout + {nccl - a.timeout:.2f} s) |")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
