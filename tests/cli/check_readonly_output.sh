#!/usr/bin/env bash
# An existing output file its user may not write is refused (exit 2, "Permission denied") and
# left as it was, as a shell redirection or `cp` would: the tool writes a temporary file and
# renames it over the target, which the directory alone would allow. Root may write any file,
# so under root the tool runs as `nobody` (setpriv); without setpriv the test is skipped (77).
# usage: check_readonly_output.sh PPSCHED
set -u
tool=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
run=()
if [[ $(id -u) == 0 ]]; then
  command -v setpriv >/dev/null || { echo "setpriv missing: skipped"; exit 77; }
  run=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  cp "$tool" "$tmp/ppsched" && chmod 755 "$tmp/ppsched" && tool=$tmp/ppsched
fi
chmod 777 "$tmp"
echo "keep me" >"$tmp/ro.csv"
chmod 444 "$tmp/ro.csv"
[[ $(id -u) == 0 ]] && chown nobody "$tmp/ro.csv"
"${run[@]}" "$tool" tune --ranks 2 --microbatches 2 --quiet --format none --output "$tmp/ro.csv" \
  >"$tmp/out" 2>"$tmp/err"
status=$?
[[ $status == 2 ]] || fail "exit $status, expected 2 ($(cat "$tmp/err"))"
grep -q "cannot write .*ro.csv: Permission denied" "$tmp/err" || fail "message: $(cat "$tmp/err")"
[[ $(cat "$tmp/ro.csv") == "keep me" ]] || fail "the read-only file was replaced"
[[ $(stat -c %a "$tmp/ro.csv") == 444 ]] || fail "its mode changed"
ls -A "$tmp" | grep -q '\.tmp' && fail "a temporary file was left behind"
# A writable one is written as before.
chmod 644 "$tmp/ro.csv"
"${run[@]}" "$tool" tune --ranks 2 --microbatches 2 --quiet --format none --output "$tmp/ro.csv" \
  >/dev/null 2>"$tmp/err" || fail "writable: exit $? ($(cat "$tmp/err"))"
grep -q "F" "$tmp/ro.csv" || fail "writable: not written"
echo "read-only output refused"
