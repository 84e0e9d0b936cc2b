"""A synthetic training job for goodput accounting: 50 ms steps, a checkpoint every 10
steps (its step in DIR/ckpt/state, written by rank 0; declared with
ddprun_tracking.checkpoint() unless GOODPUT_DIR_ONLY is set, for ddprun to notice it in
--checkpoint_dir), and faults injected by attempt: attempt 0 crashes
after step 25, attempt 1 hangs after step 33 (until ddprun stops it), attempt 2 runs to
step 40 and takes 0.4 s to exit. Each rank writes its own timeline (wall clock) to DIR/<attempt>.<rank>.json:
its first step, checkpoints, last step, and its crash or the SIGTERM that stopped it."""
import json
import os
import signal
import sys
import time

import ddprun_tracking as run

out = sys.argv[1]
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
rank = int(os.environ["RANK"])
timeline = {"checkpoints": []}


def save():
    with open(os.path.join(out, f"{attempt}.{rank}.json"), "w") as f:
        json.dump(timeline, f)


def stopped(signum, frame):
    timeline["stopped"] = time.time()
    save()
    os._exit(143)


signal.signal(signal.SIGTERM, stopped)
os.makedirs(os.path.join(out, "ckpt"), exist_ok=True)
state = os.path.join(out, "ckpt", "state")
declare = not os.environ.get("GOODPUT_DIR_ONLY")
start = json.load(open(state))["step"] if os.path.exists(state) else 0
time.sleep(0.3)  # start-up: imports, loading
run.step()
timeline["first_step"] = time.time()
for step in range(start + 1, 41):
    time.sleep(0.05)
    run.step(step)
    timeline["last_step"] = time.time()
    if step % 10 == 0:
        if rank == 0:
            with open(state + ".new", "w") as f:
                json.dump({"step": step}, f)
            os.rename(state + ".new", state)
        if declare:
            run.checkpoint(step)
        timeline["checkpoints"].append(time.time())
    if attempt == 0 and step == 25:
        timeline["crashed"] = time.time()
        save()
        sys.exit(3)
    if attempt == 1 and step == 33:
        save()
        while True:
            time.sleep(1)
save()
time.sleep(0.4)  # teardown after the last step: shutdown, not productive
