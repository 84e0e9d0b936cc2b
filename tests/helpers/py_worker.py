"""A Python worker for the Slurm and ssh tests, started by ddprun
(PYTHON_EXEC=/usr/bin/python3).

    py_worker.py env            print the rank's torchrun variables, its working
                                directory and every DDPRUN_TEST_* variable on one line
    py_worker.py exit N [RANK]  exit with status N (only rank RANK when given; the
                                other ranks exit 0)
    py_worker.py fail_once      rank 3 fails in the first attempt; then like env
    py_worker.py wait DIR       write DIR/pid.<rank>, count SIGUSR1, exit 0 once
                                DIR/stop exists (or run until killed)
"""
import os
import signal
import sys
import time


def env_line():
    keys = ("RANK", "GROUP_RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE",
            "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT",
            "CUDA_VISIBLE_DEVICES")
    line = "env " + " ".join(f"{k}={os.environ.get(k, '')}" for k in keys)
    extra = sorted(k for k in os.environ if k.startswith("DDPRUN_TEST_"))
    return line + f" CWD={os.getcwd()}" + "".join(f" {k}={os.environ[k]!r}" for k in extra)


def wait(directory):
    rank = os.environ["RANK"]
    got = []
    signal.signal(signal.SIGUSR1, lambda *_: got.append(1))
    with open(os.path.join(directory, f"pid.{rank}.tmp"), "w") as f:
        f.write(str(os.getpid()))
    os.rename(os.path.join(directory, f"pid.{rank}.tmp"), os.path.join(directory, f"pid.{rank}"))
    seen = 0
    while not os.path.exists(os.path.join(directory, "stop")):
        if len(got) != seen:
            seen = len(got)
            with open(os.path.join(directory, f"usr1.{rank}"), "w") as f:
                f.write(str(seen))
        time.sleep(0.05)
    print(f"rank {rank} got SIGUSR1 x{len(got)}", flush=True)


def main():
    mode = sys.argv[1]
    if mode == "env":
        print(env_line(), flush=True)
    elif mode == "exit":
        if len(sys.argv) < 4 or os.environ["RANK"] == sys.argv[3]:
            sys.exit(int(sys.argv[2]))
    elif mode == "fail_once":
        if os.environ["RANK"] == "3" and os.environ["TORCHELASTIC_RESTART_COUNT"] == "0":
            sys.exit(1)
        print(env_line(), flush=True)
    elif mode == "wait":
        wait(sys.argv[2])


if __name__ == "__main__":
    main()
