"""Log metrics from any rank of a ddprun job to the job's shared run.

    import ddprun_tracking as run
    run.config({"lr": 0.1})
    run.log({"loss": 0.25}, step=10)
    run.summary({"best_acc": 0.91})

No dependencies; ddprun puts this module on PYTHONPATH. Outside ddprun (no
DDPRUN_TRACKING_STREAM in the environment) every call does nothing. Calls never block
training on I/O for long and never set the run's status: records are appended to this
process's stream file, flushed every DDPRUN_TRACKING_FLUSH seconds (default 1), when
the buffer grows, on flush() and at exit; the launcher ingests them.
"""
import atexit
import json
import os
import signal
import threading
import time

__all__ = ["log", "config", "summary", "flush", "active"]

_PATH = os.environ.get("DDPRUN_TRACKING_STREAM")
_INTERVAL = float(os.environ.get("DDPRUN_TRACKING_FLUSH", "1"))
_MAX_BUFFER = 1000

_lock = threading.Lock()
_buffer = []
_seq = 0
_fd = None
_pid = None
_flusher = None


def active():
    """True when running under ddprun with tracking on."""
    return _PATH is not None


def _open():
    global _fd, _pid
    if _fd is None or _pid != os.getpid():  # a forked child gets a descriptor of its own
        os.makedirs(os.path.dirname(_PATH), exist_ok=True)
        _fd = os.open(_PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        _pid = os.getpid()
    return _fd


def _flush_loop():
    while True:
        time.sleep(_INTERVAL)
        flush()


def _append(record):
    global _flusher
    line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
    with _lock:
        _buffer.append(line)
        full = len(_buffer) >= _MAX_BUFFER
        if _flusher is None or _pid_changed():
            _flusher = threading.Thread(target=_flush_loop, name="ddprun-tracking", daemon=True)
            _flusher.start()
    if full:
        flush()


def _pid_changed():
    return _pid is not None and _pid != os.getpid()


def log(data, step=None):
    """Records the numeric values of `data` (other values are ignored by the run)."""
    global _seq
    if _PATH is None:
        return
    with _lock:
        _seq += 1
        seq = _seq
    record = {"k": "log", "seq": seq, "t": time.time(), "d": dict(data)}
    if step is not None:
        record["step"] = int(step)
    _append(record)


def config(data):
    """Records configuration values (any JSON value)."""
    if _PATH is not None:
        _append({"k": "config", "d": dict(data)})


def summary(data):
    """Records summary values (any JSON value)."""
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
if _PATH is not None:
    _flush_on_sigterm()
