"""`ddprun --hosts/--hostfile` over real ssh (ssh_hosts.py: an sshd on 127.0.0.2 and one
on 127.0.0.3, named nodeA and nodeB): one command starts, watches and stops the job on
every host.

Run with /usr/bin/python3 as root; DDPRUN names the binary. One pair of sshds per case.
"""
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

from ssh_hosts import SshHosts

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "..", "helpers", "py_worker.py")
DDPRUN = os.environ["DDPRUN"]


def parse_env_lines(out):
    ranks = {}
    for line in out.splitlines():
        if "env RANK=" not in line:
            continue
        prefix, _, rest = line.partition("env ")
        values = {}
        for kv in rest.split(" DDPRUN_TEST_")[0].split():
            k, _, v = kv.partition("=")
            values[k] = v
        values["prefix"] = prefix.strip()
        values["line"] = line
        ranks[int(values["RANK"])] = values
    return ranks


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def eventually(condition, timeout):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class SshTest(unittest.TestCase):
    def setUp(self):
        self.hosts = SshHosts().__enter__()
        self.addCleanup(self.hosts.stop)
        self.tmp = tempfile.mkdtemp(prefix="ddprun_ssh_test_")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "SLURM_"))}
        self.env.update(PYTHON_EXEC="/usr/bin/python3", OMP_NUM_THREADS="1")

    def argv(self, *args, hosts="nodeA,nodeB"):
        return [DDPRUN, f"--hosts={hosts}", "--ssh_cmd", " ".join(self.hosts.ssh_cmd),
                "--tracking_dir", os.path.join(self.tmp, "runs"), "--nproc_per_node=2", *args]

    def run_ddprun(self, *args, hosts="nodeA,nodeB", timeout=120):
        return subprocess.run(self.argv(*args, hosts=hosts), env=self.env, cwd=self.tmp,
                              capture_output=True, text=True, timeout=timeout)

    def start_waiting_job(self):
        proc = subprocess.Popen(self.argv(WORKER, "wait", self.tmp), env=self.env, cwd=self.tmp,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (proc.kill(), proc.communicate()))
        files = [os.path.join(self.tmp, f"pid.{r}") for r in range(4)]
        self.assertTrue(eventually(lambda: all(map(os.path.exists, files)) or
                                   proc.poll() is not None, 60), "4 workers")
        if proc.poll() is not None:
            self.fail("ended early: " + "".join(proc.communicate()))
        pids = []
        for path in files:
            with open(path) as f:
                pids.append(int(f.read()))
        return proc, pids


