#!/usr/bin/env bash
# Runs clang-tidy (the checks in .clang-tidy) over every source of the product, with the
# compile commands of a configured build. Usage: scripts/tidy.sh [build-dir]
# Fails on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
mapfile -t sources < <(git ls-files 'agent/*.cc' 'common/*.cc' 'dashboard/*.cc' 'launcher/*.cc' 'net/*.cc' \
  'os/*.cc' 'rendezvous/*.cc' 'store/*.cc' 'tracking/*.cc')
# The build's flags are GCC's; clang's front end does not know some of them.
run-clang-tidy -quiet -p "$dir" -j "$(nproc)" -extra-arg=-Wno-unknown-warning-option \
  "${sources[@]/#/$PWD/}" > "$dir/tidy.log" 2>&1 || {
  grep -E "(error|warning):" "$dir/tidy.log" | sort -u
  echo "tidy.sh: clang-tidy found problems (whole output: $dir/tidy.log)"
  exit 1
}
echo "tidy.sh: ${#sources[@]} sources clean"
