#!/usr/bin/env bash
# Runs the ppsched tool once, requires exit status 0, nothing on stderr, and a stdout that is
# valid JSON (python3 -m json.tool) for which the Python expression EXPR (over `d`, the parsed
# document) is true.
# usage: check_json.sh EXPR -- COMMAND [ARGS...]
set -u
expr=$1
shift 2 # EXPR and --
cmd=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$@" </dev/null >"$tmp/out" 2>"$tmp/err"
status=$?
fail() {
  echo "FAIL: $*"
  echo "command: ${cmd[*]}"
  echo "--- stdout (first 20 lines)"; head -n 20 "$tmp/out"
  echo "--- stderr"; cat "$tmp/err"
  exit 1
}
[[ $status == 0 ]] || fail "exit status $status, expected 0"
[[ -s $tmp/err ]] && fail "stderr is not empty"
python3 -m json.tool "$tmp/out" >/dev/null || fail "stdout is not valid JSON"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if eval(sys.argv[2]) else 1)
' "$tmp/out" "$expr" || fail "JSON check failed: $expr"
echo "ok: $expr: $*"
