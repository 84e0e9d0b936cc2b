#!/usr/bin/env bash
# Runs a 2-worker Python job that logs to the shared run, in DIR, with the ddprun that
# COMMAND... starts (a binary, or `env ... ddprun`), and checks that both workers ran
# on the Python whose prefix is PYTHON_PREFIX ("" for any) and imported the tracking
# client from under CLIENT_PREFIX, and that the run finished with rank 1's metric.
# What the packaging checks share. Usage:
#   scripts/check_tracked_job.sh DIR CLIENT_PREFIX PYTHON_PREFIX COMMAND...
set -euo pipefail
dir=$1 client=$2 python=$3
shift 3
fail() { echo "check_tracked_job.sh: $*" >&2; exit 1; }
cat > "$dir/job.py" <<'PY'
import os, sys
import ddprun_tracking
ddprun_tracking.log({"loss": 1.0 / (1 + int(os.environ["RANK"]))}, step=0)
ddprun_tracking.flush()
print(f"rank={os.environ['RANK']} python={sys.prefix} client={ddprun_tracking.__file__}",
      flush=True)
PY
out=$(cd "$dir" && "$@" --nproc_per_node=2 --tee=1 --tracking_dir "$dir/runs" \
  --rdzv_id=tracked job.py 2>&1) || fail "the job failed: $out"
for rank in 0 1; do
  grep -q "rank=$rank python=$python.* client=$client" <<<"$out" ||
    fail "rank $rank did not run with python $python* and the client under $client: $out"
done
show=$("$@" runs show tracked --tracking_dir "$dir/runs")
grep -q "status:   finished" <<<"$show" || fail "the run did not finish: $show"
grep -Eq "^ +loss +1 +1 " <<<"$show" || fail "rank 1's metric is not in the run: $show"
