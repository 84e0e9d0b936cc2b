#!/usr/bin/env python3
"""How ddprun's costs grow with the number of nodes: each step at growing sizes on this
machine, one table with the cost per size and the fitted growth exponent (cost ~ N^k;
k = 1 is linear).

    /usr/bin/python3 bench/scale_bench.py [--ddprun build/launcher/ddprun]
        [--agents 8,32,128,512,1024] [--etcd-agents 8,32,128,512,1024] [--backends c10d,etcd]
        [--sim 1024,2048,4096,8192,16384] [--sim-all-up-to 4096]
        [--etcd-sim 512,1024,2048,4096]
        [--repeat 1] [--markdown docs/scale-table.md]

Rows:
- rendezvous: real agents (one `/bin/sh` worker each, --no_tracking, all on
  127.0.0.1; over etcd, a 60 s lease: ETCD_LIVENESS), from the last agent's start until
  every worker has started;
- job end: the same job, whose workers, once every one has marked its start, exit
  together: from then to every agent gone (the finished nodes' barrier, the run
  closed); on etcd, with the requests etcd answered per agent over it;
- restart: the same job, where rank 1 dies in the first attempt once every worker of
  it has started: from its death to the last worker of the next attempt started;
- the round protocol alone (`ddprun_round_sim`): light joiners in 4 processes speaking
  the real protocol to a real store, no workers: a job's first round, then a restart
  (one node starts the next round after a failure, all join again; the others' waits
  to be told watch before the failure, over etcd until etcd counts a watcher for each
  in step with its newest revision, as agents' waits do while their workers run), then one
  interval of the running round's liveness reads and hang exchange (and the same with
  every node reading every member's keys, as agents did before), then a hang's
  exchange (every node shares a 16 KiB report, group rank 0 reads them all and shares
  its verdict, which every other node reads); the store requests per node
  beside it. One simulated node reads the whole state (as the primary agent
  does), the others their seats. The row of every node reading every member's keys
  grows as N² by design: it runs up to --sim-all-up-to nodes only. Before the round,
  the floor: every node sends as many plain requests (a read and a set in turn) to the
  same store at once. What the machine adds per request as the connections grow
  (the kernel's socket lookups, caches) shows there; each protocol row says its cost
  as a multiple of the floor at each size, and how that multiple grows. The same over
  etcd (`--etcd-sim`), a fresh member each run: each simulated node holds two
  connections, as an agent's joiner does. The floor's row also says the CPU of each
  simulated job's phases (connecting left out): per node for the sim's own processes,
  and over etcd, etcd's per request it answered (its /metrics), so that a growth in
  etcd's own cost per request shows apart from ddprun's. Each c10d row also says the
  store's own CPU in its step (the sim's process that serves it): on 2 cores the
  simulated nodes' own work is most of a step's time, and where the nodes are other
  machines, as in a job, the store's host spends only this; and the largest etcd size
  once more with its floor sent in 4 waves, to show what the requests in flight at
  once cost etcd.

- the process floor: at each real-agent size, the same processes with nothing to
  agree on: a shell (floor_agent.sh) in each agent's place, started as the agents
  are, each starting the same worker once the last has started; and its end, from
  those workers' exit, together, to every shell gone. The rendezvous and restart rows
  say their cost as a multiple of the first, the job end rows of the second: on 2
  cores, starting a thousand workers at once is most of a real-agent row, and how fast
  a machine forks and execs differs from one host to the next several times over.
  The floor and the rendezvous rows also say the machine's CPU (/proc/stat: every
  process on it) per agent or shell from the first one's start to every worker
  started: where it stays flat, so does the work per node, and once both cores are
  busy the time is that CPU over the cores.

- resources: each agent's resident memory, descriptors and threads once every worker
  runs, the store's host apart from the median of the others, and the CPU the host and
  all agents use while the workers run (--no-resources: not).

A size whose run fails (an agent exits non-zero, or the run outlasts 600 s) ends its
row: every agent of it is stopped, and the row's notes say FAILED with the first failed
agent's last line on stderr; the larger sizes of that row are not run, the other rows
are. A size whose process floor fails is left out of the multiples, which say so.
Each run's directory (but a failed one's, which keeps every agent's stderr) and each
etcd member's data are removed after it.

The machine's open-file limit bounds the largest size (each agent holds a store
connection and its worker's pipes; the host a connection from every agent).
"""
import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import rendezvous_bench as rb  # noqa: E402

