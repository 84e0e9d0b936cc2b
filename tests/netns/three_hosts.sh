# Sourced by the netns tests: three hosts, network namespaces "${tag}n0..2" joined by a
# bridge, with addresses ${net}.1 to ${net}.3; as root, or the test exits 77 saying why.
# Before sourcing, set `tag` (unique per test run) and `net` (e.g. 10.77.0). Gives
# $dir (removed at exit, with every namespace and every pid in `pids`), fail and wait_for.
SKIP=77  # ctest's SKIP_RETURN_CODE: printed with the reason, never silently passed

if [ "$(id -u)" -ne 0 ] || ! command -v ip >/dev/null; then
  echo "cannot run: needs root and iproute2 to create network namespaces"; exit $SKIP
fi
hub="${tag}hub"
if ! ip netns add "$hub" 2>/dev/null; then
  echo "cannot run: this machine does not allow network namespaces"; exit $SKIP
fi
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  for i in 0 1 2; do ip netns del "${tag}n$i" 2>/dev/null; done
  ip netns del "$hub" 2>/dev/null
  rm -rf "$dir"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for i in 0 1 2; do echo "--- agent $i"; cat "$dir/agent$i.log"; done; exit 1; }

ip netns exec "$hub" ip link add br0 type bridge
ip netns exec "$hub" ip link set br0 up
for i in 0 1 2; do
  ns="${tag}n$i"
  ip netns add "$ns"
  ip link add "v${tag}$i" type veth peer name "h${tag}$i"
  ip link set "v${tag}$i" netns "$ns"
  ip link set "h${tag}$i" netns "$hub"
  ip netns exec "$hub" ip link set "h${tag}$i" master br0 up
  ip netns exec "$ns" ip addr add "${net}.$((i + 1))/24" dev "v${tag}$i"
  ip netns exec "$ns" ip link set "v${tag}$i" up
  ip netns exec "$ns" ip link set lo up
done

wait_for() {  # wait_for SECONDS FILE... (relative to $dir)
  local deadline=$((SECONDS + $1)); shift
  while [ $SECONDS -lt $deadline ]; do
    local ok=1
    for f in "$@"; do [ -e "$dir/$f" ] || ok=0; done
    [ $ok = 1 ] && return 0
    sleep 0.02
  done
  return 1
}
