"""The NCCL flight recorder in a hang, with ranks that keep PyTorch 2.x's contract
(nccl_rank.py; this machine has no GPU): ddprun asks every rank for its dump before
it stops them, names the rank behind in the collectives, and puts what each rank's
record says into the run.

Run with /usr/bin/python3; DDPRUN names the binary.
"""
import os
import subprocess
import tempfile
import unittest

from test_hang import culprit_lines, environment, hang_events, same_culprit_on_both_nodes
from test_torch_jobs import free_port

HERE = os.path.dirname(os.path.abspath(__file__))
RANK = os.path.join(HERE, "nccl_rank.py")
DDPRUN = os.environ["DDPRUN"]
TIMEOUT = 120


# The hang timeout also runs from each worker's start: 4 s, so that the restarted
# attempt's interpreters start in time on a loaded 2-core machine (at 2 s, one of them
# was still before its exec once, under the suite's parallel load).
def command(tmp, *args):
    return [DDPRUN, "--tracking_dir", os.path.join(tmp, "runs"), "--hang_timeout=4",
            "--max_restarts=1", "--log_dir", os.path.join(tmp, "logs"), *args, RANK,
            "--behind", "2"]


class FlightRecorder(unittest.TestCase):
    def check_the_run(self, tmp):
        ((attempt, event),) = hang_events(tmp)
        self.assertEqual(attempt, 0)
        self.assertEqual(event["culprits"], [2])
        self.assertIn("behind the others in NCCL collectives", event["why"])
        by_rank = {r["rank"]: r for r in event["ranks"]}
        self.assertEqual(sorted(by_rank), [0, 1, 2, 3])
        for rank, report in by_rank.items():
            (group,) = report["nccl"]["groups"]
            self.assertEqual(group["entered"], 41 if rank == 2 else 42)
            self.assertEqual(group["op"], "nccl:all_reduce")
            # The dump itself is in the run, for PyTorch's own tools.
            self.assertTrue(report["nccl_dump"].startswith(os.path.join(tmp, "runs", "")),
                            report["nccl_dump"])
            with open(report["nccl_dump"], "rb") as f:
                self.assertIn(b"torch.jit._pickle\nrestore_type_tag", f.read())

    def test_the_rank_behind_in_collectives_is_named_from_the_dumps(self):
        with tempfile.TemporaryDirectory(prefix="ddprun_fr_") as tmp:
            r = subprocess.run(command(tmp, "--standalone", "--nproc_per_node=4"),
                               capture_output=True, text=True, timeout=TIMEOUT,
                               env=environment(), cwd=tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(r.stdout.count("finished attempt 1"), 4, r.stdout)
            (culprit,) = culprit_lines(r.stderr)
            self.assertIn("culprit: rank 2 (local_rank 2) on node 0", culprit)
            self.assertIn("NCCL flight recorder, process group 0: rank 2 at #41 nccl:all_reduce "
                          "(completed); ranks 0,1,3 at #42 nccl:all_reduce (started)", r.stderr)
            self.check_the_run(tmp)

    def test_both_nodes_name_the_rank_behind_on_the_other(self):
        with tempfile.TemporaryDirectory(prefix="ddprun_fr_") as tmp:
            endpoint = f"127.0.0.1:{free_port()}"
            culprit = same_culprit_on_both_nodes(
                self, command(tmp, "--nnodes=2", "--nproc_per_node=2", "--rdzv_backend=c10d",
                              f"--rdzv_endpoint={endpoint}", "--rdzv_id=frjob",
                              "--local_addr=127.0.0.1"), tmp)
            self.assertIn("culprit: rank 2 (local_rank 0) on node 1", culprit)
            self.check_the_run(tmp)


if __name__ == "__main__":
    unittest.main()