# Each marker is written whole, then renamed: a worker stopped mid-write leaves none.
MARK = ('t=$(date +%s%N); f="$0/.$RANK.$TORCHELASTIC_RESTART_COUNT"; echo $t > "$f" && '
        'mv "$f" "$0/start.$RANK.$TORCHELASTIC_RESTART_COUNT"')
# Rank 1 dies in attempt 0 once every worker of it has marked its start (on 2 cores,
# a thousand agents' workers take longer to start than any fixed wait: a death among
# them would time the rest of that start too), writing when; its wait for the marks
# is the shell's own glob, a `sleep` between looks. The others sleep until they are
# stopped; attempt 1 only marks its start.
FAIL_ONCE = (MARK + '; if [ "$TORCHELASTIC_RESTART_COUNT" = 0 ]; then '
             'if [ "$RANK" = 1 ]; then d=$0; while set -- "$d"/start.*.0; '
             '[ "$#" -lt "$WORLD_SIZE" ]; do sleep 0.1; done; '
             'echo $(date +%s%N) > "$d/.died"; mv "$d/.died" "$d/died"; exit 1; fi; '
             'sleep 60; fi')


# Every worker marks its start, then waits (blocked, no CPU: a thousand polling shells
# starve the agents of 2 cores) for the lock the benchmark holds until it has looked
# at the agents.
HOLD = MARK + '; flock -s "$0/hold" true'
# Over etcd, the real agents keep their lease 60 s without an answer (12 keep-alive
# intervals of 5 s), not the default 15 s: at 1,024 agents, etcd, the agents and their
# workers share 2 cores here, and one keep-alive's answer in a few runs came after 15 s
# (etcd's queue of 1,024 joiners); the others then counted that agent gone and the job
# failed. The keep-alives' rate, and every request of a round, are the same.
ETCD_LIVENESS = ["--rdzv_conf=keep_alive_max_attempt=12"]


def agent_flags(kind, *flags):
    """The flags every real agent of a row runs with: no tracking, and etcd's liveness."""
    return ["--no_tracking", *(ETCD_LIVENESS if kind == "ddprun-etcd" else []), *flags]


# How long the agents' CPU is watched while every worker runs: several heartbeat
# intervals (1 s by default).
CPU_WINDOW_S = 10


def process_figures(pid):
    """(resident MiB, open descriptors, threads) of a running process; None once it has
    exited."""
    try:
        status = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status") if ":" in line)
        return (int(status["VmRSS"].split()[0]) / 1024, len(os.listdir(f"/proc/{pid}/fd")),
                int(status["Threads"]))
    except (OSError, KeyError):  # gone, or a zombie: no memory left to count
        return None


def cpu_seconds(pid):
    """User + system CPU seconds a process has used; None once it has exited."""
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def cpu_share(pids, seconds):
    """The CPU the processes `pids` use over `seconds` of a running job, as a share of
    one core: the store's host's and all of them together."""
    before = [cpu_seconds(p) for p in pids]
    time.sleep(seconds)
    after = [cpu_seconds(p) for p in pids]
    used = [a - b for a, b in zip(after, before) if a is not None and b is not None]
    host = after[0] - before[0] if after[0] is not None and before[0] is not None else 0.0
    return host / seconds, sum(used) / seconds


