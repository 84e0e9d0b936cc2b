#!/usr/bin/env bash
# ddprun is built hardened (cmake/hardening.cmake): position-independent, full RELRO
# (bound at start, GOT read-only), stack protector, and, outside sanitizer and Debug
# builds, glibc's checked calls (_FORTIFY_SOURCE).
# Usage: hardened_binary.sh BINARY FORTIFIED(0|1)
set -euo pipefail
binary=$1
fortified=$2
fail() { echo "FAIL: $binary: $*"; exit 1; }
readelf -hW "$binary" | grep -Eq 'Type:[[:space:]]+DYN' || fail "not position-independent"
readelf -lW "$binary" | grep -q GNU_RELRO || fail "no RELRO segment"
readelf -dW "$binary" | grep -Eq '\((FLAGS|FLAGS_1)\).*\b(BIND_NOW|NOW)\b' ||
  fail "lazily bound: its GOT stays writable (no -z now)"
symbols=$(readelf --dyn-syms -W "$binary")
grep -q '__stack_chk_fail' <<<"$symbols" || fail "no stack protector"
if [ "$fortified" = 1 ]; then
  grep -Eq '__[a-z0-9_]+_chk@' <<<"$symbols" || fail "no checked glibc calls (_FORTIFY_SOURCE)"
fi
echo "PASS: $binary is PIE, full RELRO, stack-protected$([ "$fortified" = 1 ] && echo ", fortified")"
