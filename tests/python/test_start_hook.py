"""ddprun's start-up hook for Python workers (agent/python/sitecustomize.py) against a
stand-in torch package, so that it is checked wherever the suite runs (the torch2 tests
check it with Debian's real PyTorch 2.6 and 2.14): the rendezvous module's stores are
made again without libuv where, and only where, the build refuses libuv; a torch 1.x
gets NCCL's old variable; nothing of torch is imported by the hook itself.
"""
import os
import subprocess
import sys
import tempfile
import unittest

HOOK = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "agent", "python")

# A torch whose TCPStore refuses libuv as Debian's build does (or not, with libuv), and
# whose rendezvous module calls it as PyTorch 2.6-2.14's agent-store path does.
FAKE = {
    "torch/__init__.py": "from .version import __version__\n",
    "torch/version.py": "__version__ = {version!r}\n",
    "torch/distributed/__init__.py": "",
    "torch/distributed/store.py": (
        "HAS_LIBUV = {libuv}\n"
        "class TCPStore:\n"
        "    def __init__(self, host_name, port, *args, use_libuv=True, **kw):\n"
        "        if use_libuv and not HAS_LIBUV:\n"
        "            raise RuntimeError('use_libuv was requested but PyTorch was build without "
        "libuv support')\n"
        "        if host_name == 'bad':\n"
        "            raise RuntimeError('connection refused')\n"
        "        self.libuv = use_libuv\n"),
    "torch/distributed/rendezvous.py": (
        "from torch.distributed.store import TCPStore\n"
        "def agent_store(host):\n"
        "    return TCPStore(host_name=host, port=1, world_size=2, is_master=False)\n"),
}

PROBE = """
import os, sys
before = set(sys.modules)
import sitecustomize  # noqa: F401 - what Python did at start-up, made explicit
assert not any(m.startswith("torch") for m in sys.modules), "the hook imported torch"
import torch.distributed.rendezvous as r
from torch.distributed.store import TCPStore
print("libuv", r.agent_store("ok").libuv)
try:
    print("direct", TCPStore("ok", 1).libuv)
except RuntimeError:
    print("direct", "refused")  # a store the script makes itself is left alone
try:
    r.agent_store("bad")
except RuntimeError as e:
    print("error", e)
print("nccl", os.environ.get("NCCL_ASYNC_ERROR_HANDLING"))
"""


def run_with(version, libuv, env=None):
    root = tempfile.mkdtemp(prefix="ddprun_hook_")
    for path, text in FAKE.items():
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), "w") as f:
            f.write(text.format(version=version, libuv=libuv))
    e = dict(os.environ, PYTHONPATH=f"{HOOK}:{root}", PYTHONDONTWRITEBYTECODE="1", **(env or {}))
    e.pop("NCCL_ASYNC_ERROR_HANDLING", None)
    e.update(env or {})
    out = subprocess.run([sys.executable, "-c", PROBE], env=e,
                         capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError(out.stderr)
    return dict(line.split(" ", 1) for line in out.stdout.splitlines())


class StartHook(unittest.TestCase):
    def test_a_build_without_libuv_gets_a_store_without_it(self):
        got = run_with("2.14.1", libuv=False, env={"TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"})
        self.assertEqual(got["libuv"], "False")
        self.assertEqual(got["direct"], "refused")
        self.assertEqual(got["error"], "connection refused")  # other errors pass as they are
        self.assertEqual(got["nccl"], "None")  # 2.x: the old name stays unset

    def test_a_build_with_libuv_is_left_alone(self):
        got = run_with("2.11.0", libuv=True)
        self.assertEqual(got["libuv"], "True")
        self.assertEqual(got["direct"], "True")

    def test_torch_1_gets_nccls_old_name_with_the_new_ones_value(self):
        got = run_with("1.13.0", libuv=True, env={"TORCH_NCCL_ASYNC_ERROR_HANDLING": "3"})
        self.assertEqual(got["nccl"], "3")
        got = run_with("1.13.0", libuv=True, env={"NCCL_ASYNC_ERROR_HANDLING": "0"})
        self.assertEqual(got["nccl"], "0")  # the job's own value wins


if __name__ == "__main__":
    unittest.main()