def agent_resources(ddprun, kind, n):
    """What the agents hold once every worker runs: the store's host (node 0) and the
    median of the others, each (MiB, descriptors, threads); and the CPU the host and
    all agents use while the job runs (heartbeats and liveness checks), each a share
    of one core."""
    seen = {}

    def look(pids):
        seen["cpu"] = cpu_share(pids, CPU_WINDOW_S)
        figures = [process_figures(pid) for pid in pids]
        others = [f for f in figures[1:] if f]
        if not figures[0] or not others:
            raise SystemExit(f"resources at {n}: the agents exited before every worker ran")
        seen["host"] = figures[0]
        seen["other"] = tuple(statistics.median(f[i] for f in others) for i in range(3))
        if len(others) < n - 1:
            print(f"# resources at {n}: {n - 1 - len(others)} agent(s) had exited",
                  file=sys.stderr, flush=True)

    _, d = rb.run_agents([ddprun], kind, n, HOLD, agent_flags(kind), while_running=look)
    rb.done_with(d)
    return seen["host"], seen["other"], seen["cpu"]


def failure_note(e):
    """A size whose run failed, for its row's notes (and at once on stderr): the larger
    sizes of that row are not run."""
    print(f"# {e}", file=sys.stderr, flush=True)
    return f"FAILED: {e}; larger sizes not run"


def growth(sizes, costs):
    """The exponent k of cost ~ size^k, least squares over log-log points."""
    pts = [(math.log(n), math.log(c)) for n, c in zip(sizes, costs) if c and c > 0]
    if len(pts) < 2:
        return float("nan")
    mx = sum(x for x, _ in pts) / len(pts)
    my = sum(y for _, y in pts) / len(pts)
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else float("nan")


def machine_cpu():
    """CPU seconds every core of this machine has been busy since boot (/proc/stat):
    what the agents, their workers, the store and etcd use together."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # less idle, iowait


def rendezvous_time(ddprun, kind, n, etcd=False):
    """(the last agent's start to every worker started, the workers' exit to every
    agent gone, the requests etcd answered per agent over that end and the keep-alives
    among them, or None, and the machine's CPU per agent from the first agent's start
    to every worker started): the workers, once every one has marked its start, exit
    together. `etcd`: read its counters at the workers' exit and after."""
    seen = {}

    def release(pids):  # the workers go on as soon as this returns
        seen["cpu"] = machine_cpu()
        seen["figures"] = etcd_figures() if etcd else None
        seen["at"] = time.time()

    cpu = machine_cpu()
    t, d = rb.run_agents([ddprun], kind, n, HOLD, agent_flags(kind), while_running=release)
    gone = time.time()
    rb.done_with(d)
    asked = None
    if etcd:
        after = etcd_figures()
        asked = tuple((after[i] - seen["figures"][i]) / n for i in (0, 2))
    return t, gone - seen["at"], asked, (seen["cpu"] - cpu) / n


def process_floor(n):
    """What the machine itself takes for a real-agent row's processes: n shells
    (floor_agent.sh) in the agents' place, started as the agents are, each starting the
    same worker once the last one has started (as a round forms once the last agent
    has joined), with nothing agreed. (From the last start to every worker started,
    from the workers' exit, together, to every shell gone, the machine's CPU per shell
    from the first start to every worker started.)"""
    seen = {}
    cpu = machine_cpu()
    with tempfile.TemporaryDirectory(prefix="ddprun_scale_floor_") as tmp:
        go = os.path.join(tmp, "go")
        os.mkfifo(go)
        opened = []  # the write end, held to the end: every shell's open() returns
        try:
            t, d = rb.run_agents([os.path.join(HERE, "floor_agent.sh"), go], "ddprun", n, HOLD,
                                 while_running=lambda pids: seen.update(
                                     at=time.time(), cpu=machine_cpu()),
                                 started=lambda: opened.append(os.open(go, os.O_RDWR)))
            gone = time.time()
            rb.done_with(d)
        finally:
            for fd in opened:
                os.close(fd)
    return t, gone - seen["at"], (seen["cpu"] - cpu) / n


def etcd_samples():
    """Each sample of etcd's /metrics now: (its name with its labels, its value)."""
    text = urllib.request.urlopen(f"http://{rb.ETCD}/metrics", timeout=10).read().decode()
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            yield name, float(value)


