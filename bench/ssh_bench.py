#!/usr/bin/env python3
"""Time from the command to every worker running, 2 hosts x 2 workers over real ssh
(tests/ssh/ssh_hosts.py: an sshd on 127.0.0.2 and one on 127.0.0.3), in one run:

  - ddprun:    ddprun --hosts nodeA,nodeB --nproc_per_node=2 worker.py
  - torchrun:  DeepSpeed-style fan-out, a script that runs torchrun on each host over
               ssh (`ssh nodeA "cd DIR; torchrun --nnodes=2 --node_rank=0 ..." & ...; wait`)
  - ssh alone: `ssh nodeA true & ssh nodeB true; wait`, the connection setup both pay

    sudo /usr/bin/python3 bench/ssh_bench.py [--ddprun build/launcher/ddprun] [--repeat 5]

"Running" is the first line of the worker's code. Median over the repetitions.
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
sys.path.insert(0, os.path.join(ROOT, "tests", "ssh"))
from ssh_hosts import SshHosts  # noqa: E402

TORCHRUN = os.path.join(ROOT, "tests", "torch", "torchrun_compat.py")
WORKER = """import os, sys, time
with open(os.path.join(sys.argv[1], "start." + os.environ["RANK"]), "w") as f:
    f.write(repr(time.time()))
"""


def measure(argv, env, cwd, repeat, workers=4):
    """Median (to every worker running, to exit) in seconds; argv(out_dir) -> command."""
    running, done = [], []
    for _ in range(repeat):
        out = tempfile.mkdtemp(dir=cwd)
        start = time.time()
        r = subprocess.run(argv(out), env=env, cwd=cwd, capture_output=True, text=True,
                           timeout=300)
        end = time.time()
        if r.returncode != 0:
            sys.exit(f"failed ({r.returncode}): {argv(out)}\n{r.stderr}")
        starts = []
        for path in glob.glob(os.path.join(out, "start.*")):
            with open(path) as f:
                starts.append(float(f.read()))
        if len(starts) != workers:
            sys.exit(f"{len(starts)} workers started, not {workers}\n{r.stderr}")
        running.append(max(starts) - start if starts else end - start)
        done.append(end - start)
    return statistics.median(running), statistics.median(done)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddprun", default=os.path.join(ROOT, "build", "launcher", "ddprun"))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ddprun_ssh_bench_")
    worker = os.path.join(work, "worker.py")
    with open(worker, "w") as f:
        f.write(WORKER)
    env = dict(os.environ, PYTHON_EXEC="/usr/bin/python3", OMP_NUM_THREADS="1")
    with SshHosts() as hosts:
        ssh = " ".join(hosts.ssh_cmd)

        def torchrun_fanout(out):
            cmds = []
            for rank, host in enumerate(("nodeA", "nodeB")):
                remote = (f"cd {work} && OMP_NUM_THREADS=1 /usr/bin/python3 {TORCHRUN} "
                          f"--nnodes=2 --node_rank={rank} --master_addr=127.0.0.2 "
                          f"--master_port=29511 --nproc_per_node=2 --monitor_interval=0.1 "
                          f"{worker} {out}")
                cmds.append(f"{ssh} {host} '{remote}' &")
            return ["/bin/sh", "-c", " ".join(cmds) + " wait"]

        cases = [
            ("ddprun --hosts", lambda out: [args.ddprun, "--hosts=nodeA,nodeB", "--ssh_cmd", ssh,
                                            "--no_tracking", "--nproc_per_node=2", worker, out]),
            ("torchrun 1.13, ssh fan-out script", torchrun_fanout),
        ]
        print("| 2 hosts x 2 workers over ssh | command to all running (median) | to exit | "
              "running: it / ddprun |")
        print("|---|---|---|---|")
        base = None
        for label, argv in cases:
            repeat = args.repeat if "torchrun" not in label else max(2, args.repeat // 2)
            running, done = measure(argv, env, work, repeat)
            base = base or running
            print(f"| {label} | {running * 1000:.0f} ms | {done * 1000:.0f} ms | "
                  f"x{running / base:.2f} |", flush=True)
        _, floor = measure(lambda out: ["/bin/sh", "-c", f"{ssh} nodeA true & {ssh} nodeB true & "
                                        "wait"], env, work, args.repeat, workers=0)
        print(f"| ssh alone: both connections, `true` | | {floor * 1000:.0f} ms | |")


if __name__ == "__main__":
    main()
