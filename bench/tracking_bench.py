#!/usr/bin/env python3
"""Tracking benchmark: client costs, ingestion rate, and how long the run takes to be
finished after workers that logged 1M points exit.

    /usr/bin/python3 bench/tracking_bench.py [--ddprun build/launcher/ddprun]
"""
import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.join(ROOT, "build")


def python_client_cost():
    d = tempfile.mkdtemp()
    env = dict(os.environ, DDPRUN_TRACKING_STREAM=os.path.join(d, "s.jsonl"))
    code = ("import sys, timeit; sys.path.insert(0, %r); import ddprun_tracking as t\n"
            "n = 200000\n"
            "s = timeit.timeit(lambda: t.log({'loss': 0.5}, step=1), number=n)\n"
            "t.flush(); print(s / n * 1e6)") % os.path.join(ROOT, "tracking", "python")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout)


def finish_time(ddprun, points):
    d = tempfile.mkdtemp()
    script = os.path.join(d, "w.py")
    with open(script, "w") as f:
        f.write("import ddprun_tracking as t\n"
                f"for i in range({points // 10}):\n"
                "    t.log({'m%d' % k: i + k for k in range(10)}, step=i)\n")
    env = dict(os.environ, PYTHON_EXEC=sys.executable, OMP_NUM_THREADS="1")
    subprocess.run([ddprun, "--rdzv_id=bench", "--tracking_dir", d, script], env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = sqlite3.connect(os.path.join(d, "bench", "run.db"))
    exited = db.execute("SELECT MAX(wall) FROM events WHERE kind='worker_exited'").fetchone()[0]
    done = db.execute("SELECT wall FROM events WHERE kind='run_finished'").fetchone()[0]
    n = db.execute("SELECT COUNT(*) FROM metrics").fetchone()[0]
    return done - exited, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddprun", default=os.path.join(BUILD, "launcher", "ddprun"))
    args = ap.parse_args()
    print("| measure | figure | target |\n|---|---|---|")
    print(f"| Python client log() | {python_client_cost():.2f} us/call | <= 5 us |", flush=True)
    d = tempfile.mkdtemp()
    out = subprocess.run([os.path.join(BUILD, "bench", "ddprun_tracking_client_bench")],
                         env=dict(os.environ, DDPRUN_TRACKING_STREAM=os.path.join(d, "s.jsonl")),
                         capture_output=True, text=True, check=True).stdout.strip()
    print(out + " <= 200 ns |" if out else "| C++ client | failed | |")
    out = subprocess.run([os.path.join(BUILD, "bench", "ddprun_tracking_bench")],
                         capture_output=True, text=True, check=True).stdout.strip()
    print(out + " >= 1M points/s |")
    seconds, n = finish_time(args.ddprun, 1_000_000)
    print(f"| last worker exit to run finished | {seconds * 1000:.0f} ms ({n} points) | <= 250 ms |")


if __name__ == "__main__":
    main()
