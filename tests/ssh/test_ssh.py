"""`ddprun --hosts/--hostfile` over real ssh (ssh_hosts.py: an sshd on 127.0.0.2 and one
on 127.0.0.3 and one on 127.0.0.4, named nodeA, nodeB and nodeC): one command starts, watches and stops the job on
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
from processes import alive, children_of, eventually, worker_pids

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

    def start_waiting_job(self, *flags):
        proc = subprocess.Popen(self.argv(*flags, WORKER, "wait", self.tmp), env=self.env,
                                cwd=self.tmp,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (proc.kill(), proc.communicate()))
        pids = worker_pids(self.tmp, 4, proc)
        if pids is None and proc.poll() is not None:
            self.fail("ended early: " + "".join(proc.communicate()))
        self.assertIsNotNone(pids, "timed out waiting for 4 workers")
        return proc, pids


    def ps(self):
        out = []
        for pid in self.hosts.remote_processes():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    out.append(f"{pid}: " + f.read().replace(b"\0", b" ").decode()[:100])
            except OSError:
                pass
        return "\n".join(out)


class OneCommand(SshTest):
    def test_two_hosts_give_four_ranks_with_exports_and_one_cwd(self):
        self.env["DDPRUN_TEST_PLAIN"] = "from-the-controller"
        odd = """a b  "c" 'd' $HOME `x` \\ end"""
        r = self.run_ddprun("--export", "DDPRUN_TEST_PLAIN", "--export", f"DDPRUN_TEST_ODD={odd}",
                            WORKER, "env")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("no job token", r.stderr, "the controller gives every job a token")
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

    def run_three_hosts(self, narrowing):
        argv = [a for a in self.argv(WORKER, "env", hosts="nodeA:2,nodeB:2,nodeC:2")
                if a != "--nproc_per_node=2"]
        r = subprocess.run(argv[:1] + [narrowing] + argv[1:], env=self.env, cwd=self.tmp,
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return parse_env_lines(r.stdout)

    def test_three_hosts_narrowed_by_include(self):
        ranks = self.run_three_hosts("--include=nodeB:1@nodeC")
        self.assertEqual([ranks[k]["prefix"] for k in range(3)],
                         ["[nodeB:0]:", "[nodeC:1]:", "[nodeC:2]:"])
        self.assertEqual([ranks[k]["CUDA_VISIBLE_DEVICES"] for k in range(3)], ["1", "", ""])

    def test_three_hosts_narrowed_by_exclude(self):
        ranks = self.run_three_hosts("--exclude=nodeB@nodeC:1")
        self.assertEqual(sorted(ranks), [0, 1, 2])
        self.assertEqual([ranks[k]["prefix"] for k in range(3)],
                         ["[nodeA:0]:", "[nodeA:1]:", "[nodeC:2]:"])
        self.assertEqual([ranks[k]["GROUP_RANK"] for k in range(3)], ["0", "0", "1"])
        # nodeC keeps its slot 0 only: one worker, that device.
        self.assertEqual(ranks[2]["CUDA_VISIBLE_DEVICES"], "0")
        self.assertEqual(ranks[0]["CUDA_VISIBLE_DEVICES"], "")

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
        self.assertNotIn("no job token", r.stderr)  # PyTorch's clients let in by address


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

    def test_frozen_controller_stops_every_host(self):
        # A laptop that sleeps, a controller stopped with ^Z: its connections stay open
        # but silent, which ssh alone never notices on the remote side.
        proc, pids = self.start_waiting_job("--ssh_keepalive=1")
        frozen = [proc.pid, *children_of({proc.pid})]
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        self.addCleanup(lambda: [os.kill(p, signal.SIGCONT) for p in frozen if alive(p)])
        self.assertTrue(eventually(lambda: not any(map(alive, pids)), 30),
                        "a worker outlived its frozen controller")
        # Only sshd's own session processes may wait for the frozen client.
        self.assertTrue(eventually(lambda: "ddprun" not in self.ps(), 10),
                        "a remote agent outlived its frozen controller: " + self.ps())
        for pid in frozen:
            os.kill(pid, signal.SIGCONT)
        proc.communicate(timeout=60)
        self.assertTrue(eventually(lambda: not self.hosts.remote_processes(), 10), self.ps())

    def test_frozen_host_stops_the_job_and_leaves_nothing_when_it_thaws(self):
        proc, pids = self.start_waiting_job("--ssh_keepalive=1")
        frozen = self.hosts.host_processes("nodeB")
        for pid in frozen:
            os.kill(pid, signal.SIGSTOP)
        self.addCleanup(lambda: [os.kill(p, signal.SIGCONT) for p in frozen if alive(p)])
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 255, err)
        self.assertIn("host nodeB could not be reached, its agent not started, or its "
                      "connection was lost", err)
        self.assertFalse(any(map(alive, pids[:2])), "nodeA's workers outlived the job")
        for pid in frozen:  # the host comes back: its agent learns it is gone
            try:
                os.kill(pid, signal.SIGCONT)
            except ProcessLookupError:
                pass  # killed while stopped (a SIGKILL is delivered even so): gone already
        self.assertTrue(eventually(lambda: not any(map(alive, pids)), 30),
                        "nodeB's workers outlived the job")
        self.assertTrue(eventually(lambda: not self.hosts.remote_processes(), 10),
                        "an agent outlived the job")

    def test_unreachable_host_fails_fast_with_its_name(self):
        start = time.monotonic()
        r = self.run_ddprun(WORKER, "wait", self.tmp, hosts="nodeA,nodeD", timeout=60)
        self.assertEqual(r.returncode, 255, r.stderr)
        self.assertIn("host nodeD could not be reached", r.stderr)
        self.assertIn("Connection refused", r.stderr)
        self.assertLess(time.monotonic() - start, 40, "within --ssh_timeout and the grace")
        self.assertTrue(eventually(lambda: not self.hosts.remote_processes(), 5),
                        "nodeA's agent was left running")


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("cannot run: sshd and a network namespace need root")
        sys.exit(77)
    unittest.main()
