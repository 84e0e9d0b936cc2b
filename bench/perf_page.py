#!/usr/bin/env python3
"""docs/performance.md, made from the benchmarks' recorded results.

    /usr/bin/python3 bench/perf_page.py record NAME... | all   runs each benchmark, keeps
                                                              its result in bench/results/
    /usr/bin/python3 bench/perf_page.py render > docs/performance.md
    /usr/bin/python3 bench/perf_page.py check docs/performance.md   (the suite's check)

A result (bench/results/NAME.json) holds what the benchmark printed (Markdown tables),
the command, the date, the machine and the commit it was measured at. The page holds
those tables, each under its benchmark's one paragraph of method; nothing on it is
written by hand, so it cannot drift from what was measured. Record again after a
change to what a benchmark measures, and commit the result with the page.
"""
import datetime
import json
import os
import platform
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
RESULTS = os.path.join(HERE, "results")
PY = "/usr/bin/python3"
PORTABLE = "build-clang/launcher/ddprun"  # what users install (scripts/test.sh builds it)

# name: (title, command from the repository's root, one paragraph of method). In the
# order of the page.
BENCHES = {
    "launch": (
        "Launch, restart and memory on one node",
        [PY, "bench/launch_bench.py", "--ddprun", PORTABLE],
        "Side by side in one run with torchrun and with the floor: the same programs "
        "started by a shell (`sh -c 'P & P & ... wait'`), which no launcher can beat. "
        "Each run is timed from its fork to its reaping by a small C program of the "
        "build's (`bench/timed_run.cc`), so nothing else's start-up is counted; the "
        "launchers take turns and the figures are medians. torchrun 1.13 is the "
        "machine's; 2.14 is Debian forky's, run inside its root (`bench/torch_refs.py`). "
        "ddprun is the portable file users install, tracking on."),
    "rendezvous": (
        "Elastic rendezvous and restarts across nodes",
        [PY, "bench/rendezvous_bench.py", "--ddprun", PORTABLE],
        "N agents on 127.0.0.1, one worker each, timed from the last agent's start until "
        "every worker runs (workers write a timestamp); ddprun's etcd backend against one "
        "local etcd member the benchmark starts. ddprun's columns are medians of 5 "
        "interleaved runs; a torchrun agent costs ~235 MiB and ~1 s of CPU, so torchrun "
        "is measured once and at small sizes. The restart is a worker's death to the "
        "last restarted worker's start, across 2 agents."),
    "scale": (
        "How costs grow with the number of nodes",
        [PY, "bench/scale_bench.py", "--ddprun", PORTABLE, "--repeat", "3"],
        "Each step at growing sizes on this 2-core machine, with the exponent k of a "
        "least-squares fit of cost ~ N^k (1 is linear). Real agents on 127.0.0.1 with one "
        "`/bin/sh` worker each, `--no_tracking`: the rendezvous from the last agent's start "
        "to every worker running, the job's end from the workers' exit to every agent gone "
        "(once every worker started, they all exit together), and a restart from rank 1's "
        "death (once every worker of the first attempt runs) to every worker of the next "
        "attempt running (the median of 3 runs per size). Their "
        "floor, first: the same processes with nothing to agree on, a shell in each "
        "agent's place starting the same worker once the last has started "
        "(`bench/floor_agent.sh`), and its end, from those workers' exit, together, to "
        "every shell gone; the rendezvous and restart rows say their cost as a multiple "
        "of the first, the job end rows of the second, since how fast a host forks and "
        "execs differs several times over from one host to the next. The floor and the "
        "rendezvous rows also say the machine's CPU per agent (or shell) from the first "
        "one's start to every worker running (`/proc/stat`: every process on the machine "
        "together): where it stays flat, the work per node does, and once both cores are "
        "busy the time is that CPU over the cores. Over etcd the agents "
        "keep a 60 s lease (`--rdzv_conf=keep_alive_max_attempt=12`, 15 s by default): "
        "with 1,024 agents, their workers and etcd on 2 cores, a keep-alive's answer came "
        "after 15 s in some runs, and the others dropped that agent; the keep-alives' rate "
        "is the same. First among the simulated rows, the floor: "
        "every node sends as many plain requests (reads "
        "and sets in turn) to the same store at once; each protocol row says its "
        "cost as a multiple of it. The round protocol alone: light "
        "joiners in 4 processes speaking the real protocol to the real store "
        "(`bench/round_sim.cc`), from all connected to all in the completed round, with "
        "the store requests each node made, and the store's own CPU in it (the process "
        "that serves it: on 2 cores the simulated nodes' own work is most of the time, "
        "and where the nodes are other machines, as in a job, the store's host spends "
        "only this). A joining node announces itself and waits "
        "on the state's head (a few bytes) while the first to announce writes the others "
        "in and completes the round, then writes each member's seat; each node then reads "
        "its seat (a few hundred bytes), one node (as the primary agent) the whole state. "
        "Then a restart, from one node's failure to all in the next round, every other "
        "node's wait to be told watching before it (over etcd, until etcd counts a watcher "
        "for each, in step with its newest revision), as agents' waits are while their "
        "workers run. Then one interval of what a running "
        "round's nodes ask (a heartbeat, the liveness keys of the members each watches, "
        "hang detection's shared maximum), all nodes at once, beside the same with every "
        "node reading every member's keys, as agents did before; then a hang's exchange "
        "(every node shares a 16 KiB report, group rank 0 reads them all and shares its "
        "verdict, which every other node reads). The same simulated job "
        "over etcd, a fresh local member each run (each node two connections, as an agent's "
        "joiner has), beside etcd's own floor, with etcd's CPU per request it answered "
        "(its /metrics) and the joiners' CPU per node over each whole simulated job. Last, "
        "what each agent "
        "holds once every worker runs, and the CPU the store's host and all agents use "
        "over 10 s of a running job (heartbeats and liveness checks)."),
    "spares": (
        "Back to full size after a node dies: hot spares",
        [PY, "bench/spare_bench.py", "--ddprun", PORTABLE],
        "8 agents on 127.0.0.1 (`--nnodes=7:8`, one worker each), every launcher's "
        "liveness set alike (a node is judged dead after about 3 s without a heartbeat; "
        "torchrun polls every 0.1 s). A member's agent and worker are SIGKILLed together, "
        "as when a host goes down. With a ninth agent waiting as a spare: the death to 8 "
        "workers of a new round running. Without one: the death to the 7 survivors "
        "running again, then a new agent's start to 8 running. ddprun's figures are "
        "medians of 3 runs, torchrun's one run. Most of the first two is the liveness "
        "timeout the job chose."),
    "store": (
        "The TCPStore server",
        ["build/bench/ddprun_store_bench"],
        "ddprun's server next to torch 1.13's own in the same run, driven by the same "
        "client (ddprun's C++ client in the 1.13 numbering, which both servers speak); "
        "the server runs on core 0 and the client drivers on core 1, so what is "
        "measured is the server. Last, a PyTorch-style job start: N workers connect, "
        "set a key, ADD a counter (the last sets the barrier key) and WAIT for the "
        "barrier, from the first connection to the last worker through it, beside torch "
        "1.13's server and torch 2.14's (in the forky root, in the 2.x numbering; Debian "
        "builds it without libuv, so it is the server before libuv; a hosts file names "
        "the source addresses, whose names it looks up); a fresh "
        "server each (a process of its own), the workers' connections spread over 16 "
        "loopback addresses (from one, the kernel's search for a free port grows with "
        "the ports in use). The largest size is what the machine's descriptor limit "
        "allows the benchmark (one descriptor per worker, 20,000 here without the right "
        "to raise it). Then workers polling one key, as torch 2.x's clients wait: N "
        "connections (2.x numbering) wait on one absent key, then each in turn cancels "
        "its wait (`CANCEL_WAIT`) and waits again, 3 times over: the time per cancel, "
        "its round trip included, beside torch 2.14's server up to 4,096 (1.13 has no "
        "`CANCEL_WAIT`)."),
    "tracking": (
        "The shared run",
        [PY, "bench/tracking_bench.py", "--ddprun", PORTABLE],
        "The clients' cost per logged value, the rate at which a run folds workers' "
        "records, and how long after the last worker's exit a run of 1M points is "
        "complete. Then the run of one node's job at growing rank counts (C++ ranks "
        "logging 1,000 steps of 2 values each): the whole job, the run's completion after "
        "the last exit, every point counted in run.db, and the growth exponent of the "
        "job's time (1 is linear)."),
    "hang": (
        "Hang detection",
        [PY, "bench/hang_bench.py"],
        "heartbeat() against log() in Python and C++ with detection on (a progress page "
        "mapped) and off, and the time from a rank's last progress to the hang reported "
        "and to the restarted workers."),
    "dashboard": (
        "The dashboard",
        [PY, "bench/dashboard_bench.py", "--ddprun", PORTABLE],
        "A run of 1M points served by `ddprun runs serve`: time to a chart's data and to "
        "a page drawn in headless Chromium, and whether a dashboard polling a running job "
        "slows its ingestion."),
    "chaos": (
        "Faults, against torchrun",
        [PY, "bench/chaos_vs_torchrun.py", "--ddprun", PORTABLE],
        "Faults of the reliability table injected into ddprun and into torchrun 1.13 side "
        "by side: what is left after a SIGKILL or SIGTERM of the launcher, and where a "
        "single node's store listens."),
    "gpu": (
        "On a GPU machine",
        ["scripts/gpu_check.sh"],
        "Launch and restart against that machine's own torchrun, taken by the GPU check "
        "(`scripts/gpu_check.sh`) on a GPU machine lent for minutes; its figures are the "
        "only absolute ones that count, this VM's being shared and slow to wake."),
}
# Recorded only where a GPU is (`record gpu` there; `record all` leaves it out).
ON_GPU = {"gpu"}

