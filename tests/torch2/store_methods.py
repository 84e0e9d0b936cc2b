"""Every method of the interpreter's torch.distributed.TCPStore, through torch's own
client, against the store the launcher hosts for its workers (MASTER_ADDR:MASTER_PORT,
TORCHELASTIC_USE_AGENT_STORE=True): run it as a worker of ddprun (any number of them).

Prints one 'ok METHOD' line per method checked, 'unsupported METHOD: why' where torch's
own client refuses a method (queues on the legacy, non-libuv client), and last
'store_methods: N checked, M unsupported (torch VERSION, libuv client: yes|no)'. Exits 1
at the first answer that is wrong.
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist

RANK = int(os.environ["RANK"])
WORLD = int(os.environ["WORLD_SIZE"])
TIMEOUT = datetime.timedelta(seconds=30)
checked, unsupported = [], []


def client():
    """A plain client of the agent's store, with libuv where the build has it."""
    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    try:
        return dist.TCPStore(host, port, WORLD, False, TIMEOUT), True
    except RuntimeError as e:
        if "without libuv" not in str(e):
            raise
    return dist.TCPStore(host, port, WORLD, False, TIMEOUT, use_libuv=False), False


def expect(method, got, want):
    if got != want:
        print(f"WRONG {method}: got {got!r}, want {want!r}", flush=True)
        sys.exit(1)
    if method not in checked:
        checked.append(method)
        print(f"ok {method}", flush=True)


def main():
    s, libuv = client()
    k = f"rank{RANK}/"  # every rank works on its own keys, then they meet
    s.set(k + "a", "1")
    expect("set/get", s.get(k + "a"), b"1")
    expect("add", s.add(k + "n", 5), 5)
    expect("add", s.add(k + "n", -2), 3)
    expect("compare_set", s.compare_set(k + "c", "", "x"), b"x")
    expect("compare_set", s.compare_set(k + "c", "y", "z"), b"x")
    expect("compare_set", s.compare_set(k + "c", "x", "z"), b"z")
    s.wait([k + "a", k + "n"])
    s.wait([k + "a"], datetime.timedelta(seconds=5))
    expect("wait", True, True)
    s.set_timeout(datetime.timedelta(milliseconds=300))
    try:
        s.wait([k + "never"])
        expect("wait (timeout)", "returned", "timed out")
    except (RuntimeError, dist.DistError):
        expect("wait (timeout)", True, True)
    s.set_timeout(TIMEOUT)
    expect("timeout", s.timeout, TIMEOUT)
    expect("delete_key", s.delete_key(k + "c"), True)
    expect("delete_key", s.delete_key(k + "c"), False)
    expect("num_keys", s.num_keys() >= 3, True)
    if hasattr(s, "check"):
        expect("check", s.check([k + "a", k + "n"]), True)
        expect("check", s.check([k + "missing"]), False)
    if hasattr(s, "append"):
        s.append(k + "log", "ab")
        s.append(k + "log", "cd")
        expect("append", s.get(k + "log"), b"abcd")
    if hasattr(s, "multi_set"):
        s.multi_set([k + "m1", k + "m2"], ["v1", "v2"])
        expect("multi_set/multi_get", s.multi_get([k + "m2", k + "m1"]), [b"v2", b"v1"])
    if hasattr(s, "has_extended_api"):
        expect("has_extended_api", s.has_extended_api(), True)
    if hasattr(s, "list_keys"):
        keys = s.list_keys()
        expect("list_keys", {k + "a", k + "n", k + "log"} <= set(keys), True)
    if hasattr(s, "clone"):
        c = s.clone()
        c.set(k + "from_clone", "yes")
        expect("clone", s.get(k + "from_clone"), b"yes")
    if hasattr(s, "queue_push"):
        try:
            s.queue_push(k + "q", "first")
            s.queue_push(k + "q", "second")
            expect("queue_len", s.queue_len(k + "q"), 2)
            expect("queue_push/queue_pop", s.queue_pop(k + "q"), b"first")
            expect("queue_push/queue_pop", s.queue_pop(k + "q", block=False), b"second")
        except (RuntimeError, dist.DistError) as e:
            if libuv:
                raise
            unsupported.append("queue_push/queue_pop/queue_len")
            print(f"unsupported queue_push/queue_pop/queue_len: {e}".splitlines()[0], flush=True)
    # Every rank sees every other's keys, and waits for the ones still to come.
    expect("add (shared)", s.add("ranks_done", 1) <= WORLD, True)
    s.set(f"done/{RANK}", str(RANK))
    s.wait([f"done/{r}" for r in range(WORLD)])
    expect("get (another rank's)", s.get(f"done/{(RANK + 1) % WORLD}"), str((RANK + 1) % WORLD).encode())
    if hasattr(s, "barrier"):  # every rank leaves only once all came
        s.barrier("everyone", WORLD)
        expect("barrier", s.add("everyone/left", 1) <= WORLD and s.check(["done/0"]), True)
    print(f"store_methods: {len(checked)} checked, {len(unsupported)} unsupported "
          f"(torch {torch.__version__}, libuv client: {'yes' if libuv else 'no'})", flush=True)


if __name__ == "__main__":
    main()
