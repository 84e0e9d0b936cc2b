#!/usr/bin/env bash
# Three ddprun agents on three hosts (network namespaces joined by a bridge, as root)
# run an elastic job; then one host's link is cut, not its process killed. The two
# others must notice through heartbeats and go on at the smaller size; the cut-off
# agent must stop its workers and exit naming the endpoint.
# Usage: link_cut_test.sh DDPRUN TEST_WORKER
set -u
DDPRUN=$1
WORKER=$2
tag="dd$$"
net=10.77.0
# shellcheck source=three_hosts.sh
source "$(dirname "$0")/three_hosts.sh"

conf="last_call_timeout=0.5,keep_alive_interval=0.2,keep_alive_max_attempt=3,read_timeout=2,join_timeout=30"
for i in 0 1 2; do
  host=$([ $i = 0 ] && echo 1 || echo 0)
  OMP_NUM_THREADS=1 ip netns exec "${tag}n$i" "$DDPRUN" --nnodes=2:3 --rdzv_backend=c10d \
    --rdzv_endpoint=${net}.1:29400 --rdzv_id=netns --local_addr="${net}.$((i + 1))" \
    --rdzv_conf="$conf,is_host=$host" --no_python "$WORKER" mark "$dir" \
    >"$dir/agent$i.log" 2>&1 &
  pids+=($!)
  [ $i = 0 ] && sleep 0.3
done

wait_for 20 w3.r0.a0 w3.r1.a0 w3.r2.a0 || fail "three hosts never ran together"
# Cut host 2's link. Its process keeps running.
ip netns exec "${tag}n2" ip link set "v${tag}2" down
wait_for 20 w2.r0.a0 w2.r1.a0 || fail "the two hosts left did not go on"
# The cut-off agent stops its workers and exits, naming the endpoint. It takes about a
# second here; twice in CI's loaded runs it was still there after 20 s, for a reason not
# yet found: past 20 s its threads' stacks are printed (in ctest's log) for the next
# look, and only past 60 s does the test fail.
exited_within() {  # exited_within SECONDS
  local deadline=$((SECONDS + $1))
  while kill -0 "${pids[2]}" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
  ! kill -0 "${pids[2]}" 2>/dev/null
}
if ! exited_within 20; then
  echo "the cut-off agent is still running after 20 s; its threads:"
  eu-stack -p "${pids[2]}" 2>&1 || gdb -p "${pids[2]}" -batch -ex "thread apply all bt" 2>&1
  exited_within 40 || fail "the cut-off agent is still running"
fi
wait "${pids[2]}"; rc=$?
[ $rc -ne 0 ] || fail "the cut-off agent exited 0"
grep -q "${net}.1:29400" "$dir/agent2.log" || fail "the cut-off agent did not name the endpoint"
# Survivors: stop them and check nothing is left.
kill -TERM "${pids[0]}" "${pids[1]}"
wait "${pids[0]}"; rc0=$?
wait "${pids[1]}"; rc1=$?
[ $rc0 = 143 ] && [ $rc1 = 143 ] || fail "survivors exited $rc0 and $rc1, not 143"
sleep 0.2
if pgrep -f "$WORKER mark $dir" >/dev/null; then fail "workers survived"; fi
echo "PASS: link cut detected, survivors went on with 2 hosts, the cut-off agent exited $rc"
