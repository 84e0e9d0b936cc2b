#!/usr/bin/env python3
"""Back to full size after a node dies: with a hot spare waiting, side by side with
torchrun's c10d backend, and without a spare (scale-down, then scale-up when a new node
arrives).

    /usr/bin/python3 bench/spare_bench.py [--ddprun build/launcher/ddprun] [--agents 8]
        [--repeat 3] [--torch-agents 8]

N agents on 127.0.0.1 (--nnodes=N-1:N, one /bin/sh worker each that writes when it
started), with every launcher's liveness set alike (rdzv_conf keep_alive_interval=1,
keep_alive_max_attempt=3: a node is judged dead after about 3 s without a heartbeat;
torchrun also gets --monitor_interval=0.1). One member dies: its agent and worker are
SIGKILLed together, as when a host goes down. Timed from that death:
- with a spare (an (N+1)th agent started once the job runs): until N workers of a new
  round have started;
- without a spare: until the N-1 survivors' workers have started again (scale-down),
  then, from the start of a replacement agent, until N workers have started (scale-up).
ddprun's figures are medians of --repeat runs, torchrun's one run each.
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from torch_refs import torchruns  # noqa: E402

# Each worker start leaves a file named for its time; the worker then sleeps.
WORKER = 'echo x > "$0/start.$(date +%s%N).$RANK.$$"; exec sleep 600'
CONF = "keep_alive_interval=1,keep_alive_max_attempt=3,last_call_timeout=1"
TIMEOUT = 120


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Job:
    def __init__(self, prefix, kind, n, conf=CONF):
        self.prefix, self.kind, self.n, self.conf = prefix, kind, n, conf
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="ddprun_spare_bench_")
        self.agents = []

    def start_agent(self, host):
        args = [f"--nnodes={self.n - 1}:{self.n}", "--nproc_per_node=1", "--rdzv_backend=c10d",
                f"--rdzv_endpoint=127.0.0.1:{self.port}", f"--rdzv_id=spare{self.port}",
                f"--rdzv_conf={self.conf + ',' if self.conf else ''}is_host={1 if host else 0}",
                "--max_restarts=3"]
        if self.kind == "ddprun":
            args += ["--local_addr=127.0.0.1", "--no_tracking"]
        else:
            args += ["--monitor_interval=0.1"]
        p = subprocess.Popen([*self.prefix, *args, "--no_python", "/bin/sh", "-c", WORKER, self.dir],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True, env=dict(os.environ, OMP_NUM_THREADS="1"))
        self.agents.append(p)
        if host:
            time.sleep(2.0 if self.kind == "torchrun" else 0.1)  # the host binds first
        return p

    def start_all(self):
        """Starts the N members, the first hosting the store; returns once all run."""
        for i in range(self.n):
            self.start_agent(i == 0)
        if self.wait_starts(0, self.n) is None:
            raise SystemExit(f"{self.kind}: {self.n} agents never ran")

    def starts_after(self, t):
        out = []
        for name in os.listdir(self.dir):
            if name.startswith("start."):
                at = int(name.split(".")[1]) / 1e9
                if at > t:
                    out.append(at)
        return sorted(out)

    def wait_starts(self, after, count):
        """Seconds from `after` until `count` workers started after it (None: never)."""
        deadline = time.time() + TIMEOUT
        while time.time() < deadline:
            s = self.starts_after(after)
            if len(s) >= count:
                return s[count - 1] - after
            time.sleep(0.02)
        return None

    def kill(self, p):
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        self.agents.remove(p)

    def close(self):
        for p in self.agents:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def full_size_with_spare(prefix, kind, n, conf=CONF):
    job = Job(prefix, kind, n, conf)
    try:
        job.start_all()
        job.start_agent(False)  # the spare
        time.sleep(3.0)  # it is waiting (and torchrun's agents have settled)
        died = time.time()
        job.kill(job.agents[-2])  # a member (not the host, whose store the job needs)
        return job.wait_starts(died, n)
    finally:
        job.close()


def without_spare(prefix, kind, n):
    job = Job(prefix, kind, n)
    try:
        job.start_all()
        time.sleep(1.0)
        died = time.time()
        job.kill(job.agents[-1])
        down = job.wait_starts(died, n - 1)
        arrived = time.time()
        job.start_agent(False)
        up = job.wait_starts(arrived, n)
        return down, up
    finally:
        job.close()


def ms(t):
    return "never (120 s)" if t is None else f"{t * 1000:.0f} ms"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddprun", default=os.path.join(ROOT, "build", "launcher", "ddprun"))
    ap.add_argument("--agents", type=int, default=8)
    ap.add_argument("--torch-agents", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--takeover-only", action="store_true",
                    help="ddprun's death-to-full-size with a spare, under default liveness "
                         "settings and under the tuned ones of the table (docs/node-health.md)")
    args = ap.parse_args()
    n = args.agents
    if args.takeover_only:
        for label, conf in (("default --rdzv_conf", ""), (CONF, CONF)):
            runs = [full_size_with_spare([args.ddprun], "ddprun", n, conf) for _ in range(args.repeat)]
            t = statistics.median([t for t in runs if t is not None] or [None])
            print(f"| {label} | {ms(t)} |", flush=True)
        return
    with_spare = [full_size_with_spare([args.ddprun], "ddprun", n) for _ in range(args.repeat)]
    plain = [without_spare([args.ddprun], "ddprun", n) for _ in range(args.repeat)]
    spare_t = statistics.median([t for t in with_spare if t is not None] or [None])
    down_t = statistics.median([d for d, _ in plain if d is not None] or [None])
    up_t = statistics.median([u for _, u in plain if u is not None] or [None])
    print(f"| {n} agents on loopback, one dies | death to full size, a spare waiting | "
          "death to running smaller (no spare) | new node's start to full size (no spare) |")
    print("|---|---|---|---|")
    print(f"| ddprun | {ms(spare_t)} | {ms(down_t)} | {ms(up_t)} |", flush=True)
    for label, torchrun in (torchruns() if args.torch_agents > 1 else []):
        t = full_size_with_spare(torchrun, "torchrun", args.torch_agents)
        down, up = without_spare(torchrun, "torchrun", args.torch_agents)
        size = "" if args.torch_agents == n else f" ({args.torch_agents} agents)"
        print(f"| {label}{size} | {ms(t)} | {ms(down)} | {ms(up)} |", flush=True)


if __name__ == "__main__":
    main()
