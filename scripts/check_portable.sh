#!/usr/bin/env bash
# Checks a portable ddprun (-DDDPRUN_PORTABLE=ON): it needs nothing but glibc, and a copy
# of it alone in an empty directory runs a 2-worker job that logs to the shared run
# through the Python client built into it. Usage: scripts/check_portable.sh BINARY
set -euo pipefail
binary=$(realpath "$1")
fail() { echo "check_portable.sh: $*" >&2; exit 1; }

# glibc's own libraries and the loader: everything else must be linked in.
while read -r lib _; do
  case "$lib" in
    linux-vdso.so.1|libc.so.6|libm.so.6|libpthread.so.0|libdl.so.2|librt.so.1) ;;
    /lib*/ld-linux*.so.*|ld-linux*.so.*) ;;
    *) fail "$binary needs $lib: not portable (ldd: $(ldd "$binary" | tr '\n' ' '))" ;;
  esac
done < <(ldd "$binary")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$binary" "$work/ddprun"
# The built-in client, written under $TMPDIR on first use.
"$(dirname "$0")/check_tracked_job.sh" "$work" "$work/ddprun-$(id -u)/python-" "" \
  env TMPDIR="$work" PYTHON_EXEC=/usr/bin/python3 "$work/ddprun"
echo "check_portable.sh: $binary needs only glibc and runs a job alone ($(du -h "$binary" | cut -f1))"
