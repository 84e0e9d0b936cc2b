"""ddprun's store and PyTorch 1.13's speak the same protocol, in both directions:
torch's Python TCPStore client against ddprun's server, and ddprun's C++ client
against torch's own TCPStore server. Needs DDPRUN_STORE_SERVER and DDPRUN_STORE_PROBE.
torch's client puts '/' in front of every key on the wire; the probe does the same.
"""
import datetime
import os
import subprocess
import unittest

import torch.distributed as dist

SERVER = os.environ["DDPRUN_STORE_SERVER"]
PROBE = os.environ["DDPRUN_STORE_PROBE"]
TIMEOUT = datetime.timedelta(seconds=10)


def run_probe(port, numbering):
    env = dict(os.environ, PROBE_WAIT_FOR="/from_py")
    return subprocess.run([PROBE, "127.0.0.1", str(port), numbering], env=env,
                          capture_output=True, text=True, timeout=60)


class TorchClientAgainstDdprunServer(unittest.TestCase):
    def setUp(self):
        self.server = subprocess.Popen([SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                       text=True)
        self.port = int(self.server.stdout.readline())

    def tearDown(self):
        self.server.stdin.close()
        self.server.wait(timeout=10)

    def test_every_operation(self):
        s = dist.TCPStore("127.0.0.1", self.port, 1, False, TIMEOUT)
        s.set("k", "v")
        self.assertEqual(s.get("k"), b"v")
        self.assertEqual(s.add("n", 3), 3)
        self.assertEqual(s.add("n", 4), 7)
        self.assertEqual(s.get("n"), b"7")
        self.assertEqual(s.compare_set("c", "", "first"), b"first")
        self.assertEqual(s.compare_set("c", "nope", "second"), b"first")
        self.assertEqual(s.compare_set("c", "first", "second"), b"second")
        s.wait(["k", "n"])  # (1.13's Python binding has no check())
        self.assertTrue(s.delete_key("k"))
        self.assertFalse(s.delete_key("k"))
        s.set_timeout(datetime.timedelta(milliseconds=200))
        with self.assertRaises(RuntimeError):
            s.wait(["never"])
        # 1.13 never cancels a wait: a late STOP_WAITING would corrupt the next reply.
        s.set_timeout(TIMEOUT)
        s.set("never", "now")
        self.assertEqual(s.add("n", 0), 7)
        self.assertEqual(s.num_keys(), 4)  # init/ /n /c /never

    def test_cpp_client_sees_torch_keys_and_back(self):
        s = dist.TCPStore("127.0.0.1", self.port, 1, False, TIMEOUT)
        s.set("from_py", "from python")
        probe = run_probe(self.port, "v2")
        self.assertEqual(probe.returncode, 0, probe.stderr)
        self.assertEqual(s.get("probe/set"), b"from c++")
        self.assertEqual(s.add("probe/counter", 0), 42)


class CppClientAgainstTorchServer(unittest.TestCase):
    def test_probe_with_113_numbering(self):
        master = dist.TCPStore("127.0.0.1", 0, 1, True, TIMEOUT)
        master.set("from_py", "from python")
        probe = run_probe(master.port, "v113")
        self.assertEqual(probe.returncode, 0, probe.stderr)
        self.assertEqual(master.get("probe/set"), b"from c++")
        self.assertEqual(master.add("probe/counter", 0), 42)
        self.assertEqual(master.compare_set("probe/cas", "two", "three"), b"three")


if __name__ == "__main__":
    unittest.main()
