"""Hosts torch's own TCPStore server for bench/store_bench: prints its port and serves
until standard input closes. Run with /usr/bin/python3 (torch 1.13) or with python3 in
the forky root (torch 2.14; Debian builds it without libuv)."""
import datetime
import sys

import torch.distributed as dist

try:
    store = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=300),
                          wait_for_workers=False)
except RuntimeError as e:  # Debian builds 2.x without libuv: its server before libuv
    if "libuv" not in str(e):
        raise
    store = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=300),
                          wait_for_workers=False, use_libuv=False)
print(store.port, flush=True)
sys.stdin.read()
