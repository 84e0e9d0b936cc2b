#!/usr/bin/env bash
# Debian's Prometheus scrapes a real two-node job through --metrics_sd_file: started by
# this test on loopback with a data directory of its own, it is asked (PromQL, over its
# HTTP API) for the restarts after an injected failure and for every rank's progress.
# promtool finds nothing wrong in the exposition; bad flag values and a port in use get
# one clear error. Usage: prometheus_test.sh DDPRUN
set -u
ddprun=$(readlink -f "$1")
here=$(cd "$(dirname "$0")" && pwd)
SKIP=77
command -v prometheus >/dev/null && command -v promtool >/dev/null ||
  { echo "cannot run: Debian's prometheus is not installed (scripts/install_deps.sh installs it)"; exit $SKIP; }
dir=$(mktemp -d)
pids=()
cleanup() {
  touch "$dir/stop"
  for p in "${pids[@]}"; do { kill -9 "$p" && wait "$p"; } 2>/dev/null; done
  rm -rf "$dir"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in a.err b.err prometheus.log; do echo "--- $f"; tail -20 "$dir/$f" 2>/dev/null; done
  exit 1
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
query() {  # query PROMQL: the API's JSON answer
  python3 - "$prom" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/api/v1/query?" + urllib.parse.urlencode({"query": sys.argv[2]})
print(json.dumps(json.load(urllib.request.urlopen(url, timeout=5))["data"]["result"]))
PY
}
eventually() {  # eventually SECONDS CMD...: until CMD succeeds
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.5; done
}

# Flags.
"$ddprun" --metrics_port=http --no_python /bin/true 2>"$dir/err" && fail "a port that is no number was taken"
grep -qF -- "--metrics_port=http" "$dir/err" || fail "the bad port is not named: $(cat "$dir/err")"
"$ddprun" --metrics_port=70000 --no_python /bin/true 2>"$dir/err" && fail "port 70000 was taken"
grep -qF "from 0 to 65535" "$dir/err" || fail "the range is not said: $(cat "$dir/err")"
"$ddprun" --metrics_sd_file="$dir/t.json" --no_python /bin/true 2>"$dir/err" && fail "an sd file without a port was taken"
grep -qF "needs --metrics_port" "$dir/err" || fail "$(cat "$dir/err")"
busy=$(free_port)
python3 -c "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',$busy)); s.listen(); open('$dir/busy','w').close(); time.sleep(60)" &
pids+=($!)
eventually 20 test -e "$dir/busy" || fail "the port could not be taken for the test"
"$ddprun" --metrics_port="$busy" --no_tracking --no_python /bin/true 2>"$dir/err"; code=$?
[ "$code" = 2 ] || fail "a port in use: exit status $code, expected 2 (a usage error)"
grep -qF -- "--metrics_port=$busy" "$dir/err" || fail "the port in use is not named: $(cat "$dir/err")"
grep -q "127.0.0.1:$busy" "$dir/err" || fail "the address in use is not named: $(cat "$dir/err")"

# A two-node job whose rank 1 fails once; Prometheus finds both agents through the list.
rdzv=$(free_port)
job=(--nnodes=2 --nproc_per_node=2 --rdzv_backend=c10d --rdzv_endpoint=127.0.0.1:$rdzv
     --rdzv_id=metrics$$ --local_addr=127.0.0.1 --max_restarts=1 --tracking_dir="$dir/runs"
     --metrics_port=0 --metrics_sd_file="$dir/targets.json" --straggler_window=1)
"$ddprun" "${job[@]}" --rdzv_conf=is_host=1 "$here/worker.py" "$dir" >/dev/null 2>"$dir/a.err" &
a=$!
"$ddprun" "${job[@]}" --rdzv_conf=is_host=0 "$here/worker.py" "$dir" >/dev/null 2>"$dir/b.err" &
b=$!
pids+=("$a" "$b")
has_two_targets() { [ -s "$dir/targets.json" ] && [ "$(grep -c '127.0.0.1:' "$dir/targets.json")" = 2 ]; }
eventually 30 has_two_targets || fail "no list of both agents: $(cat "$dir/targets.json" 2>&1)"

prom=$(free_port)
cat >"$dir/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: ddprun
    file_sd_configs:
      - files: ["$dir/targets.json"]
        refresh_interval: 1s
YML
prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
  --web.listen-address=127.0.0.1:$prom >"$dir/prometheus.log" 2>&1 &
pids+=($!)

restarted() { [ "$(query 'sum(ddprun_restarts_total)')" != "[]" ] &&
              query 'sum(ddprun_restarts_total)' | grep -q '"2"'; }
eventually 60 restarted || fail "Prometheus did not see one restart on each agent: $(query 'ddprun_restarts_total')"
ranks_stepping() {  # every rank of the second attempt past its fifth step, per Prometheus
  [ "$(query 'count(ddprun_rank_step > 5)' | grep -o '"[0-9]*"]' | tr -dc 0-9)" = 4 ]
}
eventually 60 ranks_stepping || fail "the ranks' steps: $(query 'ddprun_rank_step')"
query 'ddprun_world_size' | grep -q '"4"' || fail "world size: $(query 'ddprun_world_size')"
# The rendezvous host's store answered the agents; the workers' stores (these workers
# use none) are there with their connections.
query 'sum by (store) (ddprun_store_requests_total{op="compare_set"})' | grep -q '"store": "rendezvous"' ||
  fail "the rendezvous store's requests: $(query 'ddprun_store_requests_total')"
[ "$(query 'count(ddprun_store_connections{store="workers"})' | grep -o '"[0-9]*"]' | tr -dc 0-9)" = 2 ] ||
  fail "the workers' stores: $(query 'ddprun_store_connections')"

# Straggler detection scored every rank; each agent accounts the job's time so far.
scored() { [ "$(query 'count(ddprun_rank_straggler_score)' | grep -o '"[0-9]*"]' | tr -dc 0-9)" = 4 ]; }
eventually 30 scored || fail "the ranks' straggler scores: $(query 'ddprun_rank_straggler_score')"
[ "$(query 'count(ddprun_goodput_ratio > 0)' | grep -o '"[0-9]*"]' | tr -dc 0-9)" = 2 ] ||
  fail "goodput: $(query 'ddprun_goodput_ratio')"
query 'max(ddprun_goodput_seconds{category="restart"})' | grep -qv '"0"' ||
  fail "the restart's time: $(query 'ddprun_goodput_seconds')"

# Every step each worker logged went into the run through its node.
[ "$(query 'count(ddprun_tracking_records_total > 10)' | grep -o '"[0-9]*"]' | tr -dc 0-9)" = 2 ] ||
  fail "the records taken into the run: $(query 'ddprun_tracking_records_total')"

# The exposition itself, as promtool reads it.
target=$(grep -o '127.0.0.1:[0-9]*' "$dir/targets.json" | head -1)
python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://$target/metrics').read().decode())" \
  >"$dir/exposition.txt" || fail "no exposition at $target"
promtool check metrics <"$dir/exposition.txt" || fail "promtool: $(promtool check metrics <"$dir/exposition.txt" 2>&1)"
grep -q 'ddprun_step_seconds_count [1-9]' "$dir/exposition.txt" || fail "no step times: $(grep step_seconds "$dir/exposition.txt")"

# The monitoring example's configuration and rules.
promtool check rules "$here/../../examples/monitoring/ddprun_rules.yml" >/dev/null ||
  fail "examples/monitoring: $(promtool check rules "$here/../../examples/monitoring/ddprun_rules.yml" 2>&1)"
promtool check config "$here/../../examples/monitoring/prometheus.yml" >/dev/null ||
  fail "examples/monitoring: $(promtool check config "$here/../../examples/monitoring/prometheus.yml" 2>&1)"
# Its commented alternative to the discovery file, uncommented, is valid too and carries
# the label the rules group by.
sed 's/^    # \( *\)\(static_configs\|- targets\|labels\|ddprun_run_id\)/    \1\2/' \
  "$here/../../examples/monitoring/prometheus.yml" >"$dir/static.yml"
cp "$here/../../examples/monitoring/ddprun_rules.yml" "$dir/"
grep -q '^          ddprun_run_id:' "$dir/static.yml" || fail "the static_configs example lacks ddprun_run_id"
promtool check config "$dir/static.yml" >/dev/null ||
  fail "examples/monitoring, static_configs: $(promtool check config "$dir/static.yml" 2>&1)"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$here/../../examples/monitoring/grafana_dashboard.json" ||
  fail "the Grafana dashboard is no JSON"

touch "$dir/stop"
wait "$a" || fail "agent a exited $?"
wait "$b" || fail "agent b exited $?"
echo "prometheus_test: all passed ($(query 'sum(ddprun_rank_step)' | grep -o '"[0-9.]*"]' | tr -d '"]') steps summed over the ranks)"
