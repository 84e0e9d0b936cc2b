"""Runs the interpreter's own torchrun with what keeps it from running on Debian's
PyTorch worked around, and nothing else changed. Usage: python3 torchrun_compat.py [args...]

- torch 1.13: Std.from_str("0") and ("3") return None under Python 3.11, so plain torchrun
  crashes; this replaces it with a parser returning Std(int(v)) (or a map).
- torch 2.x: Debian builds PyTorch without libuv, while torchrun's stores ask for it, so
  Debian's own torchrun cannot start a job at all. Every TCPStore it makes is made
  without libuv; its workers, whose `env://` asks for libuv too, get ddprun's start-up
  hook (agent/python), which makes their store clients without libuv where refused.
"""
import os
import sys

import torch

HOOK = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                    "agent", "python")


def _patch_113():
    from torch.distributed.elastic.multiprocessing import api
    from torch.distributed.elastic.multiprocessing.api import Std

    def _std_from_str(value):
        if ":" not in value:
            return Std(int(value))
        return {int(k): Std(int(v)) for k, v in (item.split(":") for item in value.split(","))}

    api.Std.from_str = staticmethod(_std_from_str)


def _patch_2x():
    import torch.distributed as dist
    from torch.distributed import run  # noqa: F401 - loads every module that makes stores

    real = dist.TCPStore

    def without_libuv(*args, **kwargs):
        kwargs["use_libuv"] = False
        return real(*args, **kwargs)

    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("torch.distributed") and \
                getattr(module, "TCPStore", None) is real:
            module.TCPStore = without_libuv
    path = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = HOOK + (":" + path if path else "")


if torch.__version__.startswith("1."):
    _patch_113()
else:
    _patch_2x()

from torch.distributed import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run.main())
