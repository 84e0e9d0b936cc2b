"""torchrun's worker watchdog (TORCHELASTIC_ENABLE_FILE_TIMER=1) with torch 1.13's own
client, `torch.distributed.elastic.timer.FileTimerClient`, under ddprun and torchrun.

Run with /usr/bin/python3 (the interpreter that has torch); DDPRUN names the binary.
"""
import os
import unittest

from test_torch_jobs import DDPRUN, ddprun, run, scratch_dir, torchrun

# Rank 1 overstays a 1 s timer in attempt 0 (sleeping 60 s); every other scope is
# released in time.
SCRIPT = """import os, time
import torch.distributed.elastic.timer as timer
timer.configure(timer.FileTimerClient(os.environ["TORCHELASTIC_TIMER_FILE"]))
rank, attempt = int(os.environ["RANK"]), int(os.environ["TORCHELASTIC_RESTART_COUNT"])
with timer.expires(after=30):
    time.sleep(0.1)
if rank == 1 and attempt == 0:
    with timer.expires(after=1):
        time.sleep(60)
print(f"rank {rank} done in attempt {attempt}", flush=True)
"""


class Watchdog(unittest.TestCase):
    def setUp(self):
        self.tmp = scratch_dir("ddprun_watchdog_")
        self.script = os.path.join(self.tmp, "timed.py")
        with open(self.script, "w") as f:
            f.write(SCRIPT)
        os.environ["TORCHELASTIC_ENABLE_FILE_TIMER"] = "1"
        self.addCleanup(os.environ.pop, "TORCHELASTIC_ENABLE_FILE_TIMER")

    def test_an_overstaying_rank_is_killed_as_torchrun_kills_it(self):
        runs = os.path.join(self.tmp, "runs")
        d = ddprun("--tracking_dir", runs, "--rdzv_id=wd", "--nproc_per_node=2", self.script)
        self.assertEqual(d.returncode, 137, d.stderr)
        show = ddprun("runs", "show", "wd", "--tracking_dir", runs)
        # With the stack taken before the signal: the line it was stuck at.
        self.assertRegex(show.stdout, r"watchdog attempt 0 rank 1  SIGKILL to pid \d+: scope \S+ "
                                      r"expired after 1\.0 s\n +in <module> \(\S*timed\.py:9",
                         "the run records the reaping and where rank 1 was")
        self.assertIn('File "' + self.script + '", line 9 in <module>', show.stdout)
        self.assertIn("rank 0 done", d.stdout)
        self.assertNotIn("rank 1 done", d.stdout)
        self.assertIn("worker watchdog: rank 1 (local_rank 1) overstayed its timer", d.stderr)
        self.assertIn("sending SIGKILL", d.stderr)
        self.assertRegex(d.stderr, r"traceback : reaped by the worker watchdog: scope \S+ "
                                   r"expired after \d+\.\d s, in <module> \(\S*timed\.py:9",
                         "the failure summary says why, and where")
        t = torchrun("--nproc_per_node=2", self.script)
        self.assertNotEqual(t.returncode, 0, t.stderr)
        self.assertIn("rank 0 done", t.stdout)
        self.assertNotIn("rank 1 done", t.stdout)
        self.assertIn("exitcode  : -9", t.stderr)

    def test_the_job_restarts_and_the_fifo_goes_with_it(self):
        fifo = os.path.join(self.tmp, "timer.fifo")
        os.environ["TORCHELASTIC_TIMER_FILE"] = fifo
        self.addCleanup(os.environ.pop, "TORCHELASTIC_TIMER_FILE")
        d = ddprun("--no_tracking", "--nproc_per_node=2", "--max_restarts=1", self.script)
        self.assertEqual(d.returncode, 0, d.stderr)
        self.assertIn("rank 1 done in attempt 1", d.stdout)
        self.assertFalse(os.path.exists(fifo), "the FIFO is removed at the end")

    def test_without_the_variable_there_is_no_watchdog(self):
        os.environ["TORCHELASTIC_ENABLE_FILE_TIMER"] = "0"
        d = run([DDPRUN, "--no_tracking", "--no_python", "/bin/sh", "-c",
                 "echo timer=${TORCHELASTIC_TIMER_FILE:-unset}"])
        self.assertIn("timer=unset", d.stdout, d.stderr)


if __name__ == "__main__":
    unittest.main()
