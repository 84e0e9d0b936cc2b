#!/usr/bin/env bash
# Sets everything up and runs every test: the normal build, clang-tidy over the
# sources, then the same suite under AddressSanitizer + UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs=$(( $(nproc) * 2 ))

scripts/build.sh build -DDDPRUN_WERROR=ON
(cd build && ctest -j "$jobs" --output-on-failure --timeout 300)
scripts/tidy.sh build
# Users build Release, some with Clang: the product must build clean there too. That
# build is the portable one (one file, nothing but glibc), checked on its own.
CXX=clang++ scripts/build.sh build-clang -DCMAKE_BUILD_TYPE=Release -DDDPRUN_WERROR=ON \
  -DDDPRUN_BUILD_TESTS=OFF -DDDPRUN_PORTABLE=ON
scripts/check_portable.sh build-clang/launcher/ddprun
tests/build/hardened_binary.sh build-clang/launcher/ddprun 1  # as hardened as the suite's
# The three artifacts users install from, made from that build and checked (dist/).
scripts/package.sh build-clang
# Debian's PyTorch 2.6 and 2.14 under that portable file, in roots made once per machine.
tests/torch2/run.sh build-clang/launcher/ddprun

# Clang: it builds the sanitized suite in well under half GCC's time.
CXX=clang++ scripts/build.sh build-asan -DDDPRUN_SANITIZE=ON -DDDPRUN_WERROR=ON
# The torch and fuzz cases exercise the same code; under ASan they only add minutes
# (the fuzzer has its own ASan+UBSan build). The soak cases measure ddprun's memory,
# which ASan's quarantine of freed blocks would swamp.
(cd build-asan && ctest -j "$jobs" --output-on-failure --timeout 300 -LE "torch|fuzz|soak")
echo "test.sh: all tests passed"
