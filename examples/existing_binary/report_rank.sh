#!/bin/sh
# A program that knows nothing of ddprun: it takes a --device flag and reads the
# environment every launcher gives its workers. Stands in for any binary you have.
device=none
while [ $# -gt 0 ]; do
  case "$1" in
    --device) device=$2; shift 2 ;;
    *) echo "report_rank: unknown argument $1" >&2; exit 2 ;;
  esac
done
echo "rank $RANK of $WORLD_SIZE, local rank $LOCAL_RANK on device $device," \
     "store at $MASTER_ADDR:$MASTER_PORT, attempt $TORCHELASTIC_RESTART_COUNT"
