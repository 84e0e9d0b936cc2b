"""Processes as the Python tests see them through /proc."""
import os
import time


def alive(pid):
    """True while `pid` exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def eventually(condition, timeout):
    """Polls `condition` every 50 ms until it holds (True) or `timeout` s pass (False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def worker_pids(directory, count, proc, timeout=60):
    """The pids workers 0..count-1 wrote to DIRECTORY/pid.<rank>, once every file is
    there; None if the process `proc` (a Popen) ended first or `timeout` s passed."""
    files = [os.path.join(directory, f"pid.{r}") for r in range(count)]
    eventually(lambda: all(map(os.path.exists, files)) or proc.poll() is not None, timeout)
    if not all(map(os.path.exists, files)):
        return None
    pids = []
    for path in files:
        with open(path) as f:
            pids.append(int(f.read()))
    return pids


def children_of(pids):
    """Every descendant of `pids`, by /proc's parent links."""
    parent = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                parent[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            pass
    found, frontier = set(), set(pids)
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier and p not in found}
        found |= frontier
    return found
