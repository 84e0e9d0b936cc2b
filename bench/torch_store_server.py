"""Hosts torch 1.13's own TCPStore server for bench/store_bench: prints its port and
serves until standard input closes. Run with /usr/bin/python3."""
import datetime
import sys

import torch.distributed as dist

store = dist.TCPStore("127.0.0.1", 0, 1, True, datetime.timedelta(seconds=300),
                      wait_for_workers=False)
print(store.port, flush=True)
sys.stdin.read()
