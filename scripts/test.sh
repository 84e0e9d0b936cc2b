#!/usr/bin/env bash
# Sets everything up and runs every test: the normal build, clang-tidy over the
# sources, then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs=$(( $(nproc) * 2 ))

scripts/build.sh build
(cd build && ctest -j "$jobs" --output-on-failure --timeout 300)
scripts/tidy.sh build

scripts/build.sh build-asan -DDDPRUN_SANITIZE=ON
# The torch and fuzz cases exercise the same code; under ASan they only add minutes
# (the fuzzer has its own ASan+UBSan build).
(cd build-asan && ctest -j "$jobs" --output-on-failure --timeout 300 -LE "torch|fuzz")
echo "test.sh: all tests passed"
