#!/usr/bin/env bash
# Sets everything up and runs a demo: a real PyTorch DDP job (gloo, 2 workers) under
# ddprun, with a worker killed in the first attempt, one restart that resumes from the
# checkpoint, and the shared run it leaves.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# Only the launcher: the tests and fuzzers are the test command's to build.
DDPRUN_BUILD_TARGETS=ddprun scripts/build.sh build
out=$(mktemp -d)
echo "== ddprun --nproc_per_node=2 --max_restarts=1 --tee=3 examples/pytorch_ddp/train.py --epochs 3 --kill-rank 1"
echo "== (rank 1 is SIGKILLed on purpose after epoch 0 is checkpointed; ddprun restarts the"
echo "==  group and the job resumes from the checkpoint)"
PYTHON_EXEC=/usr/bin/python3 build/launcher/ddprun --nproc_per_node=2 --rdzv_id=demo \
  --max_restarts=1 --tee=3 --tracking_dir "$out/runs" examples/pytorch_ddp/train.py \
  --epochs 3 --kill-rank 1 --checkpoint "$out/checkpoint.pt"
echo "== the job's shared run:"
build/launcher/ddprun runs show demo --tracking_dir "$out/runs"
build/launcher/ddprun runs report demo -o "$out/report.html" --tracking_dir "$out/runs"
echo "== demo finished: checkpoint at $out/checkpoint.pt, report at $out/report.html"
