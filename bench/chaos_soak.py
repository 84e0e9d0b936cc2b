"""The long chaos run: the deterministic training job of tests/chaos/ under ddprun (two
nodes of two ranks on loopback over c10d, a hot spare always waiting) for --minutes,
with a random fault every few seconds, in the orders clusters produce them:

  worker_kill    a worker SIGKILLed
  worker_stop    a worker SIGSTOPped (it cannot run: a hang, its stop bounded)
  worker_term    a worker SIGTERMed from outside
  node_kill      a member node's agent SIGKILLed (its workers die with it, and its
                 peers' collectives fail first) while a spare waits: a new spare is
                 started each time one steps in
  spare_kill     a worker of the node that came in as a spare SIGKILLed

For each kind: how many were survived, the time from the fault to the first line of
ddprun that acts on it (detection), to the workers of the next attempt running (for a
node lost: the spare's), and to training again (a step checkpointed by workers of a
later attempt; the difference is the workers' own start: importing torch, joining the
process group, loading the checkpoint). At the end the job must exit 0 with the weights of an
undisturbed run, and leave no process. Prints a markdown table (docs/reliability.md).

    /usr/bin/python3 bench/chaos_soak.py --minutes 30
"""
import argparse
import os
import random
import shutil
import signal
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "chaos"))
import chaos  # noqa: E402
from chaos import Job, eventually, training_again  # noqa: E402

# The lines by which an agent shows it acted on a fault.
DETECTED = ("worker group failed", "hang: no progress", "expected back are gone",
            "membership changed", "stopping:")


def first_line_after(job, since, texts):
    best = None
    for agent in list(job.agents.values()):
        for t, line in list(agent.lines):
            if t >= since and any(x in line for x in texts):
                best = t if best is None else min(best, t)
                break
    return best


def steady(job):
    """Until every rank runs in one attempt and has trained two steps in it: a fault then
    meets a job that has recovered from the last one."""
    def one_attempt():
        ws = job.workers()
        return len(ws) == 4 and len({w[2] for w in ws}) == 1
    eventually(one_attempt, 120)
    step = job.step()
    eventually(lambda: job.step() >= step + 2 or job.agents["a"].proc.poll() is not None, 120)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--minutes", type=float, default=30)
    p.add_argument("--every", type=float, default=8, help="mean seconds between faults")
    p.add_argument("--step-time", type=float, default=0.1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--faults", default="worker_kill,worker_stop,worker_term,node_kill,spare_kill",
                   help="the kinds to draw from")
    args = p.parse_args()
    rng = random.Random(args.seed)
    tmp = tempfile.mkdtemp(prefix="ddprun_soak_")
    try:
        run(args, rng, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(args, rng, tmp):
    # As many steps as the minutes hold with faults every --every s (a step takes about
    # 5 ms more than --step-time here; a fault costs 3 to 9 s of training: about two
    # thirds of the time trains at one every 8 s); faults stop at --minutes and the job
    # then runs to its end.
    steps = int(args.minutes * 60 * 0.65 / (args.step_time + 0.005))
    work = os.path.join(tmp, "job")
    os.makedirs(work)
    job = Job(work, steps, args.step_time, max_restarts=10_000)
    results = {}  # kind -> list of (detected s, training again s)
    start = time.monotonic()
    spares = 0
    try:
        job.start("a", "127.0.0.1", is_host=True)
        job.start("b", "127.0.0.2")
        if not eventually(lambda: job.step() >= 3, 180):
            raise SystemExit("the job did not start:\n" + job.agents["a"].err())

        def start_spare():
            nonlocal spares
            spares += 1
            name = f"s{spares}"
            job.start(name, f"127.0.0.{2 + spares}")
            eventually(lambda: job.agents[name].said("waiting as a spare"), 60)
            return name

        spare = start_spare()
        members = ["b"]  # the member agents that may be killed (never a, the store's host)
        while job.agents["a"].proc.poll() is None and time.monotonic() - start < args.minutes * 60:
            time.sleep(rng.expovariate(1 / args.every))
            if job.agents["a"].proc.poll() is not None:
                break
            steady(job)
            kind = rng.choice(args.faults.split(","))
            restart, step = job.restart_count(), job.step()
            t0 = time.monotonic()
            if kind == "worker_kill":
                what = chaos.kill_worker(job)
            elif kind == "worker_stop":
                what = chaos.stop_worker(job)
            elif kind == "worker_term":
                what = chaos.kill_worker(job, signal.SIGTERM)
            elif kind == "node_kill":
                what = chaos.kill_agent(job, members[-1]) if members else None
            else:
                came_in = [m for m in members if m.startswith("s")]
                what = chaos.kill_worker(job, signal.SIGKILL, came_in[-1]) if came_in else None
            if what is None:
                continue
            # The next attempt's workers run (a node lost: the spare's, in its place).
            if kind == "node_kill":
                def running(): return any(w[3] == spare for w in job.workers())
            else:
                def running(): return job.restart_count() > restart
            eventually(running, 300, every=0.01)
            started = time.monotonic()
            back = training_again(job, restart, step, 300)
            if back is None:
                if job.agents["a"].proc.poll() is not None:
                    break  # the job ended meanwhile
                raise SystemExit(f"not training again 300 s after {what}")
            seen = first_line_after(job, t0, DETECTED)
            results.setdefault(kind, []).append(((seen or back) - t0, started - t0, back - t0))
            print(f"+{time.monotonic() - start:7.1f} s  {what}: detected in "
                  f"{(seen or back) - t0:.2f} s, workers running in {started - t0:.2f} s, "
                  f"training again in {back - t0:.2f} s", flush=True)
            if kind == "node_kill":
                members.remove(members[-1])
                members.append(spare)  # it stepped in (or will at the next round)
                spare = start_spare()
        code = job.agents["a"].wait(600)
    finally:
        job.stop_all()
    elapsed = time.monotonic() - start
    left = [p for p in job.every_pid() if chaos.alive(p)]
    base = os.path.join(tmp, "base")
    os.makedirs(base)
    same, why = chaos.same_weights(chaos.undisturbed_weights(base, steps),
                                   os.path.join(work, "weights.pt"))
    shown = chaos.runs_show(job)
    print(f"\n{elapsed / 60:.1f} min, {steps} steps, exit {code}, weights "
          f"{'bit-identical to an undisturbed run' if same else 'DIFFER: ' + why}, "
          f"{len(left)} process(es) left, run's restarts {chaos.shown_count(shown, 'restarts')}, "
          f"membership changes {chaos.shown_count(shown, 'membership changes')}\n")
    print("| fault | survived | detected | next workers running | training again |")
    print("|---|---|---|---|---|")
    for kind in sorted(results):
        cols = [[x[i] for x in results[kind]] for i in range(3)]
        figures = " | ".join(f"{statistics.median(c):.2f} s (max {max(c):.2f})" for c in cols)
        print(f"| {kind} | {len(cols[0])} | {figures} |")
    if code != 0 or not same or left:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
