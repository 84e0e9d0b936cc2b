"""Runs Debian's torch 1.13 torchrun with its Python 3.11 defect worked around.

torch 1.13's Std.from_str("0") and ("3") return None under Python 3.11, so plain
torchrun crashes; this replaces it with a parser returning Std(int(v)) (or a map).
Usage: /usr/bin/python3 torchrun_compat.py [torchrun args...]
"""
import sys

from torch.distributed.elastic.multiprocessing import api
from torch.distributed.elastic.multiprocessing.api import Std


def _std_from_str(value):
    if ":" not in value:
        return Std(int(value))
    return {int(k): Std(int(v)) for k, v in (item.split(":") for item in value.split(","))}


api.Std.from_str = staticmethod(_std_from_str)

from torch.distributed import run  # noqa: E402

if __name__ == "__main__":
    sys.exit(run.main())
