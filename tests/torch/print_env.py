"""Prints the launcher-provided variables of this worker, one 'rank NAME=value' per line;
with PRINT_ENV_IMPORT_TORCH=1 once torch is imported (as in any real job: ddprun's
start-up hook acts on that).

Everything goes out in one write (well under PIPE_BUF): torchrun lets its workers
share the console, and separate writes of two workers can interleave mid-line.
"""
import os

if os.environ.get("PRINT_ENV_IMPORT_TORCH") == "1":
    import torch  # noqa: F401

NAMES = ("LOCAL_RANK", "RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE",
         "WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
         "OMP_NUM_THREADS")
ALSO = tuple(os.environ.get("PRINT_ENV_ALSO", "").split(","))  # more names to print
lines = [f"{os.environ['RANK']} {key}={os.environ[key]}\n" for key in sorted(os.environ)
         if key in NAMES + ALSO or key.startswith(("TORCHELASTIC_", "NCCL_", "TORCH_NCCL_"))]
os.write(1, "".join(lines).encode())
