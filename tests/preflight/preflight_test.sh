#!/usr/bin/env bash
# A node's preflight with the real binary, faults made the way they happen: a small
# /dev/shm and a full tracking directory in mount namespaces of their own, a low
# open-file limit, a failing and a hanging --health_check, and an elastic job that goes
# on without the node that failed. Usage: preflight_test.sh DDPRUN
set -uo pipefail
ddprun=$(readlink -f "$1")
tmp=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"; }
trap cleanup EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# expect NAME CODE PATTERN: the last run's status and a line of its stderr.
expect() {
  [ "$code" = "$2" ] || fail "$1: exit status $code, expected $2; stderr: $(cat "$tmp/err")"
  grep -qF -- "$3" "$tmp/err" || fail "$1: stderr lacks '$3': $(cat "$tmp/err")"
}
job=(--nproc_per_node=2 --no_tracking --no_python /bin/true)

# /dev/shm as small as Docker's default, in a mount namespace of its own.
unshare -m bash -c "mount -t tmpfs -o size=64m tmpfs /dev/shm && exec env -u OMP_NUM_THREADS $ddprun ${job[*]}" \
  2>"$tmp/err"; code=$?
expect "small /dev/shm" 122 "preflight: shm: /dev/shm: 64 MiB free, 2 worker(s) need 256 MiB"
grep -qF "this node does not join the job" "$tmp/err" || fail "no word that the node stays out"
grep -qF -- "--preflight=-shm leaves this check out" "$tmp/err" || fail "no word how to skip the check"
! grep -qF "OMP_NUM_THREADS is not set" "$tmp/err" || fail "the OMP_NUM_THREADS banner of workers that never start"
unshare -m bash -c "mount -t tmpfs -o size=64m tmpfs /dev/shm && exec env -u OMP_NUM_THREADS $ddprun --preflight=-shm ${job[*]}" \
  2>"$tmp/err"; code=$?
expect "the shm check left out" 0 "OMP_NUM_THREADS is not set"

# A tracking directory on a file system that is all but full: the run says why.
mkdir -p "$tmp/runs"
unshare -m bash -c "mount -t tmpfs -o size=8m tmpfs $tmp/runs && \
  $ddprun --rdzv_id=full --tracking_dir=$tmp/runs --no_python /bin/true 2>$tmp/err; \
  echo \$? > $tmp/code; $ddprun runs show full --tracking_dir=$tmp/runs > $tmp/show 2>&1"
code=$(cat "$tmp/code")
expect "full tracking directory" 122 "preflight: disk: $tmp/runs: "
grep -q "failed" "$tmp/show" || fail "the run is not failed: $(cat "$tmp/show")"
grep -qF "preflight failed on" "$tmp/show" || fail "the run lacks the reason: $(cat "$tmp/show")"

# The open-file limit the workers would inherit.
bash -c "ulimit -n 256; exec $ddprun ${job[*]}" 2>"$tmp/err"; code=$?
expect "ulimit -n 256" 122 "preflight: nofile: open files limited to 256"

# The site's own check: its status and last lines; one that hangs is bounded and killed.
"$ddprun" --health_check='echo checking; echo "GPU 3: uncorrectable ECC errors" >&2; exit 3' \
  "${job[@]}" 2>"$tmp/err"; code=$?
expect "failing health check" 122 "exited with status 3; its last output:"
grep -qF "GPU 3: uncorrectable ECC errors" "$tmp/err" || fail "the check's words are missing"
# (Two commands: the shell stays, its command line marked.)
"$ddprun" --health_check="sleep 300; : ddprun-preflight-$$" --health_check_timeout=1 "${job[@]}" \
  2>"$tmp/err"; code=$?
expect "hanging health check" 122 "gave no verdict within 1 s (--health_check_timeout) and was killed"
sleep 0.2
pgrep -f "^sh -c sleep 300; : ddprun-preflight-$$" >/dev/null && fail "the hanging check still runs"

# A stop signal during the check ends it and the job at once, and nothing is left.
"$ddprun" --health_check="sleep 300; : ddprun-preflight-term-$$" "${job[@]}" 2>"$tmp/err" &
pids+=($!)
check="^sh -c sleep 300; : ddprun-preflight-term-$$"
for _ in $(seq 200); do pgrep -f "$check" >/dev/null && break; sleep 0.05; done
pgrep -f "$check" >/dev/null || fail "the health check did not start"
kill -TERM "${pids[-1]}"; wait "${pids[-1]}"; code=$?
expect "SIGTERM during the health check" 143 "received SIGTERM"
sleep 0.2
pgrep -f "$check" >/dev/null && fail "the interrupted check still runs"
pids=()

# An elastic job of 2 to 3 nodes goes on without the node that failed its check.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
elastic=(--nnodes=2:3 --nproc_per_node=1 --rdzv_backend=c10d --rdzv_endpoint=127.0.0.1:$port
         --rdzv_id=pf$$ --local_addr=127.0.0.1 --no_tracking --no_python)
worker=(/bin/sh -c 'echo "world=$WORLD_SIZE"')
"$ddprun" "${elastic[@]}" --rdzv_conf=is_host=1,last_call_timeout=1 "${worker[@]}" \
  >"$tmp/a.out" 2>"$tmp/a.err" & pids+=($!)
sleep 0.3
# (The unfit node has an address of its own: nodes are kept out by address.)
"$ddprun" "${elastic[@]}" --local_addr=127.0.0.3 --rdzv_conf=is_host=0,last_call_timeout=1 \
  --health_check='exit 1' "${worker[@]}" >"$tmp/c.out" 2>"$tmp/err"; code=$?
expect "the unfit node" 122 "preflight: health_check: \`exit 1\` exited with status 1"
grep -qF "could not be told" "$tmp/err" && fail "the unfit node did not tell the others: $(cat "$tmp/err")"
"$ddprun" "${elastic[@]}" --rdzv_conf=is_host=0,last_call_timeout=1 "${worker[@]}" \
  >"$tmp/b.out" 2>"$tmp/b.err"; b=$?
wait "${pids[0]}"; a=$?
[ "$a" = 0 ] && [ "$b" = 0 ] || fail "the two fit nodes: $a and $b; $(cat "$tmp/a.err" "$tmp/b.err")"
grep -q "world=2" "$tmp/a.out" || fail "the job did not run with 2 nodes: $(cat "$tmp/a.out")"
# The others were told which node is out and why, though it never joined.
for n in a b; do
  grep -qE "node 127\.0\.0\.3 is kept out of the job for [0-9]+ s: preflight failed on" "$tmp/$n.err" ||
    fail "node $n was not told why 127.0.0.3 is out: $(cat "$tmp/$n.err")"
done

# An unfit node that was to host the others' store says that they cannot start without it.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$ddprun" --nnodes=2 --nproc_per_node=1 --rdzv_backend=c10d --rdzv_endpoint=127.0.0.1:$port \
  --local_addr=127.0.0.1 --no_tracking --health_check='exit 1' --no_python /bin/true 2>"$tmp/err"
code=$?
expect "the unfit host" 122 "the other nodes could not be told: this node was to host the rendezvous store at 127.0.0.1:$port"

[ "$failures" = 0 ] && echo "preflight_test: all passed"
exit "$failures"
