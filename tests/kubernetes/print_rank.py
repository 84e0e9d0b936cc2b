"""Stands in for train.py: prints the worker's torchrun variables on one line."""
import os

keys = ("RANK", "GROUP_RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")
print("rank " + " ".join(f"{k}={os.environ.get(k, '')}" for k in keys), flush=True)
