#!/usr/bin/env bash
# Checks ddprun's Debian package without installing it: the files it claims, and the
# binary unpacked into a temporary root runs, finding its Python files beside it.
# Usage: scripts/check_deb.sh DEB
set -euo pipefail
deb=$1
fail() { echo "check_deb.sh: $*" >&2; exit 1; }
listing=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/ddprun \
         ./usr/share/ddprun/python/ddprun_tracking.py \
         ./usr/lib/python3/dist-packages/ddprun_tracking.py \
         ./usr/share/ddprun/python/hook/sitecustomize.py \
         ./usr/include/ddprun/store/tcpstore/tcp_store_client.h \
         ./usr/include/ddprun/rendezvous/tcp_store_client.h \
         ./usr/include/ddprun/tracking/ddprun_tracking.hpp \
         ./usr/lib/cmake/ddprun/ddprunConfig.cmake \
         ./usr/share/doc/ddprun/README.md \
         ./usr/share/doc/ddprun/docs/usage.md \
         ./usr/share/man/man1/ddprun.1 \
         ./usr/share/bash-completion/completions/ddprun \
         ./usr/share/zsh/vendor-completions/_ddprun \
         ./usr/share/doc/ddprun/examples/pytorch_ddp/train.py; do
  grep -qx "$f" <<<"$listing" || fail "$deb lacks $f"
done
dpkg-deb -f "$deb" Depends | grep -q "libc6" || fail "$deb declares no dependency on libc6"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
dpkg-deb -x "$deb" "$root"
"$root/usr/bin/ddprun" --version | grep -q "^ddprun " || fail "the unpacked ddprun does not run"
"$(dirname "$0")/check_tracked_job.sh" "$root" "$root/usr/share/ddprun/python/" "" \
  env PYTHON_EXEC=/usr/bin/python3 "$root/usr/bin/ddprun"
# Where python3 finds packages' modules (/usr/lib/python3/dist-packages once installed):
# a script run without ddprun imports the client, whose calls do nothing there.
env -u DDPRUN_TRACKING_STREAM PYTHONPATH="$root/usr/lib/python3/dist-packages" /usr/bin/python3 -c \
  'import ddprun_tracking as t; t.log({"loss": 1.0}); t.config({"lr": 0.1}); t.flush()' ||
  fail "ddprun_tracking from the package does not work outside a job"
echo "check_deb.sh: $deb holds what it claims and runs unpacked"
