#!/usr/bin/env bash
# examples/cpp_nccl: compiled and linked wherever CMake finds CUDA and NCCL ("links");
# run under ddprun only where a GPU is present ("runs"; exit 77 = skipped, saying why).
#   cpp_nccl_built.sh links|runs <ddprun> <cpp_nccl binary>
set -euo pipefail
mode=$1 ddprun=$2 binary=$3
[ -x "$binary" ] || { echo "cpp_nccl was not built" >&2; exit 1; }
if ldd "$binary" | grep -E 'libnccl|libcudart' | grep -q 'not found'; then
  ldd "$binary" >&2
  exit 1
fi
ldd "$binary" | grep -E 'libnccl|libcudart'
[ "$mode" = links ] && exit 0
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "no GPU on this machine: cpp_nccl cannot run here (sdk.cpp_nccl_links checks the build)"
  exit 77
fi
work=$(mktemp -d /tmp/ddprun_nccl_XXXXXX)
out=$(cd "$work" && "$ddprun" --standalone --nproc_per_node=gpu --no_python "$binary")
echo "$out"
! grep -q WRONG <<<"$out"
