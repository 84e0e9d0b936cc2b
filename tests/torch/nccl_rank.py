"""Stands in for a rank of a torch 2.x NCCL job (no GPU here): it keeps PyTorch's
flight-recorder contract as PyTorch's ProcessGroupNCCL defines it, and hangs.

With TORCH_NCCL_TRACE_BUFFER_SIZE > 0 and TORCH_NCCL_DEBUG_INFO_PIPE_FILE set, a
monitor thread makes the FIFO <pipe file><rank>.pipe, opens it O_RDONLY|O_NONBLOCK
and reads it once a second; after a byte comes it writes the dump, pickled, to
TORCH_NCCL_DEBUG_INFO_TEMP_FILE<rank>, tagging every list and dict with its type as
TorchScript's pickler does (torch.jit._pickle.restore_type_tag(value, type), under
that name; torch itself is not imported). Every rank then sits in the same place (as
NCCL ranks all wait in the same synchronize), but rank --behind never called the
last all_reduce the others are waiting in. Attempts after the first finish at once.
"""
import argparse
import os
import pickle
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from torchscript_tags import tagged  # noqa: E402

RANK = int(os.environ["RANK"])


def flight_record(behind):
    """The dump's fields, as PyTorch's FlightRecorder writes them (version 2.3)."""
    last = 41 if behind else 42
    entries = []
    for seq in range(40, last + 1):
        entries.append({
            "record_id": seq, "pg_id": 0, "process_group": ("0", "default_pg"),
            "collective_seq_id": seq, "p2p_seq_id": 0, "op_id": seq,
            "profiling_name": "nccl:all_reduce", "time_created_ns": time.time_ns(),
            "duration_ms": None, "input_sizes": [[1024]], "input_dtypes": ["Float"],
            "output_sizes": [[1024]], "output_dtypes": ["Float"],
            "state": "started" if seq == 42 else "completed",
            "time_discovered_started_ns": None, "time_discovered_completed_ns": None,
            "retired": seq < 42, "timeout_ms": 600000, "is_p2p": False,
            "frames": [{"name": "all_reduce", "filename": "train.py", "line": 30}]})
    return {"version": "2.3", "pg_config": {}, "pg_status": {}, "entries": entries}


def monitor(behind):
    stem = os.environ.get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "")
    if not stem or int(os.environ.get("TORCH_NCCL_TRACE_BUFFER_SIZE", "0")) <= 0:
        return
    pipe = f"{stem}{RANK}.pipe"
    if os.path.exists(pipe):
        os.unlink(pipe)
    os.mkfifo(pipe, 0o666)
    fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    while True:
        time.sleep(1.0)  # TORCH_NCCL_COORD_CHECK_MILSEC's default
        try:
            asked = os.read(fd, 128)
        except BlockingIOError:
            asked = b""
        if asked:
            dump = os.environ.get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "/tmp/nccl_trace_rank_")
            with open(f"{dump}{RANK}", "wb") as f:
                f.write(pickle.dumps(tagged(flight_record(behind)), protocol=2))


def synchronize():
    while True:
        time.sleep(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--behind", type=int, default=1)
    args = parser.parse_args()
    if int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0:
        print(f"rank {RANK} finished attempt 1", flush=True)
        return
    threading.Thread(target=monitor, args=(RANK == args.behind,), daemon=True).start()
    print(f"rank {RANK} entered its collectives at {time.time():.6f}", flush=True)
    synchronize()


if __name__ == "__main__":
    sys.exit(main())
