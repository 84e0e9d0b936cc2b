"""Chaos with real PyTorch: a deterministic training job (chaos_train.py) under ddprun,
two nodes of two ranks on loopback over c10d with a hot spare, and faults injected in
the orders clusters produce them. Shared by the CI case (test_chaos.py) and the soak
(bench/chaos_soak.py).

Run with /usr/bin/python3 (Debian's torch 1.13); DDPRUN names the binary.
"""
import os
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TRAIN = os.path.join(HERE, "chaos_train.py")
DDPRUN = os.environ.get("DDPRUN", os.path.join(ROOT, "build", "launcher", "ddprun"))
PYTHON = "/usr/bin/python3"

sys.path.insert(0, os.path.join(ROOT, "tests", "helpers"))
from free_port import free_port  # noqa: E402
from processes import alive  # noqa: E402,F401  (the tests' and the soak's too)

# Liveness: 0.5 s x 4 = 2 s of silence is a dead node (the job).
CONF = "keep_alive_interval=0.5,keep_alive_max_attempt=4,last_call_timeout=1,join_timeout=120"


class Agent:
    """One ddprun agent: its process, and its stderr lines with when each came."""

    def __init__(self, name, args, env):
        self.name = name
        self.lines = []  # (monotonic time, line)
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True, env=env)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    def err(self):
        return "\n".join(l for _, l in self.lines)

    def said(self, text):
        return any(text in l for _, l in self.lines)

    def wait(self, timeout):
        code = self.proc.wait(timeout=timeout)
        self.reader.join(timeout=5)
        self.proc.stderr.close()
        return code


class Job:
    """The job in `workdir`: agents named a (hosts the store), b and s (started after
    the others train, so that it waits as a spare)."""

    def __init__(self, workdir, steps, step_time, max_restarts=20, hang_timeout=3,
                 extra=()):
        self.dir = workdir
        self.steps = steps
        self.step_time = step_time
        self.endpoint = f"127.0.0.1:{free_port()}"
        self.run_id = f"chaos{free_port()}"
        self.flags = ["--nnodes=2", "--nproc_per_node=2", "--rdzv_backend=c10d",
                      f"--rdzv_endpoint={self.endpoint}", f"--rdzv_id={self.run_id}",
                      f"--max_restarts={max_restarts}",
                      f"--hang_timeout={hang_timeout}", "--hang_initial_timeout=20",
                      "--grace_period=3", "--tracking_dir", os.path.join(workdir, "runs"),
                      *extra]
        self.agents = {}

    def start(self, name, address, is_host=False):
        env = dict(os.environ, PYTHON_EXEC=PYTHON, OMP_NUM_THREADS="1", CHAOS_NODE=name)
        conf = ["--rdzv_conf=" + CONF + (",is_host=1" if is_host else ",is_host=0")]
        args = [DDPRUN, *self.flags, *conf, f"--local_addr={address}", TRAIN, self.dir,
                "--steps", str(self.steps), "--step-time", str(self.step_time)]
        self.agents[name] = Agent(name, args, env)
        return self.agents[name]

    def workers(self):
        """The workers alive: (pid, rank, restart count, node)."""
        out = []
        pids = os.path.join(self.dir, "pids")
        for name in os.listdir(pids) if os.path.isdir(pids) else []:
            try:
                with open(os.path.join(pids, name)) as f:
                    pid, rank, restart, node = f.read().split()
            except (OSError, ValueError):
                continue
            if alive(int(pid)):
                out.append((int(pid), int(rank), int(restart), node))
        return out

    def every_pid(self):
        pids = os.path.join(self.dir, "pids")
        return [int(n) for n in os.listdir(pids)] if os.path.isdir(pids) else []

    def step(self):
        try:
            with open(os.path.join(self.dir, "step")) as f:
                return int(f.read())
        except (OSError, ValueError):
            return -1

    def restart_count(self):
        return max((w[2] for w in self.workers()), default=-1)

    def stop_all(self):
        for a in self.agents.values():
            if a.proc.poll() is None:
                a.proc.kill()
            a.proc.wait()
            a.reader.join(timeout=5)
            a.proc.stderr.close()
        for pid in self.every_pid():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


def eventually(cond, timeout, every=0.05):
    """processes.eventually, polled as finely as a timing needs (the soak's: 10 ms)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(every)
    return cond()


def training_again(job, restart_before, step_before, timeout):
    """Waits until workers of a later attempt have checkpointed a step; returns when, or
    None."""
    def again():
        return job.restart_count() > restart_before and job.step() > step_before
    if eventually(again, timeout, every=0.02):
        return time.monotonic()
    return None


def undisturbed_weights(workdir, steps):
    """The weights of the same job on one node with no fault (the same world size),
    fast (no sleep between steps)."""
    env = dict(os.environ, PYTHON_EXEC=PYTHON, OMP_NUM_THREADS="1")
    r = subprocess.run([DDPRUN, "--standalone", "--nproc_per_node=4", "--no_tracking", TRAIN,
                        workdir, "--steps", str(steps), "--step-time", "0"],
                       capture_output=True, text=True, env=env, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"the undisturbed job failed ({r.returncode}): {r.stderr}")
    return os.path.join(workdir, "weights.pt")


def same_weights(a, b):
    r = subprocess.run([PYTHON, "-c",
                        "import sys, torch\n"
                        "a = torch.load(sys.argv[1]); b = torch.load(sys.argv[2])\n"
                        "assert set(a) == set(b), (set(a), set(b))\n"
                        "bad = [k for k in a if not torch.equal(a[k], b[k])]\n"
                        "assert not bad, bad\n", a, b], capture_output=True, text=True)
    return r.returncode == 0, r.stderr


def runs_show(job):
    r = subprocess.run([DDPRUN, "runs", "show", job.run_id, "--tracking_dir",
                        os.path.join(job.dir, "runs")], capture_output=True, text=True)
    return r.stdout + r.stderr


def shown_count(text, label):
    for line in text.splitlines():
        if line.startswith(label + ":"):
            return int(line.split(":")[1].split()[0])
    return 0


# The faults, each a function of the job that returns what it did (or None where it
# found nothing to do it to).

def kill_worker(job, sig=signal.SIGKILL, node=None):
    ws = [w for w in job.workers() if node is None or w[3] == node]
    if not ws:
        return None
    pid, rank, restart, where = ws[len(ws) // 2]
    os.kill(pid, sig)
    return f"{signal.Signals(sig).name} of rank {rank} (pid {pid}, node {where})"


def stop_worker(job):
    ws = job.workers()
    if not ws:
        return None
    pid, rank, restart, where = ws[-1]
    os.kill(pid, signal.SIGSTOP)
    return f"SIGSTOP of rank {rank} (pid {pid}, node {where})"


def kill_agent(job, name):
    a = job.agents[name]
    if a.proc.poll() is not None:
        return None
    a.proc.kill()
    return f"SIGKILL of node {name}'s agent"
