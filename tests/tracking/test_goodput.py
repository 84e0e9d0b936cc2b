"""Goodput accounting against the truth: a synthetic job (goodput_job.py) with known
step times, a checkpoint every 10 steps, a crash and a hang gets a breakdown, from
`ddprun runs export`, equal to what its ranks saw of themselves within 2% of the job's
time; and `runs show`, `runs list` and a failed job's last words say it."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

DDPRUN = os.environ["DDPRUN"]
HERE = os.path.dirname(os.path.abspath(__file__))
ENV = dict(os.environ, PYTHON_EXEC="/usr/bin/python3", OMP_NUM_THREADS="1")


class Goodput(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ddprun_goodput_")
        self.runs = os.path.join(self.dir, "runs")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def ddprun(self, *args, **env):
        return subprocess.run([DDPRUN, *args], env=dict(ENV, **env), capture_output=True, text=True,
                              timeout=120)

    def exported(self):
        r = self.ddprun("runs", "export", "latest", "--tracking_dir", self.runs, "--format", "jsonl")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [json.loads(l) for l in r.stdout.splitlines()]
        return [l["value"] for l in lines if l.get("kind") == "goodput"][0]

    def timelines(self, attempt):
        out = []
        for path in sorted(glob.glob(os.path.join(self.dir, f"{attempt}.*.json"))):
            with open(path) as f:
                out.append(json.load(f))
        return out

    def check_breakdown(self, *flags, writer_only=False, **env):
        r = self.ddprun("--nproc_per_node=2", "--max_restarts=2", "--hang_timeout=1",
                        "--hang_initial_timeout=30", "--tracking_dir", self.runs, *flags,
                        os.path.join(HERE, "goodput_job.py"), self.dir, **env)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])
        g = self.exported()
        a0, a1, a2 = self.timelines(0), self.timelines(1), self.timelines(2)
        first = lambda ts: min(t["first_step"] for t in ts)
        last = lambda ts: max(t["last_step"] for t in ts)
        # Declared by every rank (the latest counts), or noticed in the directory that
        # rank 0 alone writes to.
        checkpoint = lambda ts: max(t["checkpoints"][-1] for t in (ts[:1] if writer_only else ts))
        # The first rank to crash ends the attempt (the other may be stopped before its own).
        crash = min(t["crashed"] for t in a0 if "crashed" in t)
        stop = min(t["stopped"] for t in a1)  # the hang's detection stopped them
        truth = {
            "startup": first(a0) - g["start"],
            "productive": (checkpoint(a0) - first(a0)) + (checkpoint(a1) - first(a1)) + (last(a2) - first(a2)),
            "lost": (crash - checkpoint(a0)) + (last(a1) - checkpoint(a1)),
            "hang_wait": stop - last(a1),
            "restart": (first(a1) - crash) + (first(a2) - stop),
            # After the last step: the workers' teardown and the agent's, not training.
            "shutdown": g["end"] - last(a2),
        }
        total = g["end"] - g["start"]
        if os.environ.get("GOODPUT_SHOW"):
            print({k: (round(g[k], 3), round(v, 3)) for k, v in truth.items()}, round(total, 3))
        self.assertAlmostEqual(sum(g[k] for k in truth), total, delta=1e-6)
        for key, want in truth.items():
            self.assertLess(abs(g[key] - want), 0.02 * total,
                            f"{key}: accounted {g[key]:.3f} s, truth {want:.3f} s, job {total:.3f} s\n{g}")
        self.assertEqual([a["attempt"] for a in g["attempts"]], [0, 1, 2])
        self.assertTrue(g["checkpoint_seen"])
        return g

    def test_the_breakdown_equals_what_the_ranks_saw(self):
        g = self.check_breakdown()

        shown = self.ddprun("runs", "show", "latest", "--tracking_dir", self.runs).stdout
        self.assertRegex(shown, r"(?m)^goodput \d+\.\d%: start-up [\d.]+ s, productive [\d.]+ s, lost "
                                r"[\d.]+ s, hang wait [\d.]+ s, restart [\d.]+ s, shutdown [\d.]+ s$")
        self.assertRegex(shown, r"(?m)^  attempt 1: [\d.]+ s, goodput")
        listed = self.ddprun("runs", "list", "--tracking_dir", self.runs).stdout
        self.assertRegex(listed, r"GOODPUT")
        self.assertIn(f"{g['goodput'] * 100:.1f}%", listed)

    def test_checkpoints_noticed_in_the_checkpoint_dir_count_as_declared_ones(self):
        os.makedirs(os.path.join(self.dir, "ckpt"))  # a --checkpoint_dir must exist
        self.check_breakdown("--checkpoint_dir", os.path.join(self.dir, "ckpt"), writer_only=True,
                             GOODPUT_DIR_ONLY="1")

    def test_a_job_that_fails_for_good_says_where_its_time_went(self):
        r = self.ddprun("--nproc_per_node=2", "--max_restarts=0", "--tracking_dir", self.runs,
                        os.path.join(HERE, "goodput_job.py"), self.dir)
        self.assertEqual(r.returncode, 3, r.stderr[-3000:])
        self.assertRegex(r.stderr, r"ddprun: goodput \d+\.\d%: start-up [\d.]+ s, productive [\d.]+ s, "
                                   r"lost [\d.]+ s, hang wait 0\.0 s, restart 0\.0 s, shutdown [\d.]+ s")


if __name__ == "__main__":
    unittest.main()
