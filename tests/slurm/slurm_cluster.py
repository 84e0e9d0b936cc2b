"""A real Slurm cluster on this one machine, for tests: munged with its own key and
socket, one slurmctld and two slurmd (-N n1, -N n2) on loopback, every file in a
temporary directory. Debian's slurm-wlm and munge; root.

The test process first moves into a network namespace of its own with only a loopback
interface (when the kernel allows it), so the daemons can be reached from nowhere else
and their fixed ports collide with nothing; otherwise they listen on free ports.

    with SlurmCluster() as cluster:
        cluster.run(["srun", "-N2", "hostname"])

Teardown (even when a test fails): every job cancelled, every process started under
this cluster's SLURM_CONF killed, the daemons stopped, the directory removed.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from private_network import isolate_network  # noqa: E402

NODES = ("n1", "n2")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environments():
    """(pid, environment entries) of every process that can be read."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                yield int(pid), f.read().split(b"\0")
        except OSError:
            continue


def kill(pids):
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def owner_alive(directory):
    try:
        with open(os.path.join(directory, "owner")) as f:
            os.kill(int(f.read()), 0)
        return True
    except (OSError, ValueError):
        return False


def sweep_leftovers():
    """Kills what an earlier test run, killed before its teardown, left behind: the
    processes of a cluster whose owning test process is gone."""
    stale = set()
    for pid, env in environments():
        for entry in env:
            if entry.startswith(b"SLURM_CONF=") and b"/ddprun_slurm_" in entry:
                directory = os.path.dirname(entry[len(b"SLURM_CONF="):].decode(errors="replace"))
                if not owner_alive(directory):
                    kill([pid])
                    stale.add(directory)
    for directory in stale:
        shutil.rmtree(directory, ignore_errors=True)


def stop_on_sigterm():
    """A test killed by SIGTERM (a timeout) still tears its cluster down."""
    def handler(signum, frame):
        raise SystemExit(128 + signum)
    signal.signal(signal.SIGTERM, handler)


