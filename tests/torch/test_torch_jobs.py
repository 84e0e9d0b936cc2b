"""Real PyTorch (Debian's torch 1.13, gloo) under ddprun, next to torchrun.

Run with /usr/bin/python3 (the interpreter that has torch); DDPRUN names the binary.
"""
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TRAIN = os.path.join(ROOT, "examples", "pytorch_ddp", "train.py")
PRINT_ENV = os.path.join(HERE, "print_env.py")
DDPRUN = os.environ.get("DDPRUN", os.path.join(ROOT, "build", "launcher", "ddprun"))
PYTHON = "/usr/bin/python3"
TIMEOUT = 120

sys.path.insert(0, os.path.join(ROOT, "tests", "helpers"))
from free_port import free_port  # noqa: E402
from scratch import scratch_dir  # noqa: E402


# Where a failed job's core files are kept (a torch 2.6 worker's SIGABRT 3.6 s into a
# static 2-node job's start, seen once, has no known cause yet): the job's own
# directory goes with the test.
CORES = os.path.join(tempfile.gettempdir(), "ddprun-torch-cores")


def allow_cores():
    _, hard = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (hard, hard))


def keep_cores(cwd):
    """Moves the core files a failed job left in `cwd` to CORES; says where."""
    said = ""
    for name in sorted(os.listdir(cwd)):
        if name == "core" or name.startswith("core."):
            os.makedirs(CORES, exist_ok=True)
            kept = os.path.join(CORES, f"{os.path.basename(cwd)}-{name}")
            shutil.move(os.path.join(cwd, name), kept)
            said += f"\n[test] a worker dumped core: kept at {kept}"
    return said


def run(cmd, env=None, **kw):
    env = dict(os.environ if env is None else env, PYTHON_EXEC=PYTHON, OMP_NUM_THREADS="1")
    cwd = kw.setdefault("cwd", scratch_dir("ddprun_torch_cwd_"))  # runs land there
    kw.setdefault("timeout", TIMEOUT)
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, preexec_fn=allow_cores, **kw)
    if r.returncode != 0:
        r.stderr += keep_cores(cwd)  # with the workers' stderr, in the assertion's message
    return r


def ddprun(*args):
    return run([DDPRUN, *args])


def torchrun(*args):
    return run([PYTHON, os.path.join(HERE, "torchrun_compat.py"), "--monitor_interval=0.1", *args])


def training_lines(stdout):
    return [l for l in stdout.splitlines() if l.startswith("epoch ")]