INTRO = """# Performance

Every table below is what a benchmark in `bench/` printed, recorded with its date, the
machine and the commit (`bench/results/`), and this page is generated from those
records (`bench/perf_page.py render`; the suite fails when it differs). Each benchmark
measures ddprun side by side with its reference in one run, since absolute times move
a lot on a shared VM; compare ratios across days, not milliseconds. To measure again:
`/usr/bin/python3 bench/perf_page.py record all` (or one name), then
`bench/perf_page.py render > docs/performance.md`.
"""


def machine():
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    return f"{os.cpu_count()} x {cpu}, {mem_kib / 2**20:.0f} GiB, Linux {platform.release()}"


def commit():
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return head + ("+changes" if dirty else "")


def record(name):
    title, command, _ = BENCHES[name]
    print(f"perf_page.py: {name}: {' '.join(command)}", file=sys.stderr, flush=True)
    proc = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        raise SystemExit(f"perf_page.py: {name} failed with exit status {proc.returncode}; "
                         "its result is kept as it was")
    result = {"name": name, "command": command,
              "date": datetime.date.today().isoformat(), "machine": machine(),
              "commit": commit(), "output": proc.stdout.strip()}
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, name + ".json"), "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")


def render():
    parts = [INTRO]
    missing = []
    for name, (title, command, method) in BENCHES.items():
        path = os.path.join(RESULTS, name + ".json")
        if not os.path.exists(path):
            missing.append(f"`{' '.join(command)}`")
            continue
        with open(path) as f:
            r = json.load(f)
        parts.append(f"## {title}\n\n{method}\n\n"
                     f"Measured {r['date']} at {r['commit']} on {r['machine']}:\n"
                     f"`{' '.join(r['command'])}`\n\n{r['output']}\n")
    if missing:
        parts.append("## Not recorded yet\n\n" + "\n".join(f"- {m}" for m in missing) + "\n")
    return "\n".join(parts)


def main():
    if len(sys.argv) < 2 or sys.argv[1] not in ("record", "render", "check"):
        raise SystemExit(__doc__)
    verb = sys.argv[1]
    if verb == "record":
        names = ([n for n in BENCHES if n not in ON_GPU] if sys.argv[2:] == ["all"]
                 else sys.argv[2:])
        unknown = [n for n in names if n not in BENCHES]
        if not names or unknown:
            raise SystemExit(f"perf_page.py: record which benchmark? ({', '.join(unknown)} "
                             f"unknown; known: {', '.join(BENCHES)}, or all)")
        for n in names:
            record(n)
    elif verb == "render":
        sys.stdout.write(render())
    else:
        if len(sys.argv) != 3:
            raise SystemExit("perf_page.py check PAGE")
        with open(sys.argv[2]) as f:
            page = f.read()
        if page != render():
            raise SystemExit(f"perf_page.py: {sys.argv[2]} is not what the recorded results "
                             "make; regenerate it: bench/perf_page.py render > " + sys.argv[2])
        print(f"perf_page.py: {sys.argv[2]} matches bench/results/")


if __name__ == "__main__":
    main()
