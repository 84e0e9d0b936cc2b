#!/usr/bin/env bash
# Every check that needs a GPU, in one call, for a GPU machine lent for minutes (an H100
# or H200 with PyTorch and CUDA, no Debian packages, no network): preflight (NVML health
# readings on a real GPU), --nproc_per_node=gpu,
# NVML metrics in the run, a PyTorch NCCL DDP job, a gloo job of 8 CPU workers, the
# cpp_nccl example, a hang's flight-recorder dump, --numa-binding with the real GPU,
# PyTorch's own TCPStore client against the agent store, and launch and restart times
# against that machine's torchrun. Under 8 minutes; one summary file.
#   scripts/gpu_check.sh [DDPRUN] [CPP_NCCL]     (defaults: the portable build's files,
#   dist/gpu/ddprun and dist/gpu/cpp_nccl, as scripts/gpu_bundle.sh leaves them)
# The summary goes to $OUT/gpu_check.txt where OUT is set, else ./gpu_check.txt.
# GPU_CHECK_ONLY=name,name runs only those checks (tests/gpu/gpu_check.py's methods).
set -euo pipefail
cd "$(dirname "$0")/.."
ddprun=${1:-dist/gpu/ddprun}
cpp_nccl=${2:-dist/gpu/cpp_nccl}
summary=${OUT:-.}/gpu_check.txt
[ -x "$ddprun" ] || { echo "gpu_check: no ddprun at $ddprun (scripts/gpu_bundle.sh makes it)" >&2; exit 2; }
python=$(command -v python3)
"$python" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null ||
  { echo "gpu_check: $python has no PyTorch with a usable GPU: nothing to check here" >&2; exit 77; }
export PATH="$(dirname "$(readlink -f "$ddprun")"):$PATH" PYTHONUNBUFFERED=1
timeout 470 "$python" tests/gpu/gpu_check.py --ddprun "$ddprun" --cpp_nccl "$cpp_nccl" \
  --summary "$summary" ${GPU_CHECK_ONLY:+--only "$GPU_CHECK_ONLY"}
