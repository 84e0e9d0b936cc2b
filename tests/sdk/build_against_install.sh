#!/usr/bin/env bash
# The C++ SDK as a user gets it: `cmake --install` into a fresh prefix, then
# examples/cpp_cpu built out of tree with find_package(ddprun), then run under the
# installed ddprun on two workers.
#   build_against_install.sh <build dir> <source dir> <sanitize 0|1>
set -euo pipefail
build=$1 src=$2 sanitize=$3
work=$(mktemp -d /tmp/ddprun_sdk_XXXXXX)
trap 'rm -rf "$work"' EXIT

cmake --install "$build" --prefix "$work/prefix" >/dev/null
for f in bin/ddprun include/ddprun/store/tcpstore/tcp_store_client.h \
         include/ddprun/rendezvous/tcp_store_client.h \
         include/ddprun/tracking/ddprun_tracking.hpp lib/cmake/ddprun/ddprunConfig.cmake \
         share/ddprun/python/ddprun_tracking.py; do
  [ -e "$work/prefix/$f" ] || { echo "not installed: $f" >&2; exit 1; }
done

# A program written against 0.1's layout still compiles.
printf '#include "rendezvous/tcp_store_client.h"\nddprun::rendezvous::TcpStoreClient* c;\n' |
  c++ -std=c++20 -fsyntax-only -I"$work/prefix/include/ddprun" -x c++ - ||
  { echo "0.1's include path no longer compiles" >&2; exit 1; }

flags=()
if [ "$sanitize" = 1 ]; then  # the installed library was built with sanitizers
  flags=(-DCMAKE_CXX_FLAGS="-fsanitize=address,undefined" \
         -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined")
fi
cmake -S "$src/examples/cpp_cpu" -B "$work/cpp_cpu" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
      "${flags[@]}" >/dev/null
cmake --build "$work/cpp_cpu" >/dev/null

out=$(cd "$work" && OMP_NUM_THREADS=1 "$work/prefix/bin/ddprun" --nproc_per_node=2 \
      --rdzv_id=sdk --no_python "$work/cpp_cpu/cpp_cpu")
echo "$out"
[ "$(grep -c '/2: all-gather sum 1 ok' <<<"$out")" = 2 ] || { echo "wrong output" >&2; exit 1; }
# The installed launcher found its installed Python client, and the run has the points.
csv=$(cd "$work" && "$work/prefix/bin/ddprun" runs export sdk --format csv)
[ "$(grep -c ',gathered_sum,1$' <<<"$csv")" = 2 ] || { echo "$csv" >&2; exit 1; }
echo "SDK: installed, found by find_package(ddprun), example built and run"
