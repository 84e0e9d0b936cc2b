#!/usr/bin/env bash
# Three hosts (network namespaces joined by a bridge, as root): a job of --nnodes=2 runs
# on hosts 0 and 1, host 2's agent waits as a hot spare. Host 1's link is cut: the job
# must be back at full size with the spare (with no spare, 1 node < MIN would end it),
# and print how long that took from the cut (liveness: 0.2 s x 3 here).
# Usage: spare_test.sh DDPRUN TEST_WORKER
set -u
DDPRUN=$1
WORKER=$2
tag="ds$$"
net=10.78.0
# shellcheck source=three_hosts.sh
source "$(dirname "$0")/three_hosts.sh"
for i in 0 1 2; do mkdir "$dir/h$i"; done

conf="last_call_timeout=0.5,keep_alive_interval=0.2,keep_alive_max_attempt=3,read_timeout=2,join_timeout=30"
start_agent() {  # start_agent I
  local i=$1 host
  host=$([ "$i" = 0 ] && echo 1 || echo 0)
  OMP_NUM_THREADS=1 ip netns exec "${tag}n$i" "$DDPRUN" --nnodes=2 --rdzv_backend=c10d \
    --rdzv_endpoint=${net}.1:29400 --rdzv_id=spares --local_addr="${net}.$((i + 1))" \
    --rdzv_conf="$conf,is_host=$host" --no_tracking --no_python "$WORKER" mark "$dir/h$i" \
    >"$dir/agent$i.log" 2>&1 &
  pids+=($!)
}

start_agent 0
sleep 0.3
start_agent 1
wait_for 20 h0/w2.r0.a0 h1/w2.r1.a0 || fail "hosts 0 and 1 never ran together"
start_agent 2
for _ in $(seq 200); do grep -q "waiting as a spare" "$dir/agent2.log" && break; sleep 0.05; done
grep -q "waiting as a spare" "$dir/agent2.log" || fail "host 2 does not wait as a spare"
[ -z "$(ls "$dir/h2")" ] || fail "the spare ran workers while the job was full"

cut=$(date +%s%N)
ip netns exec "${tag}n1" ip link set "v${tag}1" down
wait_for 20 h2/w2.r1.a0 || fail "the spare did not take host 1's place"
back=$(stat -c %.9Y "$dir/h2/w2.r1.a0" | tr -d .)
grep -q "1 spare(s) waiting" "$dir/agent0.log" || fail "host 0 did not count the spare"

kill -TERM "${pids[0]}" "${pids[2]}"
wait "${pids[0]}"; rc0=$?
wait "${pids[2]}"; rc2=$?
[ $rc0 = 143 ] && [ $rc2 = 143 ] || fail "hosts 0 and 2 exited $rc0 and $rc2, not 143"
echo "PASS: the spare took the cut-off host's place: full size again $(((back - cut) / 1000000)) ms after the link cut (a node is judged dead after 0.6 s here)"
