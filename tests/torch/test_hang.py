"""Hang detection with real PyTorch (Debian's torch 1.13, gloo): a rank that stops is
noticed, named with its stack, and the job recovers.

Run with /usr/bin/python3 (the interpreter that has torch); DDPRUN names the binary.
"""
import json
import os
import socket
import sqlite3
import subprocess
import unittest

from test_torch_jobs import free_port, scratch_dir

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "hang_train.py")
DDPRUN = os.environ["DDPRUN"]
PYTHON = "/usr/bin/python3"
TIMEOUT = 150


def environment():
    return dict(os.environ, PYTHON_EXEC=PYTHON, OMP_NUM_THREADS="1")


def ddprun(tmp, *args):
    # The logs a hang keeps land in the test's scratch directory.
    return subprocess.run([DDPRUN, "--tracking_dir", os.path.join(tmp, "runs"), "--log_dir",
                           os.path.join(tmp, "logs"), *args],
                          capture_output=True, text=True, timeout=TIMEOUT, env=environment(),
                          cwd=tmp)


def hang_events(tmp):
    runs = os.path.join(tmp, "runs")
    (run_id,) = os.listdir(runs)
    db = sqlite3.connect(os.path.join(runs, run_id, "run.db"))
    rows = db.execute("SELECT attempt, data FROM events WHERE kind = 'hang'").fetchall()
    return [(attempt, json.loads(data)) for attempt, data in rows]


def culprit_lines(stderr):
    return [l.strip() for l in stderr.splitlines() if l.strip().startswith("culprit:")]


def same_culprit_on_both_nodes(test, cmd, tmp):
    """Runs `cmd` as two agents of one job; both succeed and name the same one culprit,
    whose line this returns."""
    nodes = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=environment(), cwd=tmp) for _ in range(2)]
    try:
        outs = [n.communicate(timeout=TIMEOUT) for n in nodes]
    finally:  # a job that hangs past the timeout leaves no agent behind
        for n in nodes:
            if n.poll() is None:
                n.kill()
                n.wait()
    for n, (_, err) in zip(nodes, outs):
        test.assertEqual(n.returncode, 0, err)
    culprits = [culprit_lines(err) for _, err in outs]
    test.assertEqual(len(culprits[0]), 1, outs[0][1])
    test.assertEqual(culprits[0], culprits[1])
    return culprits[0][0]


class OneNode(unittest.TestCase):
    def stalled_rank_is_named_and_the_job_recovers(self, nproc, hang_rank):
        tmp = scratch_dir("ddprun_hang_")
        r = ddprun(tmp, "--standalone", f"--nproc_per_node={nproc}", "--hang_timeout=5",
                   "--max_restarts=1", TRAIN, "--hang-rank", str(hang_rank))
        self.assertEqual(r.returncode, 0, r.stderr)
        # The second attempt ran to the end on every rank.
        self.assertEqual(r.stdout.count("finished attempt 1"), nproc, r.stdout)
        (culprit,) = culprit_lines(r.stderr)
        host = socket.gethostname()
        self.assertIn(f"culprit: rank {hang_rank} (local_rank {hang_rank}) on node 0 ({host})",
                      culprit)
        self.assertIn("load_batch", culprit)
        self.assertIn("time.sleep", culprit)
        others = ",".join(str(k) for k in range(nproc) if k != hang_rank)
        waiting = [l for l in r.stderr.splitlines() if "all_reduce" in l]
        self.assertTrue(any(f"{others} " in l for l in waiting), r.stderr)
        # The run holds the hang: who, and every rank's stacks.
        ((attempt, event),) = hang_events(tmp)
        self.assertEqual(attempt, 0)
        self.assertEqual(event["culprits"], [hang_rank])
        stacks = {s["rank"]: s["python_stack"] for s in event["ranks"]}
        self.assertIn("load_batch", stacks[hang_rank])
        for k in range(nproc):
            if k != hang_rank:
                self.assertIn("all_reduce", stacks[k])
        # `runs show` tells who hung, not the raw stacks.
        runs = os.path.join(tmp, "runs")
        show = subprocess.run([DDPRUN, "runs", "show", os.listdir(runs)[0], "--tracking_dir", runs],
                              capture_output=True, text=True, timeout=TIMEOUT)
        self.assertIn(f"culprit: rank {hang_rank} (local_rank {hang_rank})", show.stdout)
        self.assertNotIn("python_stack", show.stdout)

    def test_two_workers(self):
        self.stalled_rank_is_named_and_the_job_recovers(2, 1)

    def test_four_workers(self):
        self.stalled_rank_is_named_and_the_job_recovers(4, 2)

    def test_auto_timeout_learns_the_step_time(self):
        tmp = scratch_dir("ddprun_hang_")
        r = ddprun(tmp, "--standalone", "--nproc_per_node=2", "--hang_timeout=auto",
                   "--hang_min_timeout=1", TRAIN, "--hang-rank", "1", "--hang-step", "12",
                   "--steps", "20", "--step-time", "0.2")
        self.assertEqual(r.returncode, 124, r.stderr)
        (culprit,) = culprit_lines(r.stderr)
        self.assertIn("rank 1 (local_rank 1)", culprit)

    def test_quiet_phase_inside_a_section_is_not_a_hang(self):
        tmp = scratch_dir("ddprun_hang_")
        r = ddprun(tmp, "--standalone", "--nproc_per_node=2", "--hang_timeout=2",
                   TRAIN, "--section-sleep", "5")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("hang", r.stderr)


class TwoNodes(unittest.TestCase):
    def test_both_nodes_name_the_same_culprit(self):
        tmp = scratch_dir("ddprun_hang_")
        endpoint = f"127.0.0.1:{free_port()}"
        culprit = same_culprit_on_both_nodes(
            self,
            [DDPRUN, "--nnodes=2", "--nproc_per_node=1", "--rdzv_backend=c10d",
             f"--rdzv_endpoint={endpoint}", "--rdzv_id=hangjob", "--local_addr=127.0.0.1",
             "--hang_timeout=5", "--max_restarts=1",
             "--tracking_dir", os.path.join(tmp, "runs"), "--log_dir", os.path.join(tmp, "logs"),
             TRAIN, "--hang-rank", "1"], tmp)
        self.assertIn("culprit: rank 1 (local_rank 0) on node", culprit)
        self.assertIn("time.sleep", culprit)
        ((_, event),) = hang_events(tmp)
        self.assertEqual(event["culprits"], [1])


if __name__ == "__main__":
    unittest.main()
