#!/usr/bin/env bash
# Sets everything up and runs a demo: a real PyTorch DDP job (gloo, 2 workers) under
# ddprun, with a worker failure on the first attempt and one elastic restart.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
scripts/build.sh build
out=$(mktemp -d)
echo "== ddprun --standalone --nproc_per_node=2 --max_restarts=1 --tee=3 examples/pytorch_ddp/train.py"
echo "== (rank 1 fails on purpose in the first attempt: the tracebacks are expected; ddprun restarts the group)"
PYTHON_EXEC=/usr/bin/python3 build/launcher/ddprun --standalone --nproc_per_node=2 \
  --max_restarts=1 --tee=3 examples/pytorch_ddp/train.py --epochs 3 --fail-rank 1 \
  --checkpoint "$out/checkpoint.pt"
echo "== demo finished: checkpoint at $out/checkpoint.pt"
