#!/usr/bin/env bash
# Makes (once per machine) and prints a Debian root with that release's PyTorch, for the
# torch2 tests and benchmarks: trixie has python3-torch 2.6, forky 2.14.
#   scripts/torch_root.sh trixie|forky      prints the root's path, making it if needed
# The roots live under $DDPRUN_TORCH_ROOTS (default /var/cache/ddprun/torch-roots), are
# made with debootstrap from the mirror apt already uses, and are reused while they hold
# the marker the last step writes. Exit 3: the root cannot be made here (no debootstrap,
# not root, no mirror): the caller skips and says why.
set -euo pipefail
suite=${1:?usage: torch_root.sh trixie|forky}
case "$suite" in trixie | forky) ;; *) echo "torch_root: unknown suite '$suite' (trixie or forky)" >&2; exit 2 ;; esac
top=${DDPRUN_TORCH_ROOTS:-/var/cache/ddprun/torch-roots}
root=$top/$suite
if [ -f "$root/.ddprun-root-ready" ]; then echo "$root"; exit 0; fi

if [ "$(id -u)" -ne 0 ]; then echo "torch_root: making a Debian root needs root" >&2; exit 3; fi
if ! command -v debootstrap >/dev/null; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null 2>&1 || {
    echo "torch_root: debootstrap is not installed and could not be installed" >&2; exit 3; }
fi
mirror=${DDPRUN_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
  mirror=$(grep -hvE '^[[:space:]]*#' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null |
    grep -oE 'https?://[^ ]*/debian/?( |$)' | head -1 | tr -d ' ' || true)
  mirror=${mirror:-http://deb.debian.org/debian}  # no such line: Debian's own
fi
script=/usr/share/debootstrap/scripts/$suite
[ -e "$script" ] || script=/usr/share/debootstrap/scripts/sid  # forky: no script of its own yet

mkdir -p "$top"
exec 9>"$top/.$suite.lock"
flock 9  # two callers at once: the second waits and reuses the first's root
if [ -f "$root/.ddprun-root-ready" ]; then echo "$root"; exit 0; fi
work=$root.partial
rm -rf "$work"
log=$top/$suite.log
echo "torch_root: making the $suite root in $root (a few minutes, once; log: $log)" >&2
if ! debootstrap --variant=minbase --include=python3-torch,python3-numpy,procps \
  "$suite" "$work" "$mirror" "$script" >"$log" 2>&1; then
  echo "torch_root: debootstrap of $suite from $mirror failed (last lines of $log):" >&2
  tail -3 "$log" >&2
  rm -rf "$work"
  exit 3
fi
rm -rf "$work"/var/cache/apt/archives/*.deb
chroot "$work" dpkg-query -W -f='${Version}\n' python3-torch >"$work/.ddprun-torch-version"
touch "$work/.ddprun-root-ready"
rm -rf "$root"
mv "$work" "$root"
echo "$root"
