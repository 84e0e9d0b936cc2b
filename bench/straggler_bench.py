#!/usr/bin/env python3
"""Straggler detection's cost on a training step: a small model's optimizer steps timed
with and without ddprun's step hook (sitecustomize: PyTorch 2's optimizer-step hook,
the wrapped backward() and collectives), and ddprun_tracking.step() with waiting(), in
the same interpreter, interleaved. Prints the cost per step in microseconds and as a
share of the step measured and of a 10 ms step.

    python3 bench/straggler_bench.py [--steps 3000] [--repeat 7]
    # PyTorch 2.x, in a root of scripts/torch_root.sh:
    tests/torch2/in_root.sh "$(scripts/torch_root.sh forky)" python3 bench/straggler_bench.py
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# One rank's loop of a small model (a gloo group of one: all_reduce is a real call).
LOOP = r"""
import os, sys, time
import torch
import torch.distributed as dist
mode, steps = sys.argv[1], int(sys.argv[2])
dist.init_process_group("gloo", init_method="tcp://127.0.0.1:%s" % sys.argv[3], rank=0, world_size=1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 64), torch.randn(16, 1)
if mode == "explicit":
    import ddprun_tracking as run
def step():
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    if mode == "explicit":
        with run.waiting():
            loss.backward()
    else:
        loss.backward()
    opt.step()
    if mode == "explicit":
        run.step()
for _ in range(200):
    step()
t = time.perf_counter()
for _ in range(steps):
    step()
per_step = (time.perf_counter() - t) / steps * 1e6
# What the timing itself costs a step, alone (the loop's figure is noisier than that).
import timeit
own = 0.0
if mode == "hook":
    import torch.optim.optimizer as o
    clock = next(iter(o._global_optimizer_post_hooks.values())).__self__
    noop = clock.waiting(lambda: None)
    def marks():
        clock.backwards = 1
        noop()
        clock.step_done()
    own = timeit.timeit(marks, number=100000) / 100000 * 1e6
elif mode == "explicit":
    def marks():
        with run.waiting():
            pass
        run.step()
    own = timeit.timeit(marks, number=100000) / 100000 * 1e6
print(per_step, own)
"""


def page(path):
    with open(path, "wb") as f:
        f.write(b"DDPRPG01" + bytes(120))


def one(mode, steps, port, tmp):
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "agent", "python"),
                                           os.path.join(ROOT, "tracking", "python")]))
    env.pop("DDPRUN_PROGRESS_FILE", None)
    if mode != "off":
        path = os.path.join(tmp, "page_" + mode)
        page(path)
        env["DDPRUN_PROGRESS_FILE"] = path
    out = subprocess.run([sys.executable, "-c", LOOP, mode, str(steps), str(port)], env=env,
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"straggler_bench: the {mode} loop failed:\n{out.stderr[-2000:]}")
    step, own = out.stdout.strip().splitlines()[-1].split()
    return float(step), float(own)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    import torch.optim.optimizer as optimizer
    hook = hasattr(optimizer, "register_optimizer_step_post_hook")
    import torch
    modes = ["off", "hook" if hook else None, "explicit"]
    modes = [m for m in modes if m]
    times = {m: [] for m in modes}
    marks = {m: [] for m in modes}
    port = 29000 + os.getpid() % 1000
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeat):
            for i, m in enumerate(modes):  # interleaved: drift hits every mode alike
                step, own = one(m, args.steps, port + (r * len(modes) + i) % 500, tmp)
                times[m].append(step)
                marks[m].append(own)
    base = statistics.median(times["off"])
    print(f"PyTorch {torch.__version__}, {args.steps} steps x {args.repeat} runs, medians\n")
    print("| step timing | step (us) | its marks alone (us) | of this step | of a 10 ms step | step's change, noise included |")
    print("|---|---|---|---|---|---|")
    names = {"off": "none (no progress page)", "hook": "ddprun's hook (no code change)",
             "explicit": "ddprun_tracking.step() + waiting()"}
    for m in modes:
        t, own = statistics.median(times[m]), statistics.median(marks[m])
        print(f"| {names[m]} | {t:.1f} | {own:.2f} | {own / base * 100:.2f}% | "
              f"{own / 10000 * 100:.3f}% | {(t - base) / base * 100:+.1f}% |")
    if not hook:
        print("\n(this PyTorch has no optimizer-step hook: only the explicit marks apply)")


if __name__ == "__main__":
    main()
