#!/usr/bin/env python3
"""Dashboard benchmark: a 1M-point run served by `ddprun runs serve`, and whether an
open dashboard slows a job's ingestion.

    /usr/bin/python3 bench/dashboard_bench.py [--ddprun build/launcher/ddprun]

Prints a table:
- time to first byte and to the last byte of a chart's data (the series downsampled
  for the chart, and every point with full=1), and of the run's page;
- headless Chromium from its start to a DOM holding the drawn chart, beside the same
  Chromium on an empty page (its own start-up);
- the job's ingestion rate (points stored per second, from the first point written to
  the run finished) alone, and with a dashboard polling the run 4 times a second.
"""
import argparse
import http.client
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUILD = os.path.join(ROOT, "build")
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
POINTS = 1_000_000


def logger_job(ddprun, tracking_dir, run_id, steps):
    """A C++ worker logging 2 points per step as fast as it can; returns the run's db."""
    logger = os.path.join(BUILD, "tests", "ddprun_cpp_logger")
    subprocess.run([ddprun, f"--rdzv_id={run_id}", "--tracking_dir", tracking_dir,
                    "--no_python", logger, str(steps)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return os.path.join(tracking_dir, run_id, "run.db")


def ingestion_rate(db_path):
    db = sqlite3.connect(db_path)
    first = db.execute("SELECT MIN(wall) FROM metrics").fetchone()[0]
    done = db.execute("SELECT wall FROM events WHERE kind='run_finished'").fetchone()[0]
    n = db.execute("SELECT COUNT(*) FROM metrics").fetchone()[0]
    db.close()
    return n / (done - first), n


def timed_get(port, path):
    """(seconds to the first byte, seconds to the last, bytes)."""
    start = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("GET", path)
    r = c.getresponse()
    first = r.read(1)
    ttfb = time.perf_counter() - start
    body = first + r.read()
    total = time.perf_counter() - start
    c.close()
    assert r.status == 200, (path, r.status, body[:200])
    return ttfb, total, len(body)


def chromium(url, budget_ms):
    start = time.perf_counter()
    profile = tempfile.mkdtemp(prefix="ddprun_bench_chromium_")
    r = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                        "--disable-background-networking", "--disable-component-update",
                        "--disable-sync", f"--user-data-dir={profile}",
                        f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
                       capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - start
    shutil.rmtree(profile, ignore_errors=True)
    return seconds, r.stdout


def serve(ddprun, tracking_dir):
    p = subprocess.Popen([ddprun, "runs", "serve", "--tracking_dir", tracking_dir, "--port", "0"],
                         stdout=subprocess.PIPE, text=True)
    port = int(re.search(r":(\d+)/", p.stdout.readline()).group(1))
    return p, port


def poll(port, run_id, stop):
    paths = [f"/api/runs/{run_id}", f"/api/runs/{run_id}/metrics?key=loss", "/api/runs"]
    while not stop.is_set():
        for path in paths:
            try:
                timed_get(port, path)
            except (AssertionError, OSError, http.client.HTTPException):
                pass  # the run is not there yet
        time.sleep(0.25)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddprun", default=os.path.join(BUILD, "launcher", "ddprun"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ddprun_dashboard_bench_")
    runs = os.path.join(tmp, "runs")
    print("| measure | figure |\n|---|---|")
    try:
        alone, n = ingestion_rate(logger_job(args.ddprun, runs, "alone", POINTS // 2))
        server, port = serve(args.ddprun, runs)
        stop = threading.Event()
        poller = threading.Thread(target=poll, args=(port, "watched", stop))
        poller.start()
        watched, _ = ingestion_rate(logger_job(args.ddprun, runs, "watched", POINTS // 2))
        stop.set()
        poller.join()
        print(f"| ingestion, no dashboard | {alone / 1e6:.2f}M points/s ({n} points) |")
        print(f"| ingestion, dashboard polling 4/s | {watched / 1e6:.2f}M points/s "
              f"(x{watched / alone:.2f}) |")
        # "alone" holds 1M points: 500k of "loss", 500k of "rank".
        for label, path in [("run page", "/run/alone"), ("run JSON", "/api/runs/alone"),
                            ("chart data (1 key, 500k points, downsampled)",
                             "/api/runs/alone/metrics?key=loss"),
                            ("every point of a key (500k, full=1)",
                             "/api/runs/alone/metrics?key=loss&full=1")]:
            ttfb, total, size = timed_get(port, path)
            print(f"| {label}: first byte / last byte | {ttfb * 1000:.0f} ms / "
                  f"{total * 1000:.0f} ms ({size / 1024:.0f} KiB) |", flush=True)
        if os.path.exists(CHROMIUM):
            empty, _ = chromium("about:blank", 100)
            drawn, dom = chromium(f"http://127.0.0.1:{port}/run/alone", 5000)
            assert 'data-metric="loss"' in dom and "<canvas" in dom, "no chart drawn"
            print(f"| headless Chromium to a drawn 1M-point run page | {drawn:.2f} s "
                  f"(its start-up alone: {empty:.2f} s) |")
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
