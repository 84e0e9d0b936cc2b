"""The agent side of --hosts without ssh: an agent given --stop_on_stdin_close stops its
job when its standard input ends or, with --stdin_timeout, stays silent (a frozen
controller, a connection dropped without a word); its workers never read that input.

Run with /usr/bin/python3; DDPRUN names the binary.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "helpers"))
from processes import alive, eventually  # noqa: E402
WORKER = os.path.join(HERE, "..", "helpers", "py_worker.py")
DDPRUN = os.environ["DDPRUN"]


def finish(proc):
    """Waits for `proc` with its stdin left as it is; returns what it wrote to stderr."""
    proc.wait(timeout=60)
    return proc.stderr.read()


class AgentStdin(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ddprun_stdin_")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.env = dict(os.environ, PYTHON_EXEC="/usr/bin/python3", OMP_NUM_THREADS="1")

    def start(self, *flags):
        proc = subprocess.Popen(
            [DDPRUN, "--nproc_per_node=2", "--no_tracking", "--stop_on_stdin_close", *flags,
             WORKER, "wait", self.tmp],
            env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(proc.kill)
        files = [os.path.join(self.tmp, f"pid.{r}") for r in range(2)]
        self.assertTrue(eventually(lambda: all(map(os.path.exists, files)) or
                                   proc.poll() is not None, 30), "2 workers")
        self.assertIsNone(proc.poll(), "ended early")
        pids = []
        for path in files:
            with open(path) as f:
                pids.append(int(f.read()))
        return proc, pids

    def test_end_of_input_stops_the_job(self):
        proc, pids = self.start()
        proc.stdin.close()
        err = finish(proc)
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertIn(b"standard input closed", err)
        self.assertFalse(any(map(alive, pids)))

    def test_silence_past_the_timeout_stops_the_job(self):
        proc, pids = self.start("--stdin_timeout=1")
        err = finish(proc)  # stdin stays open, and silent
        self.assertEqual(proc.returncode, 128 + signal.SIGTERM, err)
        self.assertIn(b"nothing from the controller on standard input for 1 s", err)
        self.assertFalse(any(map(alive, pids)))

    def test_keepalive_lines_keep_the_job_running(self):
        proc, pids = self.start("--stdin_timeout=3")
        done = threading.Event()

        def keepalive():
            try:
                while not done.wait(0.1):
                    proc.stdin.write(b"\n")
                    proc.stdin.flush()
            except OSError:  # ddprun has ended
                pass

        sender = threading.Thread(target=keepalive)
        sender.start()
        time.sleep(4)  # longer than the timeout, with a line every 0.1 s
        self.assertIsNone(proc.poll())
        open(os.path.join(self.tmp, "stop"), "w").close()
        err = finish(proc)
        done.set()
        sender.join()
        self.assertEqual(proc.returncode, 0, err)

    def test_workers_do_not_share_the_agents_input(self):
        proc = subprocess.Popen([DDPRUN, "--no_tracking", "--stop_on_stdin_close", "--no_python",
                                 "/bin/sh", "-c", "readlink /proc/self/fd/0"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=self.env)
        self.addCleanup(proc.kill)
        err = finish(proc)
        self.assertEqual(proc.returncode, 0, err)
        self.assertEqual(proc.stdout.read().strip(), b"/dev/null", err)


if __name__ == "__main__":
    unittest.main()
