#!/usr/bin/env bash
# Runs the ppsched tool once and checks what the CLI promises:
#   exit status; on status 2 a message on stderr starting with "ppsched: error:" and nothing at
#   all on stdout (no partial table); on status 0 nothing on stderr (unless --stderr-has names
#   the warning that must be there).
# usage: check.sh [--stdin FILE] [--stdout empty|nonempty|same-as:FILE] [--stdout-has TEXT]
#                 [--stderr-has TEXT] STATUS -- COMMAND [ARGS...]
set -u
stdin=/dev/null stdout_rule=any stdout_has='' stderr_has=''
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    --stdin) stdin=$2; shift 2 ;;
    --stdout) stdout_rule=$2; shift 2 ;;
    --stdout-has) stdout_has=$2; shift 2 ;;
    --stderr-has) stderr_has=$2; shift 2 ;;
    *) expected=$1; shift ;;
  esac
done
shift # the --
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$@" <"$stdin" >"$tmp/out" 2>"$tmp/err"
status=$?
failed=0
fail() { echo "FAIL: $*"; failed=1; }

[[ $status == "$expected" ]] || fail "exit status $status, expected $expected"
if [[ $expected == 2 ]]; then
  head -c 15 "$tmp/err" | grep -qx 'ppsched: error:' \
    || fail "stderr does not start with 'ppsched: error:'"
  [[ -s $tmp/out ]] && fail "stdout is not empty on error"
fi
# A warning on success is allowed only where the test names it (--stderr-has).
if [[ $expected == 0 && -s $tmp/err && -z $stderr_has ]]; then
  fail "stderr is not empty on success"
fi
case $stdout_rule in
  any) ;;
  empty) [[ -s $tmp/out ]] && fail "stdout is not empty" ;;
  nonempty) [[ -s $tmp/out ]] || fail "stdout is empty" ;;
  same-as:*) cmp -s "$tmp/out" "${stdout_rule#same-as:}" \
               || fail "stdout differs from ${stdout_rule#same-as:}" ;;
  *) fail "bad --stdout rule '$stdout_rule'" ;;
esac
if [[ -n $stdout_has ]] && ! grep -qF -- "$stdout_has" "$tmp/out"; then
  fail "stdout lacks '$stdout_has'"
fi
if [[ -n $stderr_has ]] && ! grep -qF -- "$stderr_has" "$tmp/err"; then
  fail "stderr lacks '$stderr_has'"
fi
if [[ $failed != 0 ]]; then
  echo "command: $*"
  echo "--- stdout (first 20 lines)"; head -n 20 "$tmp/out"
  echo "--- stderr"; cat "$tmp/err"
  exit 1
fi
echo "ok: status $status: $*"
