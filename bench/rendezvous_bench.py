#!/usr/bin/env python3
"""Elastic rendezvous side by side in one run: ddprun's c10d backend, ddprun's etcd
backend (a real etcd started here) and torchrun's c10d backend.

    /usr/bin/python3 bench/rendezvous_bench.py [--ddprun build/launcher/ddprun]
        [--agents 2,8,32,128] [--torch-agents 2,8] [--repeat 5]

For N agents with one /bin/sh worker each (all on 127.0.0.1): the time from the last
agent's start until every worker has started (workers write a timestamp); ddprun's
columns are medians of --repeat runs, torchrun's one run. Then the
restart latency across 2 agents: from the death of a worker to the start of the last
worker of the next attempt. Each torchrun agent costs ~235 MiB and ~1 s of CPU, so its
counts stay small on this machine.
"""
import argparse
import fcntl
import os
import shutil
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
MARK = 'echo $(date +%s%N) > "$0/start.$RANK.$TORCHELASTIC_RESTART_COUNT"'
# In the first attempt rank 1 dies (recording when) while rank 0 keeps running; the
# next attempt succeeds. (If rank 0 finished first, torch 1.13's agent would sit in its
# exit barrier and the restart would never happen: ddprun restarts that node too.)
FAIL_ONCE = (MARK + '; if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then '
             'if [ "$RANK" = 1 ]; then echo $(date +%s%N) > "$0/died"; exit 1; fi; '
             'sleep 60; fi')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ETCD = None  # "127.0.0.1:port" of the etcd started for the etcd rows


class AgentsFailed(Exception):
    """An agent of a run exited non-zero, or the run did not finish: the others were
    stopped."""


class Etcd:
    """One etcd member on loopback, its data in a directory of its own and its log in a
    file beside it; stop() kills it and removes both (a member's data is 60 MiB), the
    log kept where asked."""

    def __init__(self):
        global ETCD
        self.dir = tempfile.mkdtemp(prefix="ddprun_bench_etcd_")
        fd, self.log = tempfile.mkstemp(prefix="ddprun_bench_etcd_", suffix=".log")
        client, peer = free_port(), free_port()
        self.proc = subprocess.Popen(
            ["etcd", "--name=b", f"--data-dir={self.dir}",
             f"--listen-client-urls=http://127.0.0.1:{client}",
             f"--advertise-client-urls=http://127.0.0.1:{client}",
             f"--listen-peer-urls=http://127.0.0.1:{peer}",
             f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
             f"--initial-cluster=b=http://127.0.0.1:{peer}"],
            stdout=subprocess.DEVNULL, stderr=fd)
        os.close(fd)
        ETCD = f"127.0.0.1:{client}"

    def gone(self):
        """Why etcd is no longer running (its exit status and last log line), or None."""
        code = self.proc.poll()
        if code is None:
            return None
        return f"etcd exited {code} (log kept: {self.log}): {last_words(self.log)}"

    def stop(self, keep_log=False):
        self.proc.kill()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
        if not keep_log:
            os.unlink(self.log)


def start_etcd():
    return Etcd()


