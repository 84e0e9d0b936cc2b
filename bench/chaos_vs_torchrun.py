#!/usr/bin/env python3
"""Faults from the README's reliability table, injected into ddprun and into torch 1.13's
torchrun side by side, so that the table's torchrun column is measured, not recalled.

    /usr/bin/python3 bench/chaos_vs_torchrun.py [--ddprun build/launcher/ddprun]

For each launcher, a single node with two workers (`sleep`, each with an argument unique
to the run so that its processes can be found):
- SIGKILL of the launcher: how many workers are still running a second later;
- SIGTERM to the launcher: its exit status and how long until no worker is left;
- the store of a single-node job: the addresses it listens on (`ss`).
"""
import argparse
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TORCHRUN = [sys.executable, os.path.join(ROOT, "tests", "torch", "torchrun_compat.py")]


def workers(tag):
    r = subprocess.run(["pgrep", "-f", f"sleep {tag}"], capture_output=True, text=True)
    return [int(p) for p in r.stdout.split()]


def start(launcher, tag):
    cmd = [*launcher, "--standalone", "--nproc_per_node=2", "--no_python", "/bin/sleep", tag]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    deadline = time.monotonic() + 60
    while len(workers(tag)) < 2:
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit(f"{cmd[0]}: the workers did not start")
        time.sleep(0.05)
    return proc


def gone_within(tag, limit):
    start_t = time.monotonic()
    while workers(tag) and time.monotonic() - start_t < limit:
        time.sleep(0.02)
    return time.monotonic() - start_t if not workers(tag) else None


def listening(pid):
    r = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True)
    return sorted({line.split()[3] for line in r.stdout.splitlines() if f"pid={pid}," in line})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddprun", default=os.path.join(ROOT, "build", "launcher", "ddprun"))
    args = ap.parse_args()
    launchers = [("ddprun", [args.ddprun]), ("torchrun 1.13", TORCHRUN)]
    print("| fault | launcher | outcome |")
    print("|---|---|---|")
    for n, (name, launcher) in enumerate(launchers):
        tag = f"{3600 + n}.{os.getpid()}"
        proc = start(launcher, tag)
        proc.kill()
        proc.wait()
        time.sleep(1.0)
        left = workers(tag)
        print(f"| SIGKILL of the launcher | {name} | {len(left)} of 2 workers still running "
              f"1 s later |", flush=True)
        for pid in left:
            os.kill(pid, signal.SIGKILL)

        tag = f"{3700 + n}.{os.getpid()}"
        proc = start(launcher, tag)
        addresses = listening(proc.pid)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        took = gone_within(tag, 30)
        print(f"| SIGTERM to the launcher | {name} | exit status {code}; workers gone "
              f"{'after %.0f ms' % ((time.monotonic() - t0) * 1000) if took is not None else 'never (30 s)'} |",
              flush=True)
        print(f"| the single-node store | {name} | listens on {', '.join(addresses) or 'nothing'} |",
              flush=True)
        for pid in workers(tag):
            os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
