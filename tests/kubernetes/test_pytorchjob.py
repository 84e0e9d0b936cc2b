"""examples/kubernetes/pytorchjob.yaml's command, run in two "pods" (two ddprun on this
machine) with the environment Kubeflow's training operator gives a PyTorchJob's pods:
the job must come up with no rendezvous flags.

Run with /usr/bin/python3; DDPRUN names the binary.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "helpers"))
from free_port import free_port  # noqa: E402
MANIFEST = os.path.join(HERE, "..", "..", "examples", "kubernetes", "pytorchjob.yaml")
DDPRUN = os.environ["DDPRUN"]


def container_commands():
    """(command, args) of each replica type's container, in the manifest's order."""
    with open(MANIFEST) as f:
        text = f.read()
    commands = [json.loads(m) for m in re.findall(r"^\s*command: (\[.*\])$", text, re.M)]
    args = [json.loads(m) for m in re.findall(r"^\s*args: (\[.*\])$", text, re.M)]
    return list(zip(commands, args))


def operator_env(node_rank, nnodes, nproc, port):
    """What the training operator sets in the pod of replica `node_rank` (master 0)."""
    return {"PET_NNODES": str(nnodes), "PET_NODE_RANK": str(node_rank),
            "PET_NPROC_PER_NODE": str(nproc), "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port), "WORLD_SIZE": str(nnodes * nproc),
            "RANK": str(node_rank), "PYTHONUNBUFFERED": "0"}


class PyTorchJob(unittest.TestCase):
    def test_manifest_command_runs_with_the_operators_environment(self):
        pods = container_commands()
        self.assertEqual(len(pods), 2, "a Master and a Worker replica spec")
        port = free_port()
        tmp = tempfile.mkdtemp(prefix="ddprun_k8s_")
        procs = []
        for node_rank, (command, args) in enumerate(pods):
            self.assertEqual(command[0], "ddprun")
            argv = [DDPRUN] + [a.replace("/workspace/train.py", os.path.join(HERE, "print_rank.py"))
                               .replace("--tracking_dir=/runs", f"--tracking_dir={tmp}/runs")
                               for a in command[1:]] + args
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PET_", "SLURM_"))}
            env.update(operator_env(node_rank, len(pods), 2, port), PYTHON_EXEC="/usr/bin/python3",
                       OMP_NUM_THREADS="1")
            procs.append(subprocess.Popen(argv, env=env, cwd=tmp, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        outputs = []
        for p in procs:
            out, err = p.communicate(timeout=60)
            self.assertEqual(p.returncode, 0, err)
            outputs.append(out)
        ranks = {}
        for node_rank, out in enumerate(outputs):
            for line in out.splitlines():
                if line.startswith("rank "):
                    v = dict(kv.split("=", 1) for kv in line.split()[1:])
                    self.assertEqual(v["GROUP_RANK"], str(node_rank))
                    self.assertEqual(v["WORLD_SIZE"], "4", "each worker's own, not the pod's")
                    self.assertEqual((v["MASTER_ADDR"], v["MASTER_PORT"]), ("127.0.0.1", str(port)))
                    ranks[int(v["RANK"])] = v
        self.assertEqual(sorted(ranks), [0, 1, 2, 3])


if __name__ == "__main__":
    unittest.main()
