"""Writes the flight-recorder dumps the unit tests read: what PyTorch 2.x writes to
TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank> (its dump's fields), pickled by Python's own
pickler at protocols 2 and 5, and once with every list and dict tagged with its type
as TorchScript's pickler writes them (torch.jit._pickle.restore_type_tag(value, type);
torch is not needed). Run with any python3 from this directory."""
import os
import pickle
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from torchscript_tags import tagged  # noqa: E402

sizes = [[1024]]  # shared by every entry: the pickler writes it once, then refers to it
frames = [{"name": "all_reduce", "filename": "distributed_c10d.py", "line": 2050}]
done = {"record_id": 0, "pg_id": 0, "process_group": ("0", "default_pg"),
        "collective_seq_id": 41, "p2p_seq_id": 0, "op_id": 41,
        "profiling_name": "nccl:all_reduce", "time_created_ns": 1700000000123456789,
        "duration_ms": 1.5, "input_sizes": sizes, "input_dtypes": ["Float"],
        "output_sizes": sizes, "state": "completed", "time_discovered_started_ns": None,
        "retired": True, "timeout_ms": 600000, "is_p2p": False, "frames": frames}
running = dict(done, record_id=1, collective_seq_id=42, op_id=42, state="started",
               retired=False, duration_ms=None)
send = dict(done, record_id=2, collective_seq_id=0, p2p_seq_id=3, op_id=43,
            profiling_name="nccl:send 0->1", is_p2p=True, state="scheduled")
other_group = dict(done, record_id=3, pg_id=1, process_group=("1", "tp"),
                   collective_seq_id=7, profiling_name="nccl:all_gather")
dump = {"version": "2.3",
        "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": "[0, 1]"}},
        "entries": [done, running, send, other_group]}
for protocol in (2, 5):
    with open(f"flight_record_protocol{protocol}.pickle", "wb") as f:
        pickle.dump(dump, f, protocol=protocol)
with open("flight_record_tagged.pickle", "wb") as f:
    pickle.dump(tagged(dump), f, protocol=2)
