#!/usr/bin/env bash
# Shell completion, generated from ddprun's flag table: it offers every long flag that
# --help lists (both spellings), the values of flags with few, the `runs` subcommands,
# and only files once the script is named. Usage: completion_test.sh DDPRUN
set -euo pipefail
ddprun=$1
fail() { echo "FAIL: $*" >&2; exit 1; }
script=$(mktemp)
trap 'rm -f "$script"' EXIT
"$ddprun" completion bash > "$script"
bash -n "$script" || fail "the bash script does not parse"

# What completion offers for the words given (the last one being completed).
offers() {
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ddprun
           printf "%s\n" "${COMPREPLY[@]}"' _ "$script" "$@" | sort
}

help_flags=$("$ddprun" --help | grep -oE '^ +(-[a-zA-Z] \[ )?--[a-z_]+' | grep -o -- '--[a-z_]*' | sort -u)
offered=$(offers ddprun --)
missing=$(comm -23 <(echo "$help_flags") <(echo "$offered"))
[ -z "$missing" ] || fail "flags in --help that completion does not offer: $missing"
grep -qx -- --nproc-per-node <<<"$offered" || fail "the dashed spelling is not offered"

[ "$(offers ddprun --rdzv_backend '')" = "$(printf 'c10d\netcd\nstatic')" ] ||
  fail "--rdzv_backend's values: $(offers ddprun --rdzv_backend '')"
[ "$(offers ddprun --numa-binding = ex)" = "exclusive" ] ||
  fail "--numa-binding=ex: $(offers ddprun --numa-binding = ex)"
[ "$(offers ddprun runs '')" = "$(printf 'export\nlist\nmerge\nrepair\nreport\nserve\nshow')" ] ||
  fail "runs' subcommands: $(offers ddprun runs '')"
[ -z "$(offers ddprun --nnodes 2 train.py --)" ] || fail "flags offered after the script"

zsh_script=$("$ddprun" completion zsh)
[ "${zsh_script%%$'\n'*}" = "#compdef ddprun" ] || fail "no zsh script"
[ "$("$ddprun" --print-completion bash)" = "$(cat "$script")" ] ||
  fail "--print-completion bash (torchrun 2.14's spelling) differs from ddprun completion bash"

# tcsh: the script loads, and its flag list is --help's.
"$ddprun" --print_completion tcsh > "$script"
defined=$(tcsh -f -c "source $script; complete ddprun") || fail "the tcsh script does not load"
tcsh_flags=$(grep -o "c/--/([^)]*)" <<<"$defined" | tr ' (' '\n\n' | grep -v -e '^c/--/$' -e '^$' |
  tr -d ')' | sed 's/^/--/' | sort -u)
missing=$(comm -23 <(echo "$help_flags") <(echo "$tcsh_flags"))
[ -z "$missing" ] || fail "flags in --help that tcsh completion does not offer: $missing"
grep -q "n/--rdzv_backend/(static c10d etcd)/" <<<"$defined" || fail "tcsh: --rdzv_backend's values"

if msg=$("$ddprun" completion fish 2>&1); then fail "fish was accepted"; fi
grep -q "'fish' is not a shell" <<<"$msg" || fail "fish is not named: $msg"
echo "PASS: completion offers the $(wc -l <<<"$help_flags") flags of --help and their values"
