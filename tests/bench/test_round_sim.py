"""The scale benchmark's simulated nodes (bench/round_sim.cc) at a few dozen nodes: every
phase runs over ddprun's store and over a real etcd member (started here, on loopback,
and stopped), and the restart's waits are ready before the restart starts: with
`--start-on-stdin`, once the sim says `armed`, its joiners keep serving their waits
until etcd watches for each, before the restart's line is sent. A joiner process gone
ends the sim with a failure.
"""
import json
import os
import subprocess
import sys
import time
import unittest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                     "bench")
sys.path.insert(0, BENCH)
import rendezvous_bench as rb  # noqa: E402
import scale_bench as sb  # noqa: E402

SIM = os.environ.get("ROUND_SIM", "")
NODES = 32


def until_said(proc, word):
    """Reads the sim's stderr up to the line `word`; fails where it ends first."""
    said = []
    for line in proc.stderr:
        said.append(line)
        if line.strip() == word:
            return
    raise AssertionError(f"the sim ended before saying {word!r}: {''.join(said)[-500:]}")


class RoundSim(unittest.TestCase):
    def setUp(self):
        if not os.access(SIM, os.X_OK):
            self.fail(f"ROUND_SIM={SIM!r} is not the ddprun_round_sim binary")

    def test_every_phase_runs_over_ddpruns_store(self):
        run = subprocess.run([SIM, f"--nodes={NODES}"], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(run.returncode, 0, run.stderr)
        r = json.loads(run.stdout.strip().splitlines()[-1])
        for phase in ("floor_seconds", "seconds", "restart_seconds", "watch_seconds",
                      "hang_seconds"):
            self.assertGreaterEqual(r[phase], 0, phase)
        # A round asks about 5 requests per node, a restart about 6 (its wait included).
        self.assertLess(r["requests_per_node"], 7)
        self.assertLess(r["restart_requests_per_node"], 8)
        # The store's own CPU, phase by phase (the store serves every request).
        for phase in ("floor", "round", "restart", "watch", "hang"):
            self.assertGreater(r["store_cpu_seconds"][phase], 0, phase)

    def test_a_joiner_process_gone_ends_the_sim(self):
        proc = subprocess.Popen([SIM, f"--nodes={NODES}", "--start-on-stdin"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (proc.kill(), proc.wait(), proc.stdout.close(),
                                 proc.stderr.close()))
        until_said(proc, "connected")
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            joiners = [int(pid) for pid in f.read().split()]
        self.assertEqual(len(joiners), 4)
        os.kill(joiners[1], 9)
        proc.stdin.write("start\n")
        proc.stdin.close()
        # Before, the sim held the joiners' ends of their pipes and waited forever.
        self.assertNotEqual(proc.wait(timeout=30), 0)

    def test_the_restarts_waits_watch_before_the_restart_over_etcd(self):
        member = rb.start_etcd()
        self.addCleanup(member.stop)
        time.sleep(1.0)  # etcd elects itself
        proc = subprocess.Popen([SIM, f"--nodes={NODES}", "--start-on-stdin", f"--etcd={rb.ETCD}"],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.addCleanup(lambda: (proc.kill(), proc.wait(), proc.stdout.close(),
                                 proc.stderr.close()))
        until_said(proc, "connected")
        proc.stdin.write("start\n")
        proc.stdin.flush()
        until_said(proc, "armed")
        # No restart line yet: the joiners' loops must make every other node's watch.
        deadline = time.time() + 30
        seen = sb.etcd_watching()
        while seen != (NODES - 1, 0) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.1)
            seen = sb.etcd_watching()
        self.assertEqual(seen, (NODES - 1, 0), "etcd's watchers (all, behind) before the restart")
        proc.stdin.write("restart\n")
        proc.stdin.close()
        out = proc.stdout.read()
        self.assertEqual(proc.wait(timeout=60), 0, proc.stderr.read())
        self.assertGreaterEqual(json.loads(out.strip().splitlines()[-1])["restart_seconds"], 0)

    def test_the_benchmark_runs_the_sim_over_etcd(self):
        phases = sb.round_sim(SIM, NODES, etcd=True)
        seconds = [p[0] for p in phases[:4]] + [phases[5][0]]
        self.assertTrue(all(s >= 0 for s in seconds), phases)
        self.assertIsNotNone(phases[4][1], "etcd's CPU per request it answered")
        self.assertIsNone(phases[0][2], "no store's own CPU: the store is etcd, elsewhere")


if __name__ == "__main__":
    unittest.main()
