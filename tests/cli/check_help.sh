#!/usr/bin/env bash
# Checks that the `--help` of every subcommand uses one vocabulary: an option name means the
# same in every command that has it (same value name), no command uses a synonym of another's
# option (--comm only as an alias of --p2p), and every command says how it exits.
# usage: check_help.sh TOOL
set -u
tool=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
commands=$("$tool" --help | sed -n '/^commands:/,/^$/p' | awk 'NF > 1 && $1 != "commands:" {print $1}')
[[ -n $commands ]] || fail "no commands in ppsched --help"
: >"$tmp/all"
for c in $commands; do
  "$tool" "$c" --help >"$tmp/$c" 2>&1 || fail "$c --help: exit $?"
  # "  --name VALUE   help": the option and its value name (empty for a switch).
  grep -E '^  --[a-z]' "$tmp/$c" | awk -v c="$c" '{v = ($2 ~ /^[A-Z]+$/) ? $2 : "-"; print $1, v, c}' >>"$tmp/all"
done
# One value name per option name.
awk '{seen[$1] = seen[$1] " " $2} END {for (o in seen) print o, seen[o]}' "$tmp/all" |
  while read -r opt values; do
    first=${values%% *}
    for v in $values; do
      [[ $v == "$first" ]] || { echo "FAIL: $opt takes '$first' in one command and '$v' in another"; }
    done
  done >"$tmp/mismatch"
[[ -s $tmp/mismatch ]] && fail "$(cat "$tmp/mismatch")"
# Synonyms that must not exist (each has one name in ppsched).
for bad in --rank --stages --num-microbatches --microbatch --out --comms --latency --schedule; do
  grep -q "^$bad " "$tmp/all" && fail "an option is called $bad ($(grep "^$bad " "$tmp/all"))"
done
# --comm is only ever the alias of --p2p, and appears with it.
for c in $commands; do
  if grep -qE '^  --comm ' "$tmp/$c"; then
    grep -qE '^  --comm X +same as --p2p' "$tmp/$c" || fail "$c: --comm is not the alias of --p2p"
    grep -qE '^  --p2p X ' "$tmp/$c" || fail "$c: --comm without --p2p"
  fi
  # The memory unit is named wherever memory is an option.
  if grep -qE '^  --activation ' "$tmp/$c"; then
    grep -qE 'memory units' "$tmp/$c" || fail "$c: --activation does not name its unit"
  fi
done
# The commands that read an order file take the same configuration options.
for c in validate lower; do
  for o in --ranks --stages-per-rank --microbatches --placement --transport; do
    grep -qE "^  $o " "$tmp/$c" || fail "$c lacks $o"
  done
done
exit $failed