def etcd_figures():
    """(requests etcd has answered, its CPU seconds, the lease keep-alives among those
    requests) so far: from its /metrics. A keep-alive comes every interval whatever
    the job does: a job that lasts longer (more agents on this machine) asks more."""
    requests = cpu = keep_alives = 0.0
    for name, value in etcd_samples():
        if name.startswith("grpc_server_handled_total{"):
            requests += value
            if 'grpc_method="LeaseKeepAlive"' in name:
                keep_alives += value
        elif name == "process_cpu_seconds_total":
            cpu = value
    return requests, cpu, keep_alives


def restart_time(ddprun, kind, n):
    _, d = rb.run_agents([ddprun], kind, n, FAIL_ONCE, agent_flags(kind, "--max_restarts=1"))
    died = int(open(os.path.join(d, "died")).read()) / 1e9
    restarted = [int(open(os.path.join(d, f)).read()) / 1e9
                 for f in os.listdir(d) if f.startswith("start.") and f.endswith(".1")]
    rb.done_with(d)
    if len(restarted) != n:
        raise rb.AgentsFailed(f"restart at {n}: {len(restarted)} workers restarted, not {n}")
    return max(restarted) - died


def etcd_watching():
    """(the watchers etcd holds, those among them behind its newest revision): from its
    /metrics. etcd catches a watcher that is behind up by scanning every revision since
    its start, a few hundred watchers a pass."""
    got = dict(etcd_samples())
    return (got.get("etcd_debugging_mvcc_watcher_total", 0),
            got.get("etcd_debugging_mvcc_slow_watcher_total", 0))


def finish(run, member, nodes, limit=1800):
    """Starts the phases of the sim `run` and returns its (stdout, stderr) once it ends.
    Once every node's wait for the restart is sent (it says `armed`), and over etcd
    `member` once etcd watches for each of them in step with its newest revision (as for
    agents whose workers ran a while), starts the restart. SystemExit where `member`
    exits meanwhile (the joiners' calls would wait out their 300 s each), naming why, or
    where the sim runs past `limit` seconds."""
    until = time.time() + limit
    said, out = [], []
    armed = threading.Event()

    def read_said():
        for line in run.stderr:
            said.append(line)
            if line.strip() == "armed":
                armed.set()
        armed.set()  # it ended: nothing to wait for

    readers = [threading.Thread(target=read_said, daemon=True),
               threading.Thread(target=lambda: out.append(run.stdout.read()), daemon=True)]
    for reader in readers:
        reader.start()

    def going_on(at="no end"):
        why = member.gone() if member else None
        if why is None and time.time() < until:
            return
        run.kill()
        run.wait()
        raise SystemExit(f"round sim at {nodes} nodes: {why or f'{at} after {limit} s'}")

    def tell(line, last=False):
        try:
            run.stdin.write(line)
            run.stdin.flush()
            if last:
                run.stdin.close()
        except BrokenPipeError:  # it ended early: its exit status and stderr say why
            pass

    tell("start\n")
    while not armed.wait(5):
        going_on()
    while member and run.poll() is None:
        watchers, behind = etcd_watching()
        if watchers >= nodes - 1 and behind == 0:
            break
        going_on(f"etcd watching for {watchers:.0f} of the {nodes - 1} waits "
                 f"({behind:.0f} behind)")
        time.sleep(0.1)
    tell("restart\n", last=True)
    while True:
        try:
            run.wait(timeout=5)
            break
        except subprocess.TimeoutExpired:
            going_on()
    for reader in readers:
        reader.join()
    run.stdout.close()
    run.stderr.close()
    return out[0], "".join(said)


