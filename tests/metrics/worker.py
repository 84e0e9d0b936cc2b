"""A worker for the metrics test: logs a step every 0.2 s until $1/stop exists, each
marked for straggler detection and goodput too; on the first attempt, rank 1 fails after
its third step (the job restarts once)."""
import os
import sys
import time

import ddprun_tracking as run

stop = os.path.join(sys.argv[1], "stop")
rank = int(os.environ["RANK"])
first = os.environ.get("TORCHELASTIC_RESTART_COUNT") == "0"
step = 0
while not os.path.exists(stop):
    step += 1
    run.log({"loss": 1.0 / step}, step=step)
    run.step(step)
    if first and rank == 1 and step == 3:
        sys.exit(1)
    time.sleep(0.2)
