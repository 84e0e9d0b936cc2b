#!/usr/bin/env python3
"""Tracking benchmark: client costs, ingestion rate, how long the run takes to be
finished after workers that logged 1M points exit, and how a job's run grows with its
ranks (N C++ ranks on one node, each logging 1,000 steps of 2 values: the whole job,
and its last exit to the run finished, with the growth exponent; every point must be
in run.db).

    /usr/bin/python3 bench/tracking_bench.py [--ddprun build/launcher/ddprun]
        [--ranks 64,256,1024]
"""
import argparse
import math
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
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


STEPS_PER_RANK = 1000  # each a log() of 2 values (tests/helpers/cpp_logger.cc)


def ranks_run(ddprun, ranks):
    """One node's job of `ranks` C++ ranks: seconds from its start to its end, from the
    last worker's exit to the run finished, and the points in run.db."""
    d = tempfile.mkdtemp()
    logger = os.path.join(BUILD, "tests", "ddprun_cpp_logger")
    start = time.monotonic()
    subprocess.run([ddprun, f"--nproc_per_node={ranks}", "--no_python", "--rdzv_id=ranks",
                    "--tracking_dir", d, logger, str(STEPS_PER_RANK)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    whole = time.monotonic() - start
    db = sqlite3.connect(os.path.join(d, "ranks", "run.db"))
    exited = db.execute("SELECT MAX(wall) FROM events WHERE kind='worker_exited'").fetchone()[0]
    done = db.execute("SELECT wall FROM events WHERE kind='run_finished'").fetchone()[0]
    n = db.execute("SELECT COUNT(*) FROM metrics").fetchone()[0]
    return whole, done - exited, n


def growth(sizes, costs):
    """k of the least-squares fit cost ~ size^k."""
    xs = [math.log(x) for x in sizes]
    ys = [math.log(max(c, 1e-6)) for c in costs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddprun", default=os.path.join(BUILD, "launcher", "ddprun"))
    ap.add_argument("--ranks", default="64,256,1024")
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
    sizes = [int(x) for x in args.ranks.split(",") if x]
    if sizes:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # a pipe pair per rank
        runs = [ranks_run(args.ddprun, r) for r in sizes]
        for r, (whole, tail, n) in zip(sizes, runs):
            expected = r * STEPS_PER_RANK * 2
            print(f"| {r} ranks, {STEPS_PER_RANK} steps each: the job | {whole:.2f} s; run "
                  f"finished {tail * 1000:.0f} ms after the last exit; {n} of {expected} "
                  f"points | every point kept |", flush=True)
        print(f"| growth with the ranks ({', '.join(map(str, sizes))}) | exponent "
              f"{growth(sizes, [w for w, _, _ in runs]):.2f} | <= 1.1 (linear) |")


if __name__ == "__main__":
    main()
