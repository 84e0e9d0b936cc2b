"""Log metrics from any rank of a ddprun job to the job's shared run.

    import ddprun_tracking as run
    run.config({"lr": 0.1})
    run.log({"loss": 0.25}, step=10)
    run.summary({"best_acc": 0.91})
    run.heartbeat()                      # "still going", for code that logs rarely
    with run.section("checkpoint", timeout=600):
        save()                           # a known-long phase with its own hang timeout
    with run.waiting():
        exchange()                       # time spent waiting for the other ranks
    run.step()                           # one training step done (straggler detection)
    run.checkpoint(step=10)              # the state after step 10 is saved (goodput)

No dependencies; ddprun puts this module on PYTHONPATH. Outside ddprun (no
DDPRUN_TRACKING_STREAM in the environment) every call does nothing. Calls never block
training on I/O for long and never set the run's status: records are appended to this
process's stream file, flushed every DDPRUN_TRACKING_FLUSH seconds (default 1), when
the buffer grows, on flush() and at exit; the launcher ingests them.

Every call is also progress that ddprun watches (hang detection, metrics, straggler
detection): it lands in a shared page (DDPRUN_PROGRESS_FILE) with no system call.
PyTorch 2.0+ jobs need no step() or waiting(): ddprun times their optimizer steps
itself; a program that calls step() is timed by its own marks instead.
"""
import atexit
import contextlib
import json
import mmap
import os
import signal
import struct
import threading
import time

__all__ = ["log", "config", "summary", "heartbeat", "section", "step", "waiting", "checkpoint",
           "flush", "active"]

_PATH = os.environ.get("DDPRUN_TRACKING_STREAM")
_INTERVAL = float(os.environ.get("DDPRUN_TRACKING_FLUSH", "1"))
_MAX_BUFFER = 1000

# One encoder for every record (json.dumps with options builds a new one per call).
_encode = json.JSONEncoder(separators=(",", ":"), default=str).encode
_lock = threading.Lock()
_buffer = []
_seq = 0
_fd = None
_flusher = None


def _map_progress_page():
    path = os.environ.get("DDPRUN_PROGRESS_FILE")
    if not path:
        return None
    try:
        with open(path, "r+b") as f:
            size = os.fstat(f.fileno()).st_size
            if size < 128:
                return None
            # 256 bytes since goodput accounting; an older ddprun's page has 128.
            page = mmap.mmap(f.fileno(), 256 if size >= 256 else 128)
        return page if page[:8] == b"DDPRPG01" else None
    except (OSError, ValueError):
        return None


# The progress page (layout in ddprun's agent/hang/progress_page.h): beats at 8, the last
# step at 16, the section's timeout in ms at 24 and its name at 32.
_page = _map_progress_page()
_beats = 0
_pack_u64 = struct.Struct("<Q").pack_into
_pack_i64 = struct.Struct("<q").pack_into
_sections = []  # (name, timeout in ms) of the sections entered, innermost last
_NO_LIMIT = (1 << 64) - 1
# Step timing (straggler detection): steps at 96, their total time in ns at 104, of it
# the rank's own work (not in waiting()) at 112; at 120 who marks steps: 2, this program.
# Goodput accounting, on a page of 256 bytes: the first and the last step's end at 128
# and 136, the last checkpoint at 144 (wall clock, us) and its step at 152.
_pack_steps = struct.Struct("<QQQ").pack_into
_marks = _page is not None and len(_page) >= 160
_steps = [0, 0, 0]  # steps, step ns, own ns
_last_step_end = None
_waited = 0


def _beat(step=None):
    global _beats
    if _page is None:
        return
    _beats += 1
    _pack_u64(_page, 8, _beats)
    if step is not None:
        _pack_i64(_page, 16, int(step))


def _show_section():
    name, timeout_ms = _sections[-1] if _sections else ("", 0)
    _page[32:96] = name.encode()[:63].ljust(64, b"\0")
    _pack_u64(_page, 24, timeout_ms)


def heartbeat():
    """Tells ddprun this rank is making progress (for code that logs rarely). Costs
    less than log(): no record, no system call."""
    _beat()


