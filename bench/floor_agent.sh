#!/bin/sh
# The machine's floor under scale_bench.py's real-agent rows: `floor_agent.sh GO
# <an agent's arguments>` waits until the benchmark opens the FIFO GO for writing (once
# the last agent has started, as a round forms once the last agent has joined),
# then runs the worker after --no_python as a child with a RANK of its own and waits
# for it: the same processes as an agent and its worker, with nothing to agree on.
go=$1
shift
while [ "$#" -gt 0 ] && [ "$1" != --no_python ]; do shift; done
[ "$#" -gt 1 ] || { echo "floor_agent.sh: no worker after --no_python" >&2; exit 2; }
shift
{ : < "$go"; } || exit 2  # blocks in open() until there is a writer: no process of its own
RANK=$$ TORCHELASTIC_RESTART_COUNT=0 "$@"