class DdpJob(unittest.TestCase):
    def setUp(self):
        self.tmp = scratch_dir("ddprun_torch_")

    def test_ddp_job_completes_and_matches_torchrun(self):
        ckpt_a = os.path.join(self.tmp, "a.pt")
        ckpt_b = os.path.join(self.tmp, "b.pt")
        runs = os.path.join(self.tmp, "runs")
        a = ddprun("--standalone", "--nproc_per_node=2", "--tracking_dir", runs, TRAIN,
                   "--epochs", "2", "--checkpoint", ckpt_a)
        self.assertEqual(a.returncode, 0, a.stderr)
        # Every rank's loss of every epoch is in the job's run.
        (run_id,) = os.listdir(runs)
        csv = ddprun("runs", "export", run_id, "--format", "csv", "--tracking_dir", runs).stdout
        losses = [l.split(",") for l in csv.splitlines() if l.endswith(tuple("0123456789"))
                  and ",loss," in l]
        self.assertEqual(sorted((r[1], r[5]) for r in losses),
                         [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")], csv)
        b = torchrun("--standalone", "--nproc_per_node=2", TRAIN, "--epochs", "2",
                     "--checkpoint", ckpt_b)
        self.assertEqual(b.returncode, 0, b.stderr)
        self.assertEqual(len(training_lines(a.stdout)), 2, a.stdout)
        self.assertEqual(training_lines(a.stdout), training_lines(b.stdout))
        check = run([PYTHON, "-c",
                     "import sys, torch\n"
                     "a = torch.load(sys.argv[1]); b = torch.load(sys.argv[2])\n"
                     "assert a['epochs'] == 2 and set(a['model']) == set(b['model'])\n"
                     "assert all(torch.equal(a['model'][k], b['model'][k]) for k in a['model'])\n",
                     ckpt_a, ckpt_b])
        self.assertEqual(check.returncode, 0, check.stderr)

    def test_failed_rank_is_restarted(self):
        r = ddprun("--standalone", "--nproc_per_node=2", "--max_restarts=1", TRAIN,
                   "--epochs", "1", "--fail-rank", "1",
                   "--checkpoint", os.path.join(self.tmp, "c.pt"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("restarting, attempt 1 of 1", r.stderr)
        self.assertEqual(len(training_lines(r.stdout)), 1, r.stdout)

    def test_restart_resumes_from_the_checkpoint(self):
        ckpt = os.path.join(self.tmp, "r.pt")
        r = ddprun("--standalone", "--nproc_per_node=2", "--max_restarts=1", TRAIN,
                   "--epochs", "3", "--kill-rank", "1", "--checkpoint", ckpt)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("resuming from epoch 1", r.stdout)
        epochs = [l.split()[1] for l in training_lines(r.stdout)]
        self.assertEqual(epochs, ["0", "1", "2"], r.stdout)
        check = run([PYTHON, "-c",
                     "import sys, torch\n"
                     "s = torch.load(sys.argv[1])\n"
                     "assert s['epochs'] == 3 and 'optimizer' in s and len(s['model']) > 0\n",
                     ckpt])
        self.assertEqual(check.returncode, 0, check.stderr)

    def test_failure_summary_shows_the_python_traceback(self):
        r = ddprun("--standalone", "--nproc_per_node=2", TRAIN, "--epochs", "1",
                   "--fail-rank", "1", "--checkpoint", os.path.join(self.tmp, "d.pt"))
        self.assertEqual(r.returncode, 1, r.stderr)
        summary = r.stderr[r.stderr.index("train.py FAILED"):]
        self.assertIn("rank      : 1 (local_rank: 1)", summary)
        self.assertRegex(summary, r"error_file: /\S+/attempt_0/1/error\.json")
        self.assertIn("Traceback (most recent call last):", summary)
        self.assertIn("RuntimeError: rank 1 fails on purpose in attempt 0", summary)


class StaticNodes(unittest.TestCase):
    def test_two_static_nodes_train_like_one(self):
        tmp = scratch_dir("ddprun_torch_")
        port = free_port()
        env = dict(os.environ, PYTHON_EXEC=PYTHON, OMP_NUM_THREADS="1")
        nodes = [subprocess.Popen(
            [DDPRUN, "--nnodes=2", f"--node_rank={k}", "--master_addr=127.0.0.1",
             f"--master_port={port}", "--nproc_per_node=2", TRAIN, "--epochs", "2",
             "--checkpoint", os.path.join(tmp, f"n{k}.pt")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp,
            preexec_fn=allow_cores)
            for k in (0, 1)]
        outs = [n.communicate(timeout=TIMEOUT) for n in nodes]
        for n, (out, err) in zip(nodes, outs):
            self.assertEqual(n.returncode, 0, err + (keep_cores(tmp) if n.returncode else ""))
        # Global rank 0 lives on node 0; four ranks train exactly as on one node.
        one = ddprun("--standalone", "--nproc_per_node=4", TRAIN, "--epochs", "2",
                     "--checkpoint", os.path.join(tmp, "one.pt"))
        self.assertEqual(one.returncode, 0, one.stderr)
        self.assertEqual(len(training_lines(outs[0][0])), 2, outs[0][0])
        self.assertEqual(training_lines(outs[0][0]), training_lines(one.stdout))
        self.assertEqual(training_lines(outs[1][0]), [])


class ElasticNodes(unittest.TestCase):
    def agents(self, tmp, extra_args, extra_train, backend="c10d", endpoint=None):
        endpoint = endpoint or f"127.0.0.1:{free_port()}"
        env = dict(os.environ, PYTHON_EXEC=PYTHON, OMP_NUM_THREADS="1")
        return [subprocess.Popen(
            [DDPRUN, "--nnodes=2", "--nproc_per_node=2", f"--rdzv_backend={backend}",
             f"--rdzv_endpoint={endpoint}", "--rdzv_id=torchjob",
             "--local_addr=127.0.0.1", *extra_args, TRAIN, "--epochs", "2",
             "--checkpoint", os.path.join(tmp, "ckpt.pt"), *extra_train],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp)
            for _ in range(2)]

    def test_two_agents_under_c10d(self):
        self.two_agents_train()

    def test_two_agents_over_etcd(self):
        tmp = scratch_dir("ddprun_etcd_")
        client, peer = free_port(), free_port()
        etcd = subprocess.Popen(
            ["etcd", "--name=m0", f"--data-dir={tmp}/data",
             f"--listen-client-urls=http://127.0.0.1:{client}",
             f"--advertise-client-urls=http://127.0.0.1:{client}",
             f"--listen-peer-urls=http://127.0.0.1:{peer}",
             f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
             f"--initial-cluster=m0=http://127.0.0.1:{peer}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            self.two_agents_train("etcd", f"127.0.0.1:{client}")
        finally:
            etcd.kill()
            etcd.wait()

    def two_agents_train(self, backend="c10d", endpoint=None):
        tmp = scratch_dir("ddprun_torch_")
        nodes = self.agents(tmp, [], [], backend, endpoint)
        outs = [n.communicate(timeout=TIMEOUT) for n in nodes]
        for n, (out, err) in zip(nodes, outs):
            self.assertEqual(n.returncode, 0, err)
        lines = [training_lines(out) for out, _ in outs]
        self.assertEqual(sorted(len(l) for l in lines), [0, 2], lines)
        self.assertTrue(os.path.exists(os.path.join(tmp, "ckpt.pt")))
        # One run for both agents: every rank's losses, whichever node it ran on.
        csv = ddprun("runs", "export", "torchjob", "--format", "csv", "--tracking_dir",
                     os.path.join(tmp, "ddprun-runs")).stdout
        ranks = sorted({l.split(",")[1] for l in csv.splitlines() if ",loss," in l})
        self.assertEqual(ranks, ["0", "1", "2", "3"], csv)

    def test_killed_worker_restarts_both_agents(self):
        tmp = scratch_dir("ddprun_torch_")
        # Global rank 3 is SIGKILLed mid-training in the first attempt; one restart.
        nodes = self.agents(tmp, ["--max_restarts=1"], ["--kill-rank", "3"])
        outs = [n.communicate(timeout=TIMEOUT) for n in nodes]
        for n, (out, err) in zip(nodes, outs):
            self.assertEqual(n.returncode, 0, err)
        self.assertIn("restarting, attempt 1 of 1", outs[0][1] + outs[1][1])
        self.assertEqual(sum(len(training_lines(out)) for out, _ in outs), 2)


class Environment(unittest.TestCase):
    def env_of(self, result):
        self.assertEqual(result.returncode, 0, result.stderr)
        env = {}
        for line in result.stdout.splitlines():
            rank, kv = line.split(" ", 1)
            key, value = kv.split("=", 1)
            env.setdefault(rank, {})[key] = value
        return env

    # What the newest torchrun sets (2.14), which older ones do not.
    NEWER = {"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1",
             "TORCHELASTIC_SIGNALS_TO_HANDLE": "SIGTERM,SIGINT,SIGHUP,SIGQUIT"}

    def test_same_variables_as_torchrun(self):
        # ddprun's workers import torch: its start-up hook gives a torch 1.x NCCL's old
        # variable then (torchrun 1.13 sets it itself).
        ours = self.env_of(run([DDPRUN, "--nproc_per_node=2", "--max_restarts=2", PRINT_ENV],
                               env=dict(os.environ, PRINT_ENV_IMPORT_TORCH="1")))
        theirs = self.env_of(torchrun("--nproc_per_node=2", "--max_restarts=2", PRINT_ENV))
        self.assertEqual(sorted(ours), ["0", "1"])
        for rank in ours:
            mine, ref = dict(ours[rank]), dict(theirs[rank])
            for key, value in self.NEWER.items():
                if key not in ref:
                    self.assertEqual(mine.pop(key), value)
            # Paths differ by their temporary directory only.
            for env in (mine, ref):
                path = env.pop("TORCHELASTIC_ERROR_FILE")
                self.assertTrue(path.endswith(f"/attempt_0/{rank}/error.json"), path)
            # Both agents host the store: on a free port (ddprun; torchrun 2.14), on 29500
            # (torchrun 1.13, 2.6).
            self.assertGreater(int(ref.pop("MASTER_PORT")), 0)
            self.assertGreater(int(mine.pop("MASTER_PORT")), 0)
            if ref["TORCHELASTIC_RUN_ID"] != "none":
                # torchrun 2.14 turns a single-node job without an endpoint into a
                # --standalone one (a fresh run id, its store at localhost); ddprun keeps
                # the static single node of 1.13 and 2.6 (README: What differs).
                self.assertRegex(ref.pop("TORCHELASTIC_RUN_ID"), r"^[0-9a-f-]{36}$")
                self.assertEqual(ref.pop("MASTER_ADDR"), "localhost")
                self.assertEqual(mine.pop("TORCHELASTIC_RUN_ID"), "none")
                self.assertEqual(mine.pop("MASTER_ADDR"), "127.0.0.1")
            self.assertEqual(mine, ref)


if __name__ == "__main__":
    unittest.main()
