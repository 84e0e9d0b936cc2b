#!/usr/bin/env bash
# docs/flags.md is what the binary generates from its flag table, and the manual page
# is well-formed roff: neither drifts from the flags. Usage: flag_reference.sh DDPRUN SOURCE_DIR
set -euo pipefail
ddprun=$1 src=$2
if ! diff -u "$src/docs/flags.md" <("$ddprun" reference markdown); then
  echo "flag_reference: docs/flags.md differs from the flag table; regenerate it with" \
       "\`ddprun reference markdown > docs/flags.md\`" >&2
  exit 1
fi
page=$("$ddprun" reference man)
grep -q '^\.TH DDPRUN 1 ' <<<"$page" || { echo "flag_reference: no .TH header" >&2; exit 1; }
# Every flag of the table is in the manual.
for flag in $("$ddprun" reference markdown | grep -o '^| `--[a-z_0-9]*`' | tr -d '|` '); do
  grep -qF "\\fB\\-\\-${flag#--}\\fR" <<<"$page" || { echo "flag_reference: $flag not in the manual" >&2; exit 1; }
done
# docs/usage.md says what each flag does beside torchrun: every flag is named there.
for flag in $("$ddprun" reference markdown | grep -o '^| `--[a-z_0-9]*`' | tr -d '|` '); do
  grep -qE -- "(\`|/)$flag\b" "$src/docs/usage.md" ||
    { echo "flag_reference: $flag is not in docs/usage.md" >&2; exit 1; }
done
if command -v groff >/dev/null; then
  warnings=$(groff -man -Tutf8 -ww -z <<<"$page" 2>&1) ||
    { echo "flag_reference: groff failed: $warnings" >&2; exit 1; }
  [ -z "$warnings" ] || { echo "flag_reference: groff: $warnings" >&2; exit 1; }
fi
echo "flag_reference: docs/flags.md and the manual page match the flag table"
