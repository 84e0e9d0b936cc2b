#!/usr/bin/env bash
# Every local deadline of ddprun is on the monotonic clock, so a jump of the wall clock
# (NTP stepping it, someone setting it) moves none of them. This lists the product's
# sources that read the wall clock and fails on any not below with its reason: a new
# use must say why it is no deadline, or be made monotonic.
# Usage: wall_clock_uses.sh SOURCE_DIR
set -euo pipefail
cd "$1"
declare -A allowed=(
  [agent/hang/timer_watchdog.cc]="torch's watchdog requests carry wall-clock expiries; each becomes a monotonic deadline when it arrives"
  [agent/worker_group_runner.cc]="a worker's exit time, shown in the failure summary"
  [launcher/main.cc]="the run's default name (run-YYYYMMDD-HHMMSS)"
  [rendezvous/host_clock.cc]="what the nodes of an elastic job share in wall time (the last call's deadline, quarantines), and the rendezvous host's clock against this node's (preflight's clock check)"
  [tracking/console_event_log.cc]="event timestamps"
  [tracking/run_summary.cc]="a running run's duration and goodput so far"
  [tracking/node_run.cc]="record and event timestamps"
  [store/tcpstore/tcp_store_session.cc]="the server's wall clock, which agents compare theirs with (preflight's clock check)"
)
pattern='system_clock|std::time\(|[^_a-z]time\(nullptr\)|gettimeofday|CLOCK_REALTIME'
mapfile -t found < <(git ls-files 'agent/*' 'common/*' 'dashboard/*' 'launcher/*' 'net/*' 'os/*' \
  'rendezvous/*' 'store/*' 'tracking/*' | grep -E '\.(cc|h)$' | xargs grep -lE "$pattern" | sort)
status=0
for f in "${found[@]}"; do
  if [ -z "${allowed[$f]+x}" ]; then
    echo "wall_clock_uses: $f reads the wall clock and is not listed here with its reason:"
    grep -nE "$pattern" "$f" | sed 's/^/  /'
    status=1
  fi
done
[ $status -eq 0 ] && echo "wall_clock_uses: ${#found[@]} sources read the wall clock, none for a local deadline"
exit $status
