"""PyTorch 2.x from Debian (2.6 in trixie, 2.14 in forky) under ddprun, beside that
release's own torchrun. Runs inside a root of scripts/torch_root.sh (tests/torch2/run.sh);
DDPRUN names the portable binary. The jobs of tests/torch/test_torch_jobs.py run there
too; these are the cases PyTorch 2.x adds.
"""
import os
import re
import sys
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "torch"))
from test_torch_jobs import PRINT_ENV, ddprun, run, scratch_dir, torchrun  # noqa: E402

VERSION = tuple(int(x) for x in re.match(r"(\d+)\.(\d+)", torch.__version__).groups())
COMPAT = os.path.join(os.path.dirname(HERE), "torch", "torchrun_compat.py")


class Torch2Jobs(unittest.TestCase):
    def test_rpc_job(self):
        import torch.distributed.rpc.options as options
        if options._TensorPipeRpcBackendOptionsBase is object:
            self.skipTest(f"this PyTorch ({torch.__version__}) is built without TensorPipe: RPC "
                          "fails in TensorPipeRpcBackendOptions() before any launcher's part")
        r = ddprun("--standalone", "--nproc_per_node=2", "--no_tracking",
                   os.path.join(HERE, "rpc_job.py"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("rank 0 got [1.0, 1.0] from worker1", r.stdout)
        self.assertIn("rank 1 got [2.0, 2.0] from worker0", r.stdout)

    def test_every_store_method_of_torchs_own_client(self):
        r = ddprun("--standalone", "--nproc_per_node=2", "--no_tracking",
                   os.path.join(HERE, "store_methods.py"))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        summary = [l for l in r.stdout.splitlines() if l.startswith("store_methods:")]
        self.assertEqual(len(summary), 2, r.stdout)
        self.assertIn("libuv client: no", summary[0])  # Debian builds it without libuv
        checked = {l.split(" ", 1)[1] for l in r.stdout.splitlines() if l.startswith("ok ")}
        want = {"set/get", "add", "compare_set", "wait", "wait (timeout)", "delete_key",
                "num_keys", "check", "append", "multi_set/multi_get", "has_extended_api",
                "timeout", "add (shared)", "get (another rank's)"}
        if VERSION >= (2, 14):
            want |= {"list_keys", "clone", "barrier"}
        self.assertTrue(want <= checked, sorted(want - checked))
        if VERSION >= (2, 14):
            # Queues exist in torch's API but its legacy client refuses them: reported, not faked.
            self.assertIn("unsupported queue_push/queue_pop/queue_len", r.stdout)


class Torch2Parity(unittest.TestCase):
    def torchrun_flags(self):
        from torch.distributed.run import get_args_parser
        return {s for a in get_args_parser()._actions for s in a.option_strings
                if s.startswith("--")} - {"--help"}

    def test_every_flag_of_torchruns_help_in_both_spellings(self):
        ours = ddprun("--help").stdout
        ours_flags = {f.replace("-", "_") for f in re.findall(r"--([a-z][a-z_]+)", ours)}
        missing = sorted(f for f in self.torchrun_flags()
                         if f[2:].replace("-", "_") not in ours_flags)
        self.assertEqual(missing, [], "torchrun flags ddprun lacks")
        # Each spelling is accepted as such (and not taken for the script).
        for flag in sorted(self.torchrun_flags()):
            r = ddprun(flag, "--help")
            self.assertNotIn("unrecognized flag", r.stderr, flag)

    def test_duplicate_filters_write_what_torchruns_do(self):
        tmp = scratch_dir("ddprun_filters_")
        script = os.path.join(tmp, "say.py")
        with open(script, "w") as f:
            f.write("import os, sys\nr = os.environ['RANK']\n"
                    "print(f'apple {r}'); print('pear'); print(f'kiwi, {r}', file=sys.stderr)\n")
        args = ["--nproc_per_node=2", "--tee=3", "--duplicate-stdout-filters=apple",
                "--duplicate_stderr_filters=kiwi,,", script]
        if VERSION < (2, 14):
            r = ddprun("--log_dir", os.path.join(tmp, "ours"), *args)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(sorted(self.filtered(os.path.join(tmp, "ours"), "stdout")),
                             ["[default0]:apple 0", "[default1]:apple 1"])
            return  # torchrun before 2.14 has no such flags
        a = ddprun("--log_dir", os.path.join(tmp, "ours"), *args)
        b = torchrun("--log_dir", os.path.join(tmp, "theirs"), *args)
        self.assertEqual(a.returncode, 0, a.stderr)
        self.assertEqual(b.returncode, 0, b.stderr)
        for stream in ("stdout", "stderr"):
            ours = self.filtered(os.path.join(tmp, "ours"), stream)
            theirs = self.records(self.filtered(os.path.join(tmp, "theirs"), stream))
            # Ours is line-exact; torchrun's own file can join two ranks' lines into one
            # (CI saw '[default0]:kiwi, 0[default1]:kiwi, 1'), so theirs is cut into its
            # records at each rank's prefix before the two are compared.
            self.assertEqual(sorted(ours), sorted(theirs), stream)
            self.assertEqual(len(ours), 2, ours)

    @staticmethod
    def records(lines):
        return [r for line in lines for r in re.split(r"(?=\[default\d+\]:)", line) if r]

    @staticmethod
    def filtered(log_dir, stream):
        for root, _, files in os.walk(log_dir):
            if f"filtered_{stream}.log" in files:
                with open(os.path.join(root, f"filtered_{stream}.log")) as f:
                    return f.read().splitlines()
        return []

    def test_virtual_local_rank_as_torchrun(self):
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="5,7", PRINT_ENV_ALSO="CUDA_VISIBLE_DEVICES")
        args = ["--nproc_per_node=2", "--virtual-local-rank", PRINT_ENV]
        mine = run([os.environ["DDPRUN"], *args], env=env)
        self.assertEqual(mine.returncode, 0, mine.stderr)
        pick = re.compile(r"^\d (LOCAL_RANK|CUDA_VISIBLE_DEVICES)=")
        ours = sorted(l for l in mine.stdout.splitlines() if pick.match(l))
        # torchrun 2.14's rule: LOCAL_RANK 0, the local rank's entry of the inherited list.
        self.assertEqual(ours, ["0 CUDA_VISIBLE_DEVICES=5", "0 LOCAL_RANK=0",
                                "1 CUDA_VISIBLE_DEVICES=7", "1 LOCAL_RANK=0"])
        if VERSION >= (2, 14):  # and torchrun's own, where it has the flag
            ref = run([sys.executable, COMPAT, "--monitor_interval=0.1", *args], env=env)
            self.assertEqual(ref.returncode, 0, ref.stderr)
            self.assertEqual(ours, sorted(l for l in ref.stdout.splitlines() if pick.match(l)))


if __name__ == "__main__":
    unittest.main()
