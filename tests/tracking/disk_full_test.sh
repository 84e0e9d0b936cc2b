#!/usr/bin/env bash
# The tracking directory fills up mid-run (a 256 KiB tmpfs, as root): the workers keep
# running and the job succeeds, the error is reported once, and what was stored before
# stays readable. Usage: disk_full_test.sh DDPRUN
set -u
DDPRUN=$1
SKIP=77
[ "$(id -u)" -eq 0 ] || { echo "cannot run: needs root to mount a small tmpfs"; exit $SKIP; }
dir=$(mktemp -d)
mount -t tmpfs -o size=256k tmpfs "$dir" 2>/dev/null || { echo "cannot run: mount not allowed"; rmdir "$dir"; exit $SKIP; }
trap 'umount "$dir"; rmdir "$dir"; rm -f "$script" "$err"' EXIT
script=$(mktemp --suffix=.py)
err=$(mktemp)
cat >"$script" <<'PY'
import ddprun_tracking as t
for i in range(20000):
    t.log({"loss": i * 0.5, "acc": i, "lr": 0.1}, step=i)
PY
# Preflight's disk check would keep this node out of a job whose directory is all but
# full at its start (tests/preflight/); here the disk fills while the job runs.
PYTHON_EXEC=/usr/bin/python3 OMP_NUM_THREADS=1 "$DDPRUN" --nproc_per_node=2 --rdzv_id=full \
  --preflight=-disk --tracking_dir "$dir" "$script" 2>"$err"
rc=$?
fail() { echo "FAIL: $*"; cat "$err"; exit 1; }
[ $rc = 0 ] || fail "the job exited $rc: a full tracking disk must not stop the workers"
n=$(grep -c "error: tracking:" "$err")
[ "$n" = 1 ] || fail "expected one tracking error, got $n"
grep -q "disk is full" "$err" || fail "the error does not say the disk is full"
show=$("$DDPRUN" runs show full --tracking_dir "$dir") || fail "the run is unreadable"
echo "$show" | grep -q "run_started" || fail "records stored before the disk filled are gone"
echo "PASS: job succeeded, one error reported, earlier records kept"