def stop_agents(procs):
    """SIGTERM to every agent still running (each stops its workers), SIGKILL to any
    left after 30 s (1,024 agents stopping at once take over 10 s on 2 cores)."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    until = time.time() + 30
    for p in procs:
        try:
            p.wait(timeout=max(0.1, until - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def last_words(path):
    """The last line an agent wrote on stderr, for the error that names it."""
    try:
        with open(path, errors="replace") as f:
            lines = [line.strip() for line in f if line.strip()]
        return lines[-1] if lines else "(nothing on stderr)"
    except OSError:
        return "(no stderr)"


def launcher_args(kind, n, port, run_id, extra):
    if kind == "ddprun-etcd":
        return [f"--nnodes={n}", "--nproc_per_node=1", "--rdzv_backend=etcd",
                f"--rdzv_endpoint={ETCD}", f"--rdzv_id={run_id}", "--local_addr=127.0.0.1",
                *[e for e in extra if "is_host" not in e]]
    common = [f"--nnodes={n}", "--nproc_per_node=1", "--rdzv_backend=c10d",
              f"--rdzv_endpoint=127.0.0.1:{port}", f"--rdzv_id={run_id}", *extra]
    if kind == "ddprun":
        return common + ["--local_addr=127.0.0.1"]
    return common


def run_agents(cmd_prefix, kind, n, script, extra=(), while_running=None, started=None):
    """Starts n agents; returns (seconds from the last start to the last worker start,
    the marker directory, which the caller removes: done_with()). `started()`, if given,
    is called once the last agent has been started. `while_running(pids)`,
    if given, is called with the agents' pids once every worker has started (their
    script waits for the lock on the directory's "hold" file, held meanwhile: a wait
    that costs no CPU). Where an agent fails, or the run outlasts 600 s, the others are
    stopped and AgentsFailed names the first failure, and where every agent's stderr
    is kept (the directory stays for that)."""
    d = tempfile.mkdtemp(prefix="ddprun_rdzv_bench_")
    try:
        return run_agents_in(d, cmd_prefix, kind, n, script, extra, while_running, started), d
    except AgentsFailed as e:
        raise AgentsFailed(f"{e} (every agent's stderr: {d}/agents)") from None
    except BaseException:
        done_with(d)
        raise


def done_with(d):
    shutil.rmtree(d, ignore_errors=True)


def run_agents_in(d, cmd_prefix, kind, n, script, extra, while_running, started=None):
    port = free_port()
    run_id = f"bench{port}"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    procs = []
    last_start = 0.0
    if while_running:
        hold = open(os.path.join(d, "hold"), "w")
        fcntl.flock(hold, fcntl.LOCK_EX)
    errs = os.path.join(d, "agents")
    os.mkdir(errs)
    try:
        for i in range(n):
            conf = "is_host=1" if i == 0 else "is_host=0"
            args = launcher_args(kind, n, port, run_id, [f"--rdzv_conf={conf}", *extra])
            last_start = time.time()
            with open(os.path.join(errs, f"{i}.err"), "w") as err:
                procs.append(subprocess.Popen(
                    [*cmd_prefix, *args, "--no_python", "/bin/sh", "-c", script, d],
                    stdout=subprocess.DEVNULL, stderr=err, env=env))
            if i == 0:
                time.sleep(2.0 if kind == "torchrun" else 0.05)  # the host binds the endpoint first
                last_start = time.time()
        if started:
            started()
        until = time.time() + 600
        if while_running:
            while (sum(f.startswith("start.") for f in os.listdir(d)) < n and time.time() < until
                   and all(p.poll() in (None, 0) for p in procs)):
                time.sleep(0.1)
            try:
                if all(p.poll() in (None, 0) for p in procs):
                    while_running([p.pid for p in procs])
            finally:
                hold.close()  # the workers go on
        for i, p in enumerate(procs):
            try:
                p.wait(timeout=max(0.1, until - time.time()))
            except subprocess.TimeoutExpired:
                raise AgentsFailed(f"{kind} at {n} agents: not done within 600 s") from None
            if p.returncode != 0:
                raise AgentsFailed(f"{kind} at {n} agents: agent {i} exited {p.returncode}: "
                                   f"{last_words(os.path.join(errs, f'{i}.err'))}")
    finally:
        stop_agents(procs)
    starts = [int(open(os.path.join(d, f)).read()) / 1e9
              for f in os.listdir(d) if f.startswith("start.")]
    return max(starts) - last_start


def restart_latency(cmd_prefix, kind):
    _, d = run_agents(cmd_prefix, kind, 2, FAIL_ONCE, ["--max_restarts=1"])
    died = int(open(os.path.join(d, "died")).read()) / 1e9
    restarted = [int(open(os.path.join(d, f)).read()) / 1e9
                 for f in os.listdir(d) if f.startswith("start.") and f.endswith(".1")]
    done_with(d)
    return max(restarted) - died


def timed_agents(cmd_prefix, kind, n, script):
    """run_agents()'s seconds alone."""
    t, d = run_agents(cmd_prefix, kind, n, script)
    done_with(d)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddprun", default=os.path.join(ROOT, "build", "launcher", "ddprun"))
    ap.add_argument("--agents", default="2,8,32,128")
    ap.add_argument("--torch-agents", default="2,8")
    ap.add_argument("--repeat", type=int, default=5,
                    help="ddprun runs per count (the median is shown: one run on a loaded "
                         "2-core machine varies by +-30%%)")
    args = ap.parse_args()
    ours = [args.ddprun]
    torch_counts = {int(x) for x in args.torch_agents.split(",") if x}
    refs = [(label, [*t, "--monitor_interval=0.1"]) for label, t in torchruns()]
    etcd = start_etcd()
    try:
        run(args, ours, torch_counts, refs)
    except AgentsFailed as e:
        raise SystemExit(str(e)) from None
    finally:
        etcd.stop()


def run(args, ours, torch_counts, refs):
    time.sleep(1.0)  # etcd elects itself
    print("| agents | ddprun c10d | ddprun etcd | etcd / c10d | " +
          " | ".join(f"{label} c10d | {label} / ddprun c10d" for label, _ in refs) + " |")
    print("|---|---|---|---|" + "---|---|" * len(refs))
    for n in [int(x) for x in args.agents.split(",")]:
        ours_runs, etcd_runs = [], []
        for _ in range(args.repeat):  # interleaved: both see the same machine
            ours_runs.append(timed_agents(ours, "ddprun", n, MARK))
            etcd_runs.append(timed_agents(ours, "ddprun-etcd", n, MARK))
        t_ours, t_etcd = statistics.median(ours_runs), statistics.median(etcd_runs)
        row = (f"| {n} | {t_ours * 1000:.0f} ms | {t_etcd * 1000:.0f} ms | "
               f"x{t_etcd / t_ours:.2f} |")
        for _, torchrun in refs:
            if n in torch_counts:
                t_torch = timed_agents(torchrun, "torchrun", n, MARK)
                row += f" {t_torch * 1000:.0f} ms | x{t_torch / t_ours:.0f} |"
            else:
                row += " - | - |"
        print(row, flush=True)
    r_ours = restart_latency(ours, "ddprun")
    r_etcd = restart_latency(ours, "ddprun-etcd")
    line = (f"\n| restart across 2 agents (worker death to last restarted worker) | ddprun "
            f"c10d {r_ours * 1000:.1f} ms | ddprun etcd {r_etcd * 1000:.1f} ms |")
    for label, torchrun in refs:
        r_torch = restart_latency(torchrun, "torchrun")
        line += f" {label} {r_torch * 1000:.0f} ms (x{r_torch / r_ours:.0f}) |"
    print(line)


if __name__ == "__main__":
    main()
