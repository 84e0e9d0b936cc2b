#!/usr/bin/env bash
# Three hosts (network namespaces joined by a bridge, as root); host 2's link is shaped
# to 8 Mbit/s by a token bucket (tc tbf) on its interface, the others' are not (well
# under a quarter of theirs even on a loaded machine, where theirs fell to 9 MB/s; at
# 20 Mbit/s, 2.4 MB/s was not). With
# preflight's link check, the job's group rank 0 names host 2 as the node whose link
# is slow, and the run keeps every node's figures; without the shaping it names none.
# Usage: slow_link_test.sh DDPRUN
set -u
DDPRUN=$1
tag="dl$$"
net=10.79.0
# shellcheck source=three_hosts.sh
source "$(dirname "$0")/three_hosts.sh"

run_job() {  # run_job ID: the three agents, to the end
  local id=$1 i
  local conf="last_call_timeout=0.5,read_timeout=5,join_timeout=30"
  for i in 0 1 2; do
    ip netns exec "${tag}n$i" "$DDPRUN" --nnodes=3 --rdzv_backend=c10d \
      --rdzv_endpoint=${net}.1:29400 --rdzv_id="$id" --local_addr="${net}.$((i + 1))" \
      --rdzv_conf="$conf,is_host=$([ "$i" = 0 ] && echo 1 || echo 0)" \
      --preflight=all,link --log_level=info --tracking_dir="$dir/runs" \
      --no_python /bin/sh -c 'sleep 1' >"$dir/agent$i.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "an agent of $id exited $?"; done
  pids=()
}

run_job even
grep -q "preflight: link to ${net}.2: round trip" "$dir/agent0.log" || fail "host 0 gave no figures"
grep -q "is slow" "$dir"/agent*.log && fail "a slow link named where none is slowed"

if ! ip netns exec "${tag}n2" tc qdisc add dev "v${tag}2" root tbf rate 8mbit burst 32kbit \
    latency 400ms; then
  echo "cannot run: this kernel has no token bucket filter (tc qdisc tbf)"; exit $SKIP
fi
run_job shaped
grep -q "preflight: link: node ${net}.3.s link is slow: at best .* MB/s against a median of .* (to ${net}.1: .*; from ${net}.2: " \
  "$dir/agent0.log" || fail "host 2 was not named"
show=$("$DDPRUN" runs show shaped --tracking_dir="$dir/runs") || fail "runs show: $show"
echo "$show" | grep -q "links attempt 0 .*\"slow\":\[\"node ${net}.3's link is slow" ||
  fail "the run lacks the finding: $show"
echo "PASS: $(grep -o "node ${net}.3's link is slow.*" "$dir/agent0.log")"
