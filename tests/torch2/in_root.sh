#!/usr/bin/env bash
# Runs a command inside a Debian root made by scripts/torch_root.sh, as root, in a mount
# namespace of its own (every mount below ends with it): /proc, /dev and /sys are the
# host's, and this checkout and /tmp appear at their own paths, so the project's files,
# builds and scratch directories keep their paths inside. DDPRUN_ROOT_HOSTS names a hosts
# file to use there instead of the host's /etc/hosts.   Usage: in_root.sh ROOT COMMAND [ARGS...]
set -euo pipefail
root=${1:?usage: in_root.sh ROOT COMMAND [ARGS...]}
shift
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ -f "$root/.ddprun-root-ready" ] || { echo "in_root: $root is not a finished torch root" >&2; exit 2; }
mkdir -p "$root$repo"
touch "$root/etc/hosts"
hosts=${DDPRUN_ROOT_HOSTS:-/etc/hosts}
exec unshare --mount --propagation private -- /bin/sh -euc '
  root=$1 repo=$2 hosts=$3; shift 3
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  mount --bind "$repo" "$root$repo"
  mount --bind "$hosts" "$root/etc/hosts"
  mount --bind /tmp "$root/tmp"  # scratch paths read the same on both sides
  cd "$root$repo"
  exec chroot "$root" /usr/bin/env -C "$repo" "$@"
' in_root "$root" "$repo" "$hosts" "$@"