class OneCommand(SshTest):
    def test_two_hosts_give_four_ranks_with_exports_and_one_cwd(self):
        self.env["DDPRUN_TEST_PLAIN"] = "from-the-controller"
        odd = """a b  "c" 'd' $HOME `x` \\ end"""
        r = self.run_ddprun("--export", "DDPRUN_TEST_PLAIN", "--export", f"DDPRUN_TEST_ODD={odd}",
                            WORKER, "env")
        self.assertEqual(r.returncode, 0, r.stderr)
        ranks = parse_env_lines(r.stdout)
        self.assertEqual(sorted(ranks), [0, 1, 2, 3], r.stdout + r.stderr)
        for rank, v in ranks.items():
            host = "nodeA" if rank < 2 else "nodeB"
            self.assertEqual(v["GROUP_RANK"], str(rank // 2))
            self.assertEqual(v["WORLD_SIZE"], "4")
            self.assertEqual(v["prefix"], f"[{host}:{rank}]:", v["line"])
            self.assertEqual(v["CWD"], os.path.realpath(self.tmp))
            self.assertIn("DDPRUN_TEST_PLAIN='from-the-controller'", v["line"])
            self.assertIn(f"DDPRUN_TEST_ODD={odd!r}", v["line"])
        self.assertEqual({v["MASTER_ADDR"] for v in ranks.values()}, {"127.0.0.2"})
        # One shared run for the job, owned by the first host's agent.
        runs = os.listdir(os.path.join(self.tmp, "runs"))
        self.assertEqual(len(runs), 1, runs)
        db = sqlite3.connect(os.path.join(self.tmp, "runs", runs[0], "run.db"))
        self.assertEqual(db.execute("SELECT value FROM meta WHERE key = 'status'").fetchone(),
                         ("finished",))

    def test_elastic_job_over_two_hosts(self):
        r = self.run_ddprun("--nnodes=1:2", WORKER, "env")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(sorted(parse_env_lines(r.stdout)), [0, 1, 2, 3], r.stdout + r.stderr)

    def test_failed_worker_restarts_on_both_hosts(self):
        r = self.run_ddprun("--max_restarts=1", WORKER, "fail_once")
        self.assertEqual(r.returncode, 0, r.stderr)
        restarted = [l for l in r.stdout.splitlines() if "TORCHELASTIC_RESTART_COUNT=1" in l]
        self.assertEqual(len(restarted), 4, r.stdout + r.stderr)

    def test_exit_status_is_the_failed_workers(self):
        r = self.run_ddprun(WORKER, "exit", "7", "3")
        self.assertEqual(r.returncode, 7, r.stderr)

    def test_hostfile_with_slots(self):
        hostfile = os.path.join(self.tmp, "hosts")
        with open(hostfile, "w") as f:
            f.write("# two hosts\nnodeA slots=1\nnodeB slots=3\n")
        argv = [a for a in self.argv(WORKER, "env") if not a.startswith(("--hosts", "--nproc"))]
        r = subprocess.run(argv[:1] + [f"--hostfile={hostfile}"] + argv[1:], env=self.env,
                           cwd=self.tmp, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        ranks = parse_env_lines(r.stdout)
        self.assertEqual([ranks[k]["GROUP_RANK"] for k in range(4)], ["0", "1", "1", "1"])

    def test_malformed_hostfile_is_one_clear_error(self):
        hostfile = os.path.join(self.tmp, "hosts")
        with open(hostfile, "w") as f:
            f.write("nodeA\nnodeB slots=two\n")
        r = subprocess.run([DDPRUN, f"--hostfile={hostfile}", WORKER, "env"], env=self.env,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertEqual(r.stderr.strip(),
                         f"ddprun: error: {hostfile}:2: slots must be a positive integer, not 'two'")


class Torch(SshTest):
    def test_gloo_ddp_job_across_two_hosts(self):
        train = os.path.join(HERE, "..", "..", "examples", "pytorch_ddp", "train.py")
        argv = [a for a in self.argv(train, "--epochs", "2") if a != "--nproc_per_node=2"]
        r = subprocess.run(argv, env=self.env, cwd=self.tmp, capture_output=True, text=True,
                           timeout=150)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("epoch 1 loss", r.stdout, r.stderr)


class Lifetime(SshTest):
    def test_sigint_stops_every_worker_on_every_host(self):
        proc, pids = self.start_waiting_job()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 128 + signal.SIGINT, err)
        self.assertTrue(eventually(lambda: not any(map(alive, pids)), 5), err)
        self.assertTrue(eventually(lambda: not self.hosts.remote_processes(), 5),
                        "an ssh session outlived the job")

    def test_sigkill_of_the_controller_leaves_nothing_anywhere(self):
        proc, pids = self.start_waiting_job()
        proc.kill()
        proc.communicate()
        self.assertTrue(eventually(lambda: not any(map(alive, pids)), 5),
                        "a worker outlived its controller")
        self.assertTrue(eventually(lambda: not self.hosts.remote_processes(), 5),
                        "a remote agent outlived its controller")

    def test_unreachable_host_fails_fast_with_its_name(self):
        start = time.monotonic()
        r = self.run_ddprun(WORKER, "wait", self.tmp, hosts="nodeA,nodeC", timeout=60)
        self.assertEqual(r.returncode, 255, r.stderr)
        self.assertIn("host nodeC could not be reached", r.stderr)
        self.assertIn("Connection refused", r.stderr)
        self.assertLess(time.monotonic() - start, 40, "within --ssh_timeout and the grace")
        self.assertTrue(eventually(lambda: not self.hosts.remote_processes(), 5),
                        "nodeA's agent was left running")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("cannot run: sshd and a network namespace need root")
        sys.exit(77)
    unittest.main()
