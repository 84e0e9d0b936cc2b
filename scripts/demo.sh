#!/usr/bin/env bash
# Sets everything up and runs a demo: a real PyTorch DDP job (gloo, 2 workers) under
# ddprun, with a worker killed in the first attempt, one restart that resumes from the
# checkpoint, and the shared run it leaves.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# Only the launcher, in a directory of its own: the tests and fuzzers are the test
# command's to build. Optimised for a quick build (-Og) and without debug information, for a first
# look in under four minutes on a 2-core machine (-O2 -g takes 2.2x the compiler's
# time); the packages and scripts/build.sh build -O2.
DDPRUN_BUILD_TARGETS=ddprun scripts/build.sh build-demo -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS_RELEASE="-Og -DNDEBUG" -DDDPRUN_BUILD_TESTS=OFF
ddprun=build-demo/launcher/ddprun
out=$(mktemp -d)
echo "== ddprun --nproc_per_node=2 --max_restarts=1 --tee=3 examples/pytorch_ddp/train.py --epochs 3 --kill-rank 1"
echo "== (rank 1 is SIGKILLed on purpose after epoch 0 is checkpointed; ddprun restarts the"
echo "==  group and the job resumes from the checkpoint)"
PYTHON_EXEC=/usr/bin/python3 "$ddprun" --nproc_per_node=2 --rdzv_id=demo \
  --max_restarts=1 --tee=3 --tracking_dir "$out/runs" examples/pytorch_ddp/train.py \
  --epochs 3 --kill-rank 1 --checkpoint "$out/checkpoint.pt"
echo "== the job's shared run:"
"$ddprun" runs show demo --tracking_dir "$out/runs"
"$ddprun" runs report demo -o "$out/report.html" --tracking_dir "$out/runs"
echo "== demo finished: checkpoint at $out/checkpoint.pt, report at $out/report.html"
