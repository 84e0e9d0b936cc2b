#!/usr/bin/env bash
# The torch2 part of the suite: real jobs of Debian's PyTorch 2.6 (trixie) and 2.14
# (forky) under the portable ddprun, inside roots that scripts/torch_root.sh makes once
# per machine, beside each release's own torchrun.   Usage: run.sh PORTABLE_DDPRUN [SUITE...]
# A root that cannot be made here (torch_root.sh's exit 3: no mirror, not root) is
# skipped with the reason, out loud; any other failure, and any failing case, fails it.
set -uo pipefail
cd "$(dirname "$0")/../.."
ddprun=$(readlink -f "${1:?usage: run.sh PORTABLE_DDPRUN [SUITE...]}")
shift
suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(trixie forky)
[ -x "$ddprun" ] || { echo "torch2: no ddprun at $ddprun" >&2; exit 2; }
cases=(test_torch2 test_straggler
  test_torch_jobs.DdpJob test_torch_jobs.StaticNodes test_torch_jobs.Environment
  test_torch_jobs.ElasticNodes.test_two_agents_under_c10d
  test_torch_jobs.ElasticNodes.test_killed_worker_restarts_both_agents)
failed=0
for suite in "${suites[@]}"; do
  root=$(scripts/torch_root.sh "$suite" 2>/tmp/torch_root_$$.err)
  made=$?
  why=$(tail -3 /tmp/torch_root_$$.err | tr '\n' ' ')
  rm -f /tmp/torch_root_$$.err
  if [ "$made" = 3 ]; then  # no mirror, no debootstrap, not root: said, not failed
    echo "torch2: SKIPPED $suite: its root cannot be made here: $why"
    continue
  elif [ "$made" != 0 ]; then
    echo "torch2: FAILED $suite: scripts/torch_root.sh exited $made: $why"
    failed=1
    continue
  fi
  echo "torch2: $suite, PyTorch $(cat "$root/.ddprun-torch-version"), in $root"
  start=$(date +%s)
  tests/torch2/in_root.sh "$root" env DDPRUN="$ddprun" PYTHONDONTWRITEBYTECODE=1 \
    PYTHONPATH=tests/torch2:tests/torch python3 -m unittest -v "${cases[@]}" 2>&1
  status=$?
  echo "torch2: $suite $([ "$status" = 0 ] && echo passed || echo FAILED) in $(($(date +%s) - start)) s"
  [ "$status" = 0 ] || failed=1
done
exit $failed
