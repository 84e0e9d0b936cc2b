"""Every check of ddprun that needs a GPU, in one run (scripts/gpu_check.sh calls it).

Each check prints PASS, FAIL or SKIP with what it saw; the summary file gets the same
lines and the timing table. Exit status: the number of checks that failed.
Usage: python3 gpu_check.py --ddprun PATH --summary FILE [--cpp_nccl PATH]
"""
import argparse
import glob
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TRAIN = os.path.join(REPO, "examples", "pytorch_ddp", "train.py")
STORE_METHODS = os.path.join(REPO, "tests", "torch2", "store_methods.py")
PY = sys.executable
lines = []


def say(line):
    print(line, flush=True)
    lines.append(line)


def run(cmd, timeout=120, env=None, cwd=None):
    e = dict(os.environ, PYTHON_EXEC=PY, OMP_NUM_THREADS="1", **(env or {}))
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e,
                              cwd=cwd or tempfile.mkdtemp(prefix="gpu_check_"))
    except subprocess.TimeoutExpired as t:
        return subprocess.CompletedProcess(cmd, -9, t.stdout or "", (t.stderr or "") + "\nTIMEOUT")


def tail(text, n=6):
    return " | ".join(text.strip().splitlines()[-n:])


class Checks:
    def __init__(self, ddprun, cpp_nccl):
        self.ddprun, self.cpp_nccl, self.failed = ddprun, cpp_nccl, 0
        import torch
        self.gpus = torch.cuda.device_count()
        self.torch = torch.__version__
        say(f"torch {self.torch}, {self.gpus} GPU(s): "
            f"{torch.cuda.get_device_name(0) if self.gpus else 'none'}; python {PY}")
        say("ddprun: " + run([ddprun, "--version"]).stdout.strip())

    def result(self, name, ok, detail):
        self.failed += 0 if ok else 1
        say(f"{'PASS' if ok else 'FAIL'} {name}: {detail}")

    def preflight(self):
        """Preflight on a real GPU node: every check passes on a healthy one (NVML's health
        readings included), a GPU the driver lacks is named, and what the GPU check costs."""
        job = [self.ddprun, "--standalone", "--nproc_per_node=1", "--no_tracking", "--no_python", "true"]
        r = run(job[:1] + ["--preflight=all"] + job[1:])
        found = [l for l in r.stderr.splitlines() if "preflight:" in l]
        self.result("preflight, every check", r.returncode == 0, f"exit {r.returncode} {found}")
        if r.returncode != 0 and not any("preflight: gpu" in l for l in found):
            # The node itself (a container's /dev/shm, ...), not the GPUs: the other
            # checks go on without the built-in checks that failed here.
            os.environ["PET_PREFLIGHT"] = "none,gpu"
            say("  (the checks below run with --preflight=none,gpu)")
        r = run(job[:1] + ["--preflight=none,gpu"] + job[1:], env={"CUDA_VISIBLE_DEVICES": "99"})
        self.result("preflight names a GPU the driver lacks",
                    r.returncode == 122 and "CUDA_VISIBLE_DEVICES names GPU 99" in r.stderr,
                    f"exit {r.returncode}: {tail(r.stderr, 2)}")
        times = {}
        for mode in ("none", "none,gpu"):
            samples = []
            for _ in range(5):
                t = time.perf_counter()
                run(job[:1] + [f"--preflight={mode}"] + job[1:])
                samples.append(time.perf_counter() - t)
            times[mode] = statistics.median(samples)
        say(f"  a 1-worker launch: --preflight=none {times['none'] * 1000:.1f} ms, "
            f"--preflight=none,gpu {times['none,gpu'] * 1000:.1f} ms (NVML loaded and read)")

    def nproc_gpu(self):
        r = run([self.ddprun, "--standalone", "--nproc_per_node=gpu", "--no_tracking",
                 "--no_python", "sh", "-c", "echo LWS=$LOCAL_WORLD_SIZE"])
        got = sorted(set(l for l in r.stdout.split() if l.startswith("LWS=")))
        self.result("--nproc_per_node=gpu", r.returncode == 0 and got == [f"LWS={self.gpus}"],
                    f"exit {r.returncode}, workers saw {got}, GPUs {self.gpus}")

    def ddp_nccl_and_nvml(self):
        tmp = tempfile.mkdtemp(prefix="gpu_ddp_")
        runs = os.path.join(tmp, "runs")
        r = run([self.ddprun, "--standalone", "--nproc_per_node=gpu", "--tracking_dir", runs,
                 "--tracking_interval=1", os.path.join(HERE, "gpu_train.py")], timeout=180)
        self.result("PyTorch NCCL DDP job on the GPU", r.returncode == 0 and "all_reduce" in r.stdout,
                    f"exit {r.returncode}: {tail(r.stdout, 2)} {tail(r.stderr, 3) if r.returncode else ''}")
        run_ids = os.listdir(runs) if os.path.isdir(runs) else []
        if not run_ids:
            return self.result("NVML metrics in the run", False, "no run was made")
        run([self.ddprun, "runs", "show", run_ids[0], "--tracking_dir", runs])  # settles the run
        db = sqlite3.connect(os.path.join(runs, run_ids[0], "run.db"))
        rows = db.execute("SELECT key, value FROM system_metrics WHERE key LIKE 'gpu.%'").fetchall()
        names = sorted({k for k, _ in rows})
        peak = max([v for k, v in rows if k == "gpu.0.gpu"] or [0])
        self.result("NVML metrics in the run", bool(names),
                    f"{len(rows)} GPU samples, metrics {names}, peak gpu.0.gpu {peak:g}%")

    def gloo_8_cpu_workers(self):
        r = run([self.ddprun, "--standalone", "--nproc_per_node=8", "--no_tracking", TRAIN,
                 "--epochs", "1", "--checkpoint", "c.pt"], env={"CUDA_VISIBLE_DEVICES": ""},
                timeout=180)
        self.result("gloo job of 8 CPU workers", r.returncode == 0 and "epoch 0" in r.stdout,
                    f"exit {r.returncode}: {tail(r.stdout, 1)} {tail(r.stderr, 3) if r.returncode else ''}")

    def cpp_nccl_example(self):
        if not self.cpp_nccl or not os.path.exists(self.cpp_nccl):
            return self.result("cpp_nccl example", False, "the carried binary is missing")
        libs = set()
        for pattern in ("libnccl.so.2", "libcudart.so.13", "libcudart.so.12"):
            for root in [os.path.dirname(self.cpp_nccl), sys.prefix, "/usr/local", "/opt"]:
                for hit in glob.glob(os.path.join(root, "**", pattern), recursive=True)[:1]:
                    libs.add(os.path.dirname(hit))
        # The carried libsodium lies beside the example.
        path = ":".join([os.path.dirname(self.cpp_nccl)] + sorted(libs) +
                        [os.environ.get("LD_LIBRARY_PATH", "")])
        r = run([self.ddprun, "--standalone", "--nproc_per_node=gpu", "--no_tracking",
                 "--no_python", self.cpp_nccl], env={"LD_LIBRARY_PATH": path})
        why = "" if r.returncode == 0 else (
            f"libraries from {sorted(libs)}; ldd: " +
            tail(run(["ldd", self.cpp_nccl], env={"LD_LIBRARY_PATH": path}).stdout, 12) +
            "; stderr: " + tail(r.stderr, 12))
        self.result("cpp_nccl example", r.returncode == 0 and "WRONG" not in r.stdout,
                    f"exit {r.returncode}: {tail(r.stdout, 2)} {why}")

    def flight_recorder(self):
        tmp = tempfile.mkdtemp(prefix="gpu_fr_")
        runs = os.path.join(tmp, "runs")
        r = run([self.ddprun, "--standalone", "--nproc_per_node=1", "--tracking_dir", runs,
                 "--log_dir", os.path.join(tmp, "logs"), "--hang_timeout=6",
                 os.path.join(HERE, "nccl_hang.py")], timeout=150)
        events = []
        for run_id in (os.listdir(runs) if os.path.isdir(runs) else []):
            run([self.ddprun, "runs", "show", run_id, "--tracking_dir", runs])  # settles the run
            db = sqlite3.connect(os.path.join(runs, run_id, "run.db"))
            events += [json.loads(d) for (d,) in
                       db.execute("SELECT data FROM events WHERE kind = 'hang'").fetchall()]
        ranks = events[0].get("ranks", []) if events else []
        nccl = ranks[0].get("nccl") if ranks else None
        dumps = glob.glob(os.path.join(runs, "*", "**", "*nccl_trace_rank_*"), recursive=True)
        if not (nccl and nccl.get("groups")):
            logs = [os.path.relpath(os.path.join(d, f), tmp) for d, _, fs in os.walk(tmp) for f in fs]
            say(f"  flight recorder, files: {logs[:40]}")
            say(f"  flight recorder, ddprun said: {tail(r.stderr, 25)}")
        self.result("a hang's flight-recorder dump read by ddprun",
                    r.returncode == 124 and bool(nccl and nccl.get("groups")),
                    f"exit {r.returncode}, {len(events)} hang event(s), rank 0's nccl record "
                    f"{json.dumps(nccl)[:300] if nccl else None}, dumps in the run {len(dumps)}; "
                    f"{tail(r.stderr, 4) if not nccl else ''}")

    def numa_binding(self):
        smi = shutil.which("nvidia-smi")
        bus = run([smi, "--query-gpu=pci.bus_id", "--format=csv,noheader"]).stdout.strip() if smi else "?"
        nodes = {p.split("/")[-2]: open(p).read().strip()
                 for p in glob.glob("/sys/bus/pci/devices/*/numa_node")
                 if os.path.exists(os.path.join(os.path.dirname(p), "class")) and
                 open(os.path.join(os.path.dirname(p), "class")).read().startswith("0x0302")}
        r = run([self.ddprun, "--standalone", "--nproc_per_node=gpu", "--no_tracking",
                 "--numa_binding=node", "--log_level=info", "--no_python", "sh", "-c",
                 "grep Cpus_allowed_list /proc/self/status"])
        plan = [l.split("] ")[-1] for l in r.stderr.splitlines() if "--numa_binding" in l]
        self.result("--numa-binding with the real GPU", r.returncode == 0 and bool(plan),
                    f"GPU {bus}, 3D controllers' numa_node {nodes}; plan {plan}; "
                    f"worker {tail(r.stdout, 1)} {tail(r.stderr, 3) if r.returncode else ''}")

    def store_client(self):
        r = run([self.ddprun, "--standalone", "--nproc_per_node=2", "--no_tracking", STORE_METHODS])
        summary = [l for l in r.stdout.splitlines() if "store_methods:" in l or "unsupported" in l]
        self.result(f"torch {self.torch}'s TCPStore client against the agent store",
                    r.returncode == 0 and len(summary) >= 2,
                    f"exit {r.returncode}: {summary[:3]} {tail(r.stderr, 4) if r.returncode else ''}")

    def timings(self, reps=15):
        torchrun = [PY, "-m", "torch.distributed.run"]
        cases = {
            "launch 4 x /bin/true": (["--standalone", "--nproc_per_node=4", "--no_python", "true"], []),
            "one restart (4 workers)": (["--standalone", "--nproc_per_node=4", "--max_restarts=1",
                                         "--no_python", "sh", "-c",
                                         '[ "$TORCHELASTIC_RESTART_COUNT" = 1 ] || exit 3'], []),
        }
        launchers = {"ddprun": [self.ddprun],
                     "torchrun (default monitor 0.1 s)": torchrun}
        say(f"timings: median of {reps} interleaved runs, wall seconds")
        for case, (args, _) in cases.items():
            times = {name: [] for name in launchers}
            for _ in range(reps):
                for name, cmd in launchers.items():
                    start = time.perf_counter()
                    r = run(cmd + args, timeout=60)
                    took = time.perf_counter() - start
                    if r.returncode != 0:
                        say(f"  {case} with {name}: exit {r.returncode} {tail(r.stderr, 3)}")
                    times[name].append(took)
            med = {n: statistics.median(t) for n, t in times.items()}
            ours = med["ddprun"]
            say(f"  {case}: " + ", ".join(f"{n} {m * 1000:.1f} ms (x{m / ours:.0f})" for n, m in med.items()))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ddprun", required=True)
    p.add_argument("--summary", required=True)
    p.add_argument("--cpp_nccl", default="")
    p.add_argument("--only", default="", help="comma-separated check names (default: all)")
    args = p.parse_args()
    start = time.time()
    checks = Checks(os.path.abspath(args.ddprun), os.path.abspath(args.cpp_nccl) if args.cpp_nccl else "")
    every = (checks.preflight, checks.nproc_gpu, checks.ddp_nccl_and_nvml, checks.gloo_8_cpu_workers,
             checks.cpp_nccl_example, checks.flight_recorder, checks.numa_binding,
             checks.store_client, checks.timings)
    only = [name for name in args.only.split(",") if name]
    for check in [c for c in every if not only or c.__name__ in only]:
        try:
            check()
        except Exception as e:  # a check that breaks is a failed check, the rest go on
            checks.result(check.__name__, False, f"{type(e).__name__}: {e}")
    say(f"gpu_check: {checks.failed} failed, in {time.time() - start:.0f} s")
    with open(args.summary, "w") as f:
        f.write("\n".join(lines) + "\n")
    return checks.failed


if __name__ == "__main__":
    sys.exit(main())