def round_sim(sim, nodes, watch="ring", etcd=False, floor_waves=1):
    """One simulated job: the first round, a restart, and one interval of the running
    round's liveness and hang exchange, each (seconds, requests per node, store CPU); `etcd`:
    over a fresh etcd member of its own (requests are not counted there). Then the
    CPU over those phases (connecting left out): (the sim's processes per node in ms
    (the joiners, and on c10d the store they meet at), etcd's per request it answered
    in us, or None). Each phase's triple ends with the store's own CPU seconds in it
    (c10d; None over etcd). `floor_waves`: the floor's nodes send in that many waves."""
    member = rb.start_etcd() if etcd else None
    try:
        if member:
            time.sleep(1.0)  # etcd elects itself
        extra = [f"--etcd={rb.ETCD}"] if member else []
        run = subprocess.Popen([sim, f"--nodes={nodes}", f"--watch={watch}", "--start-on-stdin",
                                f"--floor-waves={floor_waves}", *extra],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        said = []
        for line in run.stderr:  # its joiners connecting
            said.append(line)
            if line.strip() == "connected":
                break
        before = etcd_figures() if member else (0, 0)
        out, err = finish(run, member, nodes)
        after = etcd_figures() if member else (0, 0)
    finally:
        if member:
            member.stop(keep_log=member.gone() is not None)
    if run.returncode != 0:
        raise SystemExit(f"round sim at {nodes} nodes exited {run.returncode}: "
                         f"{(''.join(said) + err).strip()[-500:]}")
    r = json.loads(out.strip().splitlines()[-1])
    answered = after[0] - before[0]
    etcd_per_request = (after[1] - before[1]) / answered * 1e6 if answered else None
    store = r["store_cpu_seconds"] or {}
    return ((r["seconds"], r["requests_per_node"], store.get("round")),
            (r["restart_seconds"], r["restart_requests_per_node"], store.get("restart")),
            (r["watch_seconds"], r["watch_requests_per_node"], store.get("watch")),
            (r["floor_seconds"], FLOOR_REQUESTS, store.get("floor")),
            (r["cpu_seconds"] / nodes * 1e3, etcd_per_request),
            (r["hang_seconds"], r["hang_requests_per_node"], store.get("hang")))


def round_sim_median(sim, nodes, repeat, watch="ring", etcd=False):
    """round_sim() run `repeat` times: the median of each of its figures."""
    runs = [round_sim(sim, nodes, watch, etcd) for _ in range(repeat)]
    return tuple(tuple(statistics.median(r[i][k] or 0 for r in runs)
                       for k in range(len(runs[0][i]))) for i in range(6))


def sim_rows(backend, sizes, runs, in_waves=None):
    """The floor, the round, the restart and the running round's rows of simulated
    runs, each protocol row as a multiple of the floor. `in_waves`: (nodes, waves, a
    round_sim() run whose floor went in that many waves), said beside the floor."""
    floors = [r[3][0] for r in runs]
    if backend == "etcd":
        cpu = ("what etcd itself adds per request as connections grow: over each "
               "simulated job's phases, etcd's CPU per request it answered: " +
               ", ".join(f"{r[4][1]:.0f} us" for r in runs) + "; the joiners' CPU per node: " +
               ", ".join(f"{r[4][0]:.1f} ms" for r in runs))
        if in_waves:
            n, waves, run = in_waves
            cpu += (f"; {n} nodes' floor sent in {waves} waves ({n // waves} nodes' requests "
                    f"in flight at once, not {n}; the same connections and requests): "
                    f"{fmt(run[3][0])}")
    else:
        cpu = ("what the machine itself adds per request as connections grow; over each "
               "simulated job's phases, the CPU per node of the store and the joiners: " +
               ", ".join(f"{r[4][0]:.1f} ms" for r in runs))
    def store_cpu(i):
        """c10d: the store's own CPU in phase `i` (its host's, where the nodes are other
        machines: what bounds the step there), for a row's note."""
        if backend != "c10d":
            return ""
        return "; the store's own CPU: " + ", ".join(fmt(r[i][2]) for r in runs)
    rows = [(f"the floor: {FLOOR_REQUESTS} plain requests per node (a read and a set in "
             f"turn), every node at once ({backend}, simulated nodes)", sizes, floors,
             cpu + store_cpu(3))]
    steps = (("rendezvous: the round protocol alone", 0), ("restart: the round protocol alone", 1),
             ("a running round: one interval of liveness reads and the hang exchange", 2),
             ("a hang: every node's report (16 KiB) to group rank 0, its verdict to every node",
              5))
    for step, i in steps:
        costs = [r[i][0] for r in runs]
        counted = ("store requests per node: " + ", ".join(f"{r[i][1]:.1f}" for r in runs) + "; "
                   if backend == "c10d" else "")
        rows.append((f"{step} ({backend}, simulated nodes)", sizes, costs,
                     counted + beyond_floor(sizes, costs, floors) + store_cpu(i)))
    return rows


def cpu_per_node(cpus, node):
    """The machine's CPU per `node` (agent or shell) at each size, from the first one's
    start to every worker started: flat where the work per node is, whatever the time
    (on 2 cores, the time is that CPU over the cores once they are all busy); "" where
    no size ran."""
    if not cpus:
        return ""
    return (f"the machine's CPU per {node} from the first {node}'s start to every worker "
            "started: " + ", ".join(f"{c * 1000:.1f} ms" for c in cpus))


def per_agent(asked):
    """etcd's requests per agent at each size, (all, the keep-alives among them)."""
    return (", ".join(f"{a:.1f}" for a, _ in asked) + " (lease keep-alives among them: " +
            ", ".join(f"{k:.1f}" for _, k in asked) + ")")


def beyond_floor(sizes, costs, floors):
    """Each cost as a multiple of the floor at its size, and the growth exponent of
    that multiple (0: the step grows exactly as the machine's own floor does)."""
    ratios = [c / f for c, f in zip(costs, floors)]
    return (f"x the floor: {', '.join(f'{r:.1f}' for r in ratios)}; "
            f"growth beyond the floor: {growth(sizes, ratios):.2f}")


def beyond_process_floor(sizes, costs, floor_at, part):
    """beyond_floor() against the process floor's `part` (0: its start, 1: its end), run
    at each size that has a cost; a size whose floor failed is left out of it."""
    floored = [(n, c, f[part]) for n, c in zip(sizes, costs) if (f := floor_at(n))]
    note = beyond_floor(*zip(*floored)) if floored else ""
    missing = [str(n) for n in sizes if not floor_at(n)]
    return "; ".join(x for x in (note, missing and f"the floor FAILED at {', '.join(missing)}")
                     if x)


# The sim's floor phase: plain requests per node (kFloorRequests of round_sim_joiners.cc).
FLOOR_REQUESTS = 7


def fmt(seconds):
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.1f} s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ddprun", default=os.path.join(ROOT, "build", "launcher", "ddprun"))
    ap.add_argument("--sim", dest="sim_sizes", default="1024,2048,4096,8192,16384")
    ap.add_argument("--etcd-sim", dest="etcd_sim_sizes", default="512,1024,2048,4096",
                    help="the round protocol alone over etcd (a fresh member each run)")
    ap.add_argument("--sim-all-up-to", type=int, default=4096,
                    help="the largest size of the every-node-reads-every-key row (N² reads)")
    ap.add_argument("--round-sim", default=os.path.join(ROOT, "build", "bench", "ddprun_round_sim"))
    ap.add_argument("--agents", default="8,32,128,512,1024")
    ap.add_argument("--backends", default="c10d,etcd")
    ap.add_argument("--etcd-agents", default="8,32,128,512,1024",
                    help="etcd's sizes (one local etcd member)")
    ap.add_argument("--restarts", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--resources", action=argparse.BooleanOptionalAction, default=True,
                    help="the agents' memory, descriptors and threads at each c10d size")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs per size, real agents and simulated (the median is shown)")
    ap.add_argument("--markdown", help="also write the table to this file")
    args = ap.parse_args()
    sizes = [int(x) for x in args.agents.split(",") if x]
    backends = [b for b in args.backends.split(",") if b]  # none: the simulated rows only
    unknown = [b for b in backends if b not in ("c10d", "etcd")]
    if unknown:
        sys.exit(f"scale_bench: --backends {','.join(unknown)}: expected c10d, etcd or both")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    rows = []
    floors = {}  # size: the process floor's medians (start, end, CPU), where a row runs it

    def floor_at(n):
        """The process floor's medians at n, (start, end, the machine's CPU per shell),
        run once per size; None where a floor shell failed (the rows then say so, and
        run on)."""
        if n not in floors:
            try:
                runs = [process_floor(n) for _ in range(args.repeat)]
                floors[n] = tuple(statistics.median(r[i] for r in runs) for i in range(3))
                print(f"# process floor {n}: {fmt(floors[n][0])}, its end {fmt(floors[n][1])}",
                      file=sys.stderr, flush=True)
            except rb.AgentsFailed as e:
                floors[n] = None
                print(f"# process floor {n}: {failure_note(e)}", file=sys.stderr, flush=True)
        return floors[n]

    etcd = rb.start_etcd() if "etcd" in backends else None
    try:
        if etcd:
            time.sleep(1.0)  # etcd elects itself
        for backend in backends:
            kind = "ddprun" if backend == "c10d" else "ddprun-etcd"
            ns = sizes if backend == "c10d" else [int(x) for x in args.etcd_agents.split(",") if x]
            costs, ends, end_asked, cpus = [], [], [], []
            on_etcd = bool(etcd) and backend == "etcd"
            failed = ""
            for n in ns:
                try:
                    runs = [rendezvous_time(args.ddprun, kind, n, on_etcd)
                            for _ in range(args.repeat)]
                except rb.AgentsFailed as e:
                    failed = failure_note(e)
                    break
                costs.append(statistics.median(r[0] for r in runs))
                ends.append(statistics.median(r[1] for r in runs))
                cpus.append(statistics.median(r[3] for r in runs))
                if on_etcd:
                    end_asked.append(tuple(statistics.median(r[2][i] for r in runs)
                                           for i in range(2)))
                print(f"# rendezvous {backend} {n}: {fmt(costs[-1])}, job end {fmt(ends[-1])}",
                      file=sys.stderr, flush=True)
            done = ns[:len(costs)]
            rows.append((f"rendezvous ({backend}, real agents)", done, costs,
                         "; ".join(x for x in (beyond_process_floor(done, costs, floor_at, 0),
                                               cpu_per_node(cpus, "agent"), failed) if x)))
            rows.append((f"job end ({backend}, real agents)", done, ends,
                         "the workers' exit, together, to every agent gone" +
                         ("; etcd requests per agent over it: " +
                          per_agent(end_asked) if end_asked else "") +
                         "".join(f"; {x}" for x in (beyond_process_floor(done, ends, floor_at, 1),
                                                    failed) if x)))
            if args.restarts:
                costs, asked, cpu = [], [], []
                failed = ""
                for n in done:
                    runs = []
                    try:
                        for _ in range(args.repeat):
                            before = etcd_figures() if on_etcd else (0, 0, 0)
                            t = restart_time(args.ddprun, kind, n)
                            after = etcd_figures() if on_etcd else (0, 0, 0)
                            runs.append((t, (after[0] - before[0]) / n, after[1] - before[1],
                                         (after[2] - before[2]) / n))
                    except rb.AgentsFailed as e:
                        failed = failure_note(e)
                        break
                    costs.append(statistics.median(r[0] for r in runs))
                    asked.append((statistics.median(r[1] for r in runs),
                                  statistics.median(r[3] for r in runs)))
                    cpu.append(statistics.median(r[2] for r in runs))
                    print(f"# restart {backend} {n}: {fmt(costs[-1])}", file=sys.stderr, flush=True)
                restarted = done[:len(costs)]
                rows.append((f"restart ({backend}, real agents)", restarted, costs,
                             "; ".join(x for x in (beyond_process_floor(restarted, costs,
                                                                        floor_at, 0), failed) if x)))
                if on_etcd:
                    rows.append(("etcd's CPU for the whole job of the restart row (real agents)",
                                 restarted, cpu, "etcd requests per agent over that job: " +
                                 per_agent(asked) + "; etcd's CPU per request: " +
                                 ", ".join(f"{c / (a * n) * 1e6:.0f} us" for
                                           c, (a, _), n in zip(cpu, asked, restarted))))
    finally:
        if etcd:
            etcd.stop()
    ns = sorted(n for n, f in floors.items() if f)
    if ns:
        rows.insert(0, ("the floor: the same processes, a shell in each agent's place, each "
                        "starting its worker once the last has started (real processes, "
                        "nothing agreed)", ns, [floors[n][0] for n in ns],
                        "what starting the workers costs this machine; the real-agent "
                        "rendezvous and restart rows say their cost as a multiple of it; " +
                        cpu_per_node([floors[n][2] for n in ns], "shell")))
        rows.insert(1, ("the floor of the job's end: the same shells' workers exit together, "
                        "to every shell gone", ns, [floors[n][1] for n in ns],
                        "the job end rows say their cost as a multiple of it"))
    sim_sizes = [int(x) for x in args.sim_sizes.split(",") if x]
    if sim_sizes and os.path.exists(args.round_sim):
        runs, every = [], []
        every_sizes = [n for n in sim_sizes if n <= args.sim_all_up_to]
        for n in sim_sizes:
            runs.append(round_sim_median(args.round_sim, n, args.repeat))
            if n in every_sizes:
                every.append(round_sim(args.round_sim, n, "all")[2])
            print(f"# round sim {n}: join {fmt(runs[-1][0][0])}, restart {fmt(runs[-1][1][0])}, "
                  f"watch {fmt(runs[-1][2][0])}", file=sys.stderr, flush=True)
        rows += sim_rows("c10d", sim_sizes, runs)
        rows.append(("the same with every node reading every member's keys (how agents "
                     "watched before)", every_sizes, [w[0] for w in every],
                     "store requests per node: " + ", ".join(f"{w[1]:.1f}" for w in every)))
    elif sim_sizes:
        print(f"# no {args.round_sim}: the simulated rows are left out", file=sys.stderr)
    etcd_sim_sizes = [int(x) for x in args.etcd_sim_sizes.split(",") if x]
    if etcd_sim_sizes and os.path.exists(args.round_sim) and "etcd" in backends:
        runs = []
        for n in etcd_sim_sizes:
            runs.append(round_sim_median(args.round_sim, n, args.repeat, etcd=True))
            print(f"# round sim on etcd {n}: join {fmt(runs[-1][0][0])}, restart "
                  f"{fmt(runs[-1][1][0])}, floor {fmt(runs[-1][3][0])}", file=sys.stderr, flush=True)
        largest = etcd_sim_sizes[-1]
        in_waves = (largest, 4, round_sim(args.round_sim, largest, etcd=True, floor_waves=4))
        rows += sim_rows("etcd", etcd_sim_sizes, runs, in_waves)
    # The fit over every size, and between the two largest: a cost that turns
    # quadratic only at the top shows there first.
    lines = ["| step | sizes | cost per size | growth exponent (all sizes) | "
             "between the two largest | notes |", "|---|---|---|---|---|---|"]
    for name, ns, costs, notes in rows:
        if not ns:
            if notes:
                lines.append(f"| {name} | - | - | - | - | {notes} |")
            continue
        lines.append(f"| {name} | {', '.join(map(str, ns))} | {', '.join(fmt(c) for c in costs)} | "
                     f"{growth(ns, costs):.2f} | {growth(ns[-2:], costs[-2:]):.2f} | {notes} |")
    if args.resources:
        lines += ["", "What each agent holds once every worker runs (c10d; one `/bin/sh` worker "
                  "each, --no_tracking): the store's host, node 0, serves every agent's "
                  "connections; the others' median beside it.", "",
                  "| agents | host: resident | host: descriptors | host: threads | "
                  "other agents: resident | descriptors | threads | "
                  f"CPU while running ({CPU_WINDOW_S} s): host | all agents |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for n in sizes:
            host, other, cpu = agent_resources(args.ddprun, "ddprun", n)
            lines.append(f"| {n} | {host[0]:.1f} MiB | {host[1]} | {host[2]} | "
                         f"{other[0]:.1f} MiB | {other[1]:.0f} | {other[2]:.0f} | "
                         f"{100 * cpu[0]:.1f}% | {100 * cpu[1]:.1f}% |")
            print(f"# resources {n}: {lines[-1]}", file=sys.stderr, flush=True)
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table + "\n")


if __name__ == "__main__":
    main()
