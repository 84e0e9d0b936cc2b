#!/usr/bin/env bash
# Configures and builds ddprun. Usage: scripts/build.sh [build-dir] [extra cmake args...]
# DDPRUN_BUILD_TARGETS="ddprun ..." builds only those targets (default: all of them).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
if [ $# -gt 0 ]; then shift; fi
launcher=()
if command -v ccache >/dev/null; then
  # Paths taken relative to the checkout: a fresh clone elsewhere (CI's) hits the same
  # cache. Kept in the build's own commands, so a later plain `ninja` hits it too.
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=true;ccache")
fi
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "$@" >/dev/null
read -r -a targets <<<"${DDPRUN_BUILD_TARGETS:-all}"
cmake --build "$dir" -j "$(nproc)" --target "${targets[@]}"
