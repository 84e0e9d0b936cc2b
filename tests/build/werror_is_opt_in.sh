#!/usr/bin/env bash
# A user's build never turns warnings into errors: a default configuration compiles
# without -Werror; only -DDDPRUN_WERROR=ON (what scripts/test.sh passes) adds it.
# Usage: werror_is_opt_in.sh SOURCE_DIR
set -euo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
configure() {
  cmake -S "$src" -B "$work/$1" -G Ninja -DDDPRUN_BUILD_TESTS=OFF "${@:2}" >/dev/null ||
    { echo "FAIL: cmake could not configure $*"; exit 1; }
}
configure default
configure werror -DDDPRUN_WERROR=ON
if grep -q -- "-Werror" "$work/default/compile_commands.json"; then
  echo "FAIL: the default build compiles with -Werror"; exit 1
fi
grep -q -- "-Werror" "$work/werror/compile_commands.json" ||
  { echo "FAIL: -DDDPRUN_WERROR=ON does not add -Werror"; exit 1; }
grep -q -- "-Wall" "$work/default/compile_commands.json" ||
  { echo "FAIL: the default build has no warnings on"; exit 1; }
echo "PASS: warnings on by default, errors only with DDPRUN_WERROR=ON"
