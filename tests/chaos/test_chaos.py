"""Chaos with real PyTorch in the suite: faults in the orders clusters produce them,
and the job still ends 0 with the weights of an undisturbed run, leaving no process.

Run with /usr/bin/python3 (Debian's torch 1.13); DDPRUN names the binary.
"""
import os
import signal
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chaos  # noqa: E402
from chaos import Job, eventually, training_again  # noqa: E402

sys.path.insert(0, os.path.join(chaos.ROOT, "tests", "helpers"))
from scratch import scratch_dir  # noqa: E402

STEPS = 150
RECOVERY = 60  # seconds a recovery may take here (2 cores shared with the suite)


class Chaos(unittest.TestCase):
    def test_faults_in_real_orders_leave_the_weights_of_an_undisturbed_run(self):
        tmp = scratch_dir("ddprun_chaos_")
        base = os.path.join(tmp, "base")
        os.makedirs(base)
        expected = chaos.undisturbed_weights(base, STEPS)
        # Run after run: the same seed and world size give the same weights.
        again = os.path.join(tmp, "again")
        os.makedirs(again)
        same, why = chaos.same_weights(expected, chaos.undisturbed_weights(again, STEPS))
        self.assertTrue(same, "two undisturbed runs differ: " + why)

        work = os.path.join(tmp, "job")
        os.makedirs(work)
        job = Job(work, STEPS, 0.05)
        try:
            a = job.start("a", "127.0.0.1", is_host=True)
            job.start("b", "127.0.0.2")
            self.assertTrue(eventually(lambda: job.step() >= 3, 120), a.err())

            def fault(do, *args):
                before_restart, before_step = job.restart_count(), job.step()
                what = do(job, *args)
                self.assertIsNotNone(what, f"{do.__name__}: nothing to do it to")
                back = training_again(job, before_restart, before_step, RECOVERY)
                self.assertIsNotNone(back, f"not training again after {what}\n" +
                                     "\n".join(f"--- {n}\n{x.err()}" for n, x in job.agents.items()))

            fault(chaos.kill_worker)                        # a worker killed
            fault(chaos.stop_worker)                        # a worker that cannot run
            spare = job.start("s", "127.0.0.3")             # a hot spare
            self.assertTrue(eventually(lambda: spare.said("waiting as a spare"), 60), spare.err())
            # Node b's agent dies; its peers' collectives fail first.
            fault(chaos.kill_agent, "b")
            self.assertTrue(eventually(lambda: any(w[3] == "s" for w in job.workers()), 30),
                            "the spare took b's place")
            fault(chaos.kill_worker, signal.SIGKILL, "s")  # a worker of the former spare
            fault(chaos.kill_worker, signal.SIGTERM)       # a worker told to stop

            self.assertEqual(a.wait(300), 0, a.err())
            self.assertEqual(spare.wait(60), 0, spare.err())
        finally:
            job.stop_all()
        same, why = chaos.same_weights(expected, os.path.join(work, "weights.pt"))
        self.assertTrue(same, "the weights differ from the undisturbed run's: " + why)
        left = [p for p in job.every_pid() if chaos.alive(p)]
        self.assertEqual(left, [], "workers left behind")
        # One count of restarts: the run's is the last attempt's, as its workers saw it.
        shown = chaos.runs_show(job)
        last_attempt = max(int(open(os.path.join(work, "pids", p)).read().split()[2])
                           for p in os.listdir(os.path.join(work, "pids")))
        self.assertEqual(chaos.shown_count(shown, "restarts"), last_attempt, shown)
        self.assertGreaterEqual(last_attempt, 5, shown)  # a restart for each fault at least


if __name__ == "__main__":
    unittest.main()