class SlurmCluster:
    def __init__(self):
        self.dir = None
        self.daemons = []
        self.env = None

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        for tool in ("munged", "slurmctld", "slurmd", "srun"):
            if shutil.which(tool) is None:
                raise RuntimeError(f"{tool} not found: scripts/install_deps.sh installs "
                                   "slurm-wlm and munge")
        sweep_leftovers()
        stop_on_sigterm()
        isolated = isolate_network()
        ports = (6817, 6818, 6819) if isolated else tuple(free_port() for _ in range(3))
        self.dir = tempfile.mkdtemp(prefix="ddprun_slurm_")
        d = self.dir
        with open(os.path.join(d, "owner"), "w") as f:
            f.write(str(os.getpid()))
        for sub in ("munge", "state", "log", "spool/n1", "spool/n2"):
            os.makedirs(os.path.join(d, sub))
        os.chmod(os.path.join(d, "munge"), 0o700)
        key = os.path.join(d, "munge", "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        sock = os.path.join(d, "munge", "socket")
        conf = os.path.join(d, "slurm.conf")
        nodes = "\n".join(
            f"NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={ports[i + 1]} "
            f"CPUs=2 RealMemory=1000" for i, n in enumerate(NODES))
        with open(conf, "w") as f:
            f.write(f"""ClusterName=ddprun
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock}
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool/%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.%n.pid
SlurmctldLogFile={d}/log/slurmctld.log
SlurmdLogFile={d}/log/slurmd.%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
KillWait=10
MinJobAge=2
InactiveLimit=0
{nodes}
PartitionName=debug Nodes={",".join(NODES)} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
""")
        self.env = dict(os.environ, SLURM_CONF=conf)
        for k in [k for k in self.env if k.startswith("SLURM_") and k != "SLURM_CONF"]:
            del self.env[k]  # a test run inside a Slurm job must not leak its own
        self.daemon(["munged", "-F", "-f", f"--socket={sock}", f"--key-file={key}",
                     f"--pid-file={d}/munge/pid", f"--seed-file={d}/munge/seed",
                     f"--log-file={d}/log/munged.log"])
        self.wait_for(lambda: os.path.exists(sock), "munged's socket")
        self.daemon(["slurmctld", "-D", "-i", "-f", conf])
        for n in NODES:
            self.daemon(["slurmd", "-D", "-N", n, "-f", conf])
        self.wait_for(self.nodes_idle, "both nodes idle in sinfo")

    def daemon(self, argv):
        with open(os.path.join(self.dir, "log", os.path.basename(argv[0]) + ".out"), "ab") as log:
            self.daemons.append(subprocess.Popen(argv, env=self.env, stdout=log,
                                                 stderr=subprocess.STDOUT))

    def wait_for(self, ready, what, timeout=30):
        deadline = time.monotonic() + timeout
        while not ready():
            for p in self.daemons:
                if p.poll() is not None:
                    raise RuntimeError(f"{p.args[0]} exited with {p.returncode}:\n{self.logs()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}:\n{self.logs()}")
            time.sleep(0.1)

    def nodes_idle(self):
        r = subprocess.run(["sinfo", "-h", "-N", "-o", "%N %T"], env=self.env,
                           capture_output=True, text=True)
        states = dict(line.split() for line in r.stdout.splitlines() if line.strip())
        return all(states.get(n) == "idle" for n in NODES)

    def run(self, argv, timeout=120, **kw):
        """Runs a client command (srun, sbatch, ...) against this cluster. Past timeout it
        fails with what the command had printed, the processes of its jobs and the
        daemons' logs."""
        with subprocess.Popen(argv, env=kw.pop("env", self.env), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, **kw) as p:
            try:
                out, err = p.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                ps = subprocess.run(["ps", "-o", "pid,ppid,stat,etime,time,args", "-p",
                                     ",".join(map(str, self.processes())) or "1"],
                                    capture_output=True, text=True).stdout
                p.kill()
                out, err = p.communicate()
                raise AssertionError(f"{argv[0]} still running after {timeout} s\nstdout:\n"
                                     f"{out}\nstderr:\n{err}\nprocesses of the job:\n{ps}\n"
                                     f"{self.logs()}") from None
            return subprocess.CompletedProcess(argv, p.returncode, out, err)

    def popen(self, argv, **kw):
        return subprocess.Popen(argv, env=kw.pop("env", self.env), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **kw)

    def jobs(self):
        r = self.run(["squeue", "-h", "-o", "%i"], timeout=30)
        return r.stdout.split()

    def logs(self):
        out = []
        for name in sorted(os.listdir(os.path.join(self.dir, "log"))):
            with open(os.path.join(self.dir, "log", name), errors="replace") as f:
                out.append(f"--- {name}\n" + "".join(f.readlines()[-20:]))
        return "\n".join(out)

    def processes(self, jobs_only=True):
        """Pids of every process of a job of this cluster (its SLURM_CONF and a job id in
        its environment); with jobs_only False, Slurm's own too (slurmstepd, ...)."""
        return [pid for pid, env in environments()
                if f"SLURM_CONF={self.env['SLURM_CONF']}".encode() in env
                and pid not in {p.pid for p in self.daemons}
                and (not jobs_only or any(v.startswith(b"SLURM_JOB_ID=") for v in env))]

    def stop(self):
        if self.env is not None:
            try:
                self.run(["scancel", "--full", "-u", "root"], timeout=10)
            except (OSError, subprocess.SubprocessError, AssertionError):
                pass
            kill(self.processes())
        # One at a time, the last started first (all at once, slurmd waits for a
        # controller that is already gone).
        for p in reversed(self.daemons):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.env is not None:
            kill(self.processes(jobs_only=False))  # slurmstepd outlives slurmd
        self.daemons = []
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
