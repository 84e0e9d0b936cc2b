"""ddprun under a real Slurm (slurm_cluster.py: slurmctld and two slurmd, n1 and n2, on
this machine): `srun ddprun ...` with no rendezvous flags.

Run with /usr/bin/python3 as root; DDPRUN names the binary. One cluster per test case.
"""
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

from slurm_cluster import SlurmCluster
from processes import alive, worker_pids

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "..", "helpers", "py_worker.py")
DDPRUN = os.environ["DDPRUN"]
PYTHON = "/usr/bin/python3"


def run_meta(tracking_dir):
    """(run id, status) of the one run in tracking_dir."""
    (run_id,) = os.listdir(tracking_dir)
    db = sqlite3.connect(os.path.join(tracking_dir, run_id, "run.db"))
    (status,) = db.execute("SELECT value FROM meta WHERE key = 'status'").fetchone()
    return run_id, status


def wait_until(ready, what, timeout=60):
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


class SlurmTest(unittest.TestCase):
    def setUp(self):
        self.cluster = SlurmCluster().__enter__()
        self.addCleanup(self.cluster.stop)
        self.tmp = tempfile.mkdtemp(prefix="ddprun_slurm_test_")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.runs = os.path.join(self.tmp, "runs")
        self.env = dict(self.cluster.env, PYTHON_EXEC=PYTHON, OMP_NUM_THREADS="1")
        self.env.pop("DDPRUN_JOB_TOKEN", None)  # the tests that want one say so

    def ddprun(self, *args):
        return [DDPRUN, "--tracking_dir", self.runs, "--nproc_per_node=2", *args]

    def srun(self, *args, timeout=120):
        return self.cluster.run(["srun", "-N2", "--ntasks-per-node=1", *self.ddprun(*args)],
                                env=self.env, cwd=self.tmp, timeout=timeout)

    def fail_with(self, r):
        return f"exit {r.returncode}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}\n" + \
            self.cluster.logs()

    def start_waiting_job(self):
        proc = self.cluster.popen(["srun", "-N2", "--ntasks-per-node=1",
                                   *self.ddprun(WORKER, "wait", self.tmp)],
                                  env=self.env, cwd=self.tmp)
        self.addCleanup(proc.kill)
        pids = worker_pids(self.tmp, 4, proc)
        if pids is None and proc.poll() is not None:
            self.fail("srun ended early: " + "".join(proc.communicate()))
        self.assertIsNotNone(pids, "timed out waiting for 4 workers")
        (job,) = self.cluster.jobs()
        return proc, job, pids


