"""Prints the launcher-provided variables of this worker, one 'rank NAME=value' per line."""
import os

NAMES = ("LOCAL_RANK", "RANK", "GROUP_RANK", "ROLE_RANK", "ROLE_NAME", "LOCAL_WORLD_SIZE",
         "WORLD_SIZE", "GROUP_WORLD_SIZE", "ROLE_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
         "OMP_NUM_THREADS")
for key in sorted(os.environ):
    if key in NAMES or key.startswith(("TORCHELASTIC_", "NCCL_", "TORCH_NCCL_")):
        print(os.environ["RANK"], f"{key}={os.environ[key]}")
