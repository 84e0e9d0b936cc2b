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
cat > "$work/job.py" <<'PY'
import os
import ddprun_tracking
ddprun_tracking.log({"loss": 1.0 / (1 + int(os.environ["RANK"]))}, step=0)
ddprun_tracking.flush()
print(f"rank={os.environ['RANK']} world={os.environ['WORLD_SIZE']} "
      f"client={os.path.dirname(ddprun_tracking.__file__)}", flush=True)
PY
out=$(cd "$work" && TMPDIR="$work" PYTHON_EXEC=/usr/bin/python3 ./ddprun \
  --nproc_per_node=2 --tee=1 --tracking_dir "$work/runs" --rdzv_id=portable job.py 2>&1) ||
  fail "the job failed: $out"
for rank in 0 1; do
  grep -q "rank=$rank world=2 client=$work/ddprun-$(id -u)/python-" <<<"$out" ||
    fail "rank $rank did not run with the built-in tracking client: $out"
done
show=$("$work/ddprun" runs show portable --tracking_dir "$work/runs")
grep -q "status:   finished" <<<"$show" || fail "the run did not finish: $show"
grep -Eq "^ +loss +1 +1 " <<<"$show" || fail "rank 1's metric is not in the run: $show"
echo "check_portable.sh: $binary needs only glibc and runs a job alone ($(du -h "$binary" | cut -f1))"