@contextlib.contextmanager
def section(name, timeout=None):
    """A known-long phase (checkpointing, evaluation) with its own hang timeout in
    seconds (None: never counted as hung inside). Sections nest."""
    if _page is None:
        yield
        return
    ms = _NO_LIMIT if timeout is None else max(1, int(timeout * 1000))
    _sections.append((str(name), ms))
    _show_section()
    _beat()
    try:
        yield
    finally:
        _sections.pop()
        _show_section()
        _beat()


def step(step=None):
    """Marks the end of one training step: ddprun compares how long each rank works per
    step (outside waiting()) to name a rank that slows the others. `step`, if given, is
    the step's number, as in log(). Costs about a microsecond; no system call."""
    global _last_step_end, _waited
    _beat(step)
    if _page is None:
        return
    now = time.perf_counter_ns()
    _page[120] = 2  # ddprun's own step clock stands down
    if _marks:
        wall = time.time_ns() // 1000
        if _last_step_end is None:
            _pack_i64(_page, 128, wall)
        _pack_i64(_page, 136, wall)
    if _last_step_end is not None:
        took = now - _last_step_end
        _steps[0] += 1
        _steps[1] += took
        _steps[2] += max(0, took - _waited)
        _pack_steps(_page, 96, *_steps)
    _last_step_end = now
    _waited = 0


def checkpoint(step=None):
    """Says that the state after step `step` (as in log()) is durable now: a restart
    resumes from here, so ddprun counts the work after it, not before, as lost when a
    failure follows (goodput accounting). Call it once the checkpoint is written."""
    _beat(step)
    if _marks:
        _pack_i64(_page, 152, -(1 << 63) if step is None else int(step))
        _pack_i64(_page, 144, time.time_ns() // 1000)


@contextlib.contextmanager
def waiting():
    """Time spent waiting for the other ranks (a collective, a barrier): not counted as
    this rank's own work in its steps."""
    global _waited
    start = time.perf_counter_ns()
    try:
        yield
    finally:
        _waited += time.perf_counter_ns() - start


def active():
    """True when running under ddprun with tracking on."""
    return _PATH is not None


def _open():
    global _fd
    if _fd is None:
        os.makedirs(os.path.dirname(_PATH), exist_ok=True)
        _fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    return _fd


def _flush_loop():
    while True:
        time.sleep(_INTERVAL)
        flush()


def _append(record, numbered=False):
    """Buffers one record; a numbered one gets the next seq (file order = seq order)."""
    global _flusher, _seq
    with _lock:
        if numbered:
            _seq += 1
            record["seq"] = _seq
        _buffer.append(_encode(record) + "\n")
        full = len(_buffer) >= _MAX_BUFFER
        if _flusher is None:
            _flusher = threading.Thread(target=_flush_loop, name="ddprun-tracking", daemon=True)
            _flusher.start()
    if full:
        flush()


def _after_fork_in_child():
    # A forked child (a DataLoader worker...) starts clean: no copy of the parent's
    # pending records, a descriptor and a flusher thread of its own when it logs.
    global _lock, _flusher, _fd
    _lock = threading.Lock()
    _buffer.clear()
    _flusher = None
    _fd = None


def log(data, step=None):
    """Records the numeric values of `data` (other values are ignored by the run)."""
    _beat(step)
    if _PATH is None:
        return
    record = {"k": "log", "t": time.time(), "d": dict(data)}
    if step is not None:
        record["step"] = int(step)
    _append(record, numbered=True)


def config(data):
    """Records configuration values (any JSON value)."""
    _beat()
    if _PATH is not None:
        _append({"k": "config", "d": dict(data)})


def summary(data):
    """Records summary values (any JSON value)."""
    _beat()
    if _PATH is not None:
        _append({"k": "summary", "d": dict(data)})


def flush():
    """Writes buffered records to the stream now (one write: lines never tear apart)."""
    if _PATH is None:
        return
    with _lock:
        if not _buffer:
            return
        data = "".join(_buffer).encode()
        _buffer.clear()
        try:
            fd = _open()
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
        except OSError:
            pass  # tracking must never break training (disk full, ...)


def _flush_then_die(signum, frame):
    flush()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _flush_on_sigterm():
    # ddprun stops workers with SIGTERM, and Python skips atexit then: flush first,
    # then die of the signal as before. A program's own handler is left alone.
    try:
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _flush_then_die)
    except ValueError:
        pass  # imported outside the main thread


atexit.register(flush)
os.register_at_fork(after_in_child=_after_fork_in_child)
if _PATH is not None:
    _flush_on_sigterm()
