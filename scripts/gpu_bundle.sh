#!/usr/bin/env bash
# Puts what scripts/gpu_check.sh carries to a GPU machine into dist/gpu/ (ignored by git):
# the portable ddprun and the cpp_nccl example with the one library it links that such a
# machine lacks (libsodium; CUDA's and NCCL's come from its PyTorch).
#   scripts/gpu_bundle.sh [PORTABLE_BUILD_DIR] [BUILD_DIR]    (build-clang, build)
set -euo pipefail
cd "$(dirname "$0")/.."
portable=${1:-build-clang} build=${2:-build}
mkdir -p dist/gpu
cp "$portable/launcher/ddprun" dist/gpu/ddprun
if [ -x "$build/examples/cpp_nccl/cpp_nccl" ]; then
  cp "$build/examples/cpp_nccl/cpp_nccl" dist/gpu/cpp_nccl
  sodium=$(ldd dist/gpu/cpp_nccl | awk '/libsodium/ {print $3}')
  [ -z "$sodium" ] || cp -L "$sodium" dist/gpu/
else
  echo "gpu_bundle: $build has no cpp_nccl (no CUDA toolkit with NCCL here): not carried" >&2
fi
ls -l dist/gpu