class Srun(SlurmTest):
    def test_two_nodes_give_four_ranks_and_one_shared_run(self):
        r = self.srun(WORKER, "env")
        self.assertEqual(r.returncode, 0, self.fail_with(r))
        lines = sorted(l for l in r.stdout.splitlines() if l.startswith("env "))
        self.assertEqual(len(lines), 4, self.fail_with(r))
        ranks = {}
        for line in lines:
            values = dict(kv.split("=", 1) for kv in line.split()[1:])
            ranks[int(values["RANK"])] = values
        self.assertEqual(sorted(ranks), [0, 1, 2, 3])
        for rank, v in ranks.items():
            self.assertEqual(v["GROUP_RANK"], str(rank // 2), v)
            self.assertEqual(v["LOCAL_RANK"], str(rank % 2), v)
            self.assertEqual(v["WORLD_SIZE"], "4", v)
        # One job, one run: the rendezvous id is the Slurm job and step.
        run_ids = {v["TORCHELASTIC_RUN_ID"] for v in ranks.values()}
        self.assertEqual(len(run_ids), 1)
        self.assertRegex(run_ids.pop(), r"^\d+\.0$")
        self.assertEqual({v["MASTER_PORT"] for v in ranks.values()}.__len__(), 1)
        # n1 does not resolve here: ddprun found its address and said so.
        self.assertIn("Slurm node n1 does not resolve; using its address 127.0.0.1 "
                      "(scontrol's NodeAddr)", r.stderr)
        self.assertEqual({v["MASTER_ADDR"] for v in ranks.values()}, {"127.0.0.1"})
        # No token exported: node 0 made one and handed it to node 1 through MUNGE.
        self.assertNotIn("no job token", r.stderr)
        run_id, status = run_meta(self.runs)
        self.assertEqual(status, "finished")
        self.assertEqual(run_id, ranks[0]["TORCHELASTIC_RUN_ID"])

    def test_failed_worker_restarts_the_group_on_both_nodes(self):
        r = self.srun("--max_restarts=1", WORKER, "fail_once")
        self.assertEqual(r.returncode, 0, self.fail_with(r))
        lines = [l for l in r.stdout.splitlines() if l.startswith("env ")]
        restarted = [l for l in lines if "TORCHELASTIC_RESTART_COUNT=1" in l]
        self.assertEqual(len(restarted), 4, self.fail_with(r))
        self.assertEqual(run_meta(self.runs)[1], "finished")

    def test_elastic_c10d_meets_at_the_first_node(self):
        r = self.srun("--rdzv_backend=c10d", "--nnodes=1:2", WORKER, "env")
        self.assertEqual(r.returncode, 0, self.fail_with(r))
        lines = [l for l in r.stdout.splitlines() if l.startswith("env ")]
        self.assertEqual(sorted(l.split()[1] for l in lines),
                         ["RANK=0", "RANK=1", "RANK=2", "RANK=3"], self.fail_with(r))
        run_ids = {dict(kv.split("=", 1) for kv in l.split()[1:])["TORCHELASTIC_RUN_ID"]
                   for l in lines}
        self.assertEqual(len(run_ids), 1)
        self.assertRegex(run_ids.pop(), r"^\d+$", "elastic: the job id alone")
        self.assertNotIn("no job token", r.stderr, "the c10d host hands it out through MUNGE")

    def test_taken_port_is_named_with_the_flag_that_overrides_it(self):
        # A fresh cluster's jobs are 1, 2, ...: their static ports (step 0) are 20000 + 8 * id.
        holders = []
        for job in (1, 2):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("", 20000 + 8 * job))
            s.listen()
            holders.append(s)
        self.addCleanup(lambda: [h.close() for h in holders])
        # Each task's stderr goes to a file of its own: srun, ending the step at the first
        # bad exit, may drop that task's last output on its way (seen once under load).
        errors = os.path.join(self.tmp, "task%t.err")
        r = self.cluster.run(["srun", "-N2", "--ntasks-per-node=1", "--kill-on-bad-exit=1",
                              "--error", errors, *self.ddprun(WORKER, "env")], env=self.env,
                             cwd=self.tmp, timeout=60)
        self.assertNotEqual(r.returncode, 0)
        # Node 1 reached the holder, which accepts and never answers: Slurm's SIGTERM
        # still ends it at once (not its SIGKILL after KillWait).
        self.assertNotIn("task 1: Killed", r.stderr)
        with open(errors.replace("%t", "0")) as f:
            node0 = f.read()
        self.assertIn("cannot listen on 127.0.0.1:20008", node0)  # the master address
        self.assertIn("port 20008 is ddprun's default for Slurm job 1 (derived from "
                      "SLURM_JOB_ID); another program on this node holds it: pass "
                      "--master_port=PORT with a free port, the same on every node", node0)
        with socket.socket() as free:
            free.bind(("127.0.0.1", 0))
            port = free.getsockname()[1]
        r = self.srun(f"--master_port={port}", WORKER, "env")
        self.assertEqual(r.returncode, 0, self.fail_with(r))
        self.assertIn(f"MASTER_PORT={port}", r.stdout)

    def test_two_tasks_per_node_are_refused_with_the_fix(self):
        r = self.cluster.run(["srun", "-N2", "--ntasks-per-node=2", *self.ddprun(WORKER, "env")],
                             env=self.env, cwd=self.tmp)
        self.assertNotEqual(r.returncode, 0)
        self.assertNotIn("env RANK", r.stdout)
        self.assertIn("this Slurm step runs 4 tasks on 2 node(s) (SLURM_STEP_NUM_TASKS=4)",
                      r.stderr)
        self.assertIn("srun --ntasks-per-node=1 ddprun", r.stderr)


class Torch(SlurmTest):
    def test_gloo_ddp_job_across_the_two_slurm_nodes(self):
        # No token exported: node 0 makes one and hands it to node 1 through MUNGE; its
        # store then serves real PyTorch clients only from the nodes that proved it (both
        # on loopback here).
        train = os.path.join(HERE, "..", "..", "examples", "pytorch_ddp", "train.py")
        r = self.cluster.run(["srun", "-N2", "--ntasks-per-node=1", DDPRUN, "--tracking_dir",
                              self.runs, "--nproc_per_node=1", train, "--epochs", "2"],
                             env=self.env, cwd=self.tmp,
                             timeout=150)
        self.assertEqual(r.returncode, 0, self.fail_with(r))
        self.assertNotIn("no job token", r.stderr)
        self.assertIn("epoch 1 loss", r.stdout, self.fail_with(r))
        self.assertEqual(run_meta(self.runs)[1], "finished")


class Sbatch(SlurmTest):
    def sbatch(self, body):
        script = os.path.join(self.tmp, "job.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\n#SBATCH -N2\n#SBATCH -o " + os.path.join(self.tmp, "out.txt") +
                    "\n" + body + "\n")
        r = self.cluster.run(["sbatch", "--wait", script], env=self.env, cwd=self.tmp)
        with open(os.path.join(self.tmp, "out.txt")) as f:
            return r, f.read()

    def test_batch_script_runs_the_job_on_both_nodes(self):
        # The job token exported, as the README says to where MUNGE is not used.
        token = "export DDPRUN_JOB_TOKEN=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n')"
        command = " ".join(["srun", "--ntasks-per-node=1", *self.ddprun(WORKER, "env")])
        r, out = self.sbatch(token + "\n" + command + "\nexit $?")
        self.assertEqual(r.returncode, 0, self.fail_with(r) + out)
        self.assertNotIn("no job token", out)
        ranks = sorted(l.split()[1] for l in out.splitlines() if l.startswith("env "))
        self.assertEqual(ranks, ["RANK=0", "RANK=1", "RANK=2", "RANK=3"], out)
        self.assertEqual(run_meta(self.runs)[1], "finished")

    def test_exit_code_of_the_job_is_the_failed_workers(self):
        command = " ".join(["srun", "--ntasks-per-node=1", *self.ddprun(WORKER, "exit", "3")])
        r, out = self.sbatch(command + "\nexit $?")
        self.assertEqual(r.returncode, 3, self.fail_with(r) + out)
        self.assertEqual(run_meta(self.runs)[1], "failed")

    def test_ddprun_without_srun_in_a_two_node_batch_is_refused(self):
        r, out = self.sbatch(" ".join(self.ddprun(WORKER, "env")) + "\nexit $?")
        self.assertEqual(r.returncode, 2, out)
        self.assertIn("outside a job step of a 2-node Slurm allocation", out)
        self.assertNotIn("env RANK", out)


class Signals(SlurmTest):
    def test_scancel_stops_every_worker_on_every_node_and_the_run_ends_killed(self):
        proc, job, pids = self.start_waiting_job()
        r = self.cluster.run(["scancel", job], env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        out, err = proc.communicate(timeout=60)
        self.assertNotEqual(proc.returncode, 0)
        for pid in pids:
            self.assertFalse(alive(pid), f"worker {pid} outlived scancel")
        self.assertEqual(run_meta(self.runs)[1], "killed", err)
        self.assertEqual(self.cluster.processes(), [], "a process of the job outlived it")

    def test_sigusr1_to_the_step_reaches_every_worker_once_and_the_job_goes_on(self):
        proc, job, pids = self.start_waiting_job()
        r = self.cluster.run(["scancel", "--signal=USR1", job], env=self.env)
        self.assertEqual(r.returncode, 0, r.stderr)
        counts = [os.path.join(self.tmp, f"usr1.{r}") for r in range(4)]
        wait_until(lambda: all(map(os.path.exists, counts)) or proc.poll() is not None,
                   "SIGUSR1 in every worker")
        open(os.path.join(self.tmp, "stop"), "w").close()
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, out + err)
        for rank in range(4):
            self.assertIn(f"rank {rank} got SIGUSR1 x1", out, err)
        self.assertEqual(run_meta(self.runs)[1], "finished")


class Token(SlurmTest):
    def ask_for_the_token(self, port, job):
        """What node 0 answers a node asking for the job token with a real MUNGE
        credential naming `job`, and the credential (to replay)."""
        sock = os.path.join(self.cluster.dir, "munge", "socket")
        cred = subprocess.run(["munge", "-S", sock, "-s", f"ddprun job token for {job}"],
                              capture_output=True, text=True, check=True).stdout.strip()
        return self.send_token_request(port, cred), cred

    def send_token_request(self, port, cred):
        with socket.create_connection(("127.0.0.1", port), timeout=10) as c:
            c.sendall(f"DDPRUN-MUNGE1 {cred}\n".encode())
            reply = b""
            while not reply.endswith(b"\n"):
                chunk = c.recv(4096)
                if not chunk:
                    break
                reply += chunk
        return reply.decode()

    def test_the_job_token_goes_only_to_this_jobs_user_asking_for_this_job(self):
        # Real MUNGE credentials sent to node 0's store by hand, as another node would.
        proc, job, _ = self.start_waiting_job()
        port = 20000 + (int(job) * 8) % 12000  # step 0 (README)
        sock = os.path.join(self.cluster.dir, "munge", "socket")
        other, _ = self.ask_for_the_token(port, f"{int(job) + 1}.0")
        self.assertEqual(other, "DDPRUN-REFUSED1 the credential asks for another job's token "
                                f"(this is {job}.0)\n")
        reply, cred = self.ask_for_the_token(port, f"{job}.0")
        self.assertTrue(reply.startswith("DDPRUN-TOKEN1 "), reply)
        handed = reply[len("DDPRUN-TOKEN1 "):].strip()
        self.assertNotIn(handed, ("", cred))
        # Only MUNGE can read it, and only for this user: the token itself.
        token = subprocess.run(["unmunge", "-S", sock, "-m", "/dev/null"], input=handed,
                               capture_output=True, text=True, check=True).stdout
        self.assertRegex(token, r"^[0-9a-f]{64}$")
        # A credential seen on the wire is worth nothing twice.
        replayed = self.send_token_request(port, cred)
        self.assertTrue(replayed.startswith("DDPRUN-REFUSED1 the credential is not valid: "),
                        replayed)
        self.assertIn("replayed", replayed.lower())
        open(os.path.join(self.tmp, "stop"), "w").close()
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, out + err)
        self.assertIn("store: refused a connection from 127.0.0.1 (asked for the job token: "
                      "the credential asks for another job's token", err)
        self.assertNotIn("no job token", err)


if __name__ == "__main__":
    # ctest runs one case: test_slurm.py Case.test_name. 77 (ctest's skip code, printed
    # with the reason) where a Slurm cluster cannot be started at all.
    if os.geteuid() != 0:
        print("cannot run: the Slurm daemons need root")
        sys.exit(77)
    unittest.main()
