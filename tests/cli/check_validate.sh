#!/usr/bin/env bash
# Checks `ppsched validate` against the conformance data and mutations of it:
#   - every conformance order (compute and lowered, every folder) is valid (exit 0), and the
#     lowered PyTorch orders also under --transport rendezvous;
#   - an order mutated by dropping, duplicating or moving an action or a send/receive, a
#     microbatch out of range, a missing rank row, is invalid: exit 1 and the rule named;
#   - garbage exits 2 with a message and nothing on stdout.
# The mutations are made here with sed from PyTorch's files; the expected rules come from the
# definition of each rule (docs/reference.md), not from the tool.
# usage: check_validate.sh TOOL CONFORMANCE_DIR [EVERY]
# With EVERY > 1 (the sanitizer builds, where each start of the tool costs about 50 ms), only
# every EVERY-th conformance order is validated; the mutations are all checked.
set -u
shopt -s nullglob # a missing folder gives no files (and the check below fails), not its pattern
tool=$1 conf=$2 every=${3:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0 checked=0
fail() { echo "FAIL: $*"; failed=1; }

# Sets `picked` to the 1st, (EVERY+1)-th, ... of the files given.
pick() {
  picked=()
  local i=0 f
  for f in "$@"; do
    ((i++ % every == 0)) && picked+=("$f")
  done
}
orders=("$conf"/torch/comms/*.csv "$conf"/*/compute/*.csv)
pick "${orders[@]}"
for f in "${picked[@]}"; do
  checked=$((checked + 1))
  "$tool" validate "$f" >"$tmp/out" 2>&1 || fail "$f: exit $? ($(head -c 300 "$tmp/out"))"
done
pick "$conf"/torch/comms/*.csv
for f in "${picked[@]}"; do
  "$tool" validate --transport rendezvous "$f" >"$tmp/out" 2>&1 \
    || fail "$f under rendezvous: exit $?"
done
echo "validated $checked of ${#orders[@]} conformance orders"
((checked > 0)) || fail "no conformance order validated (is $conf there?)"

compute=$conf/torch/compute/Interleaved1F1B_pp4_mb8_v2.csv
comms=$conf/torch/comms/Interleaved1F1B_pp4_mb8_v2.csv
zbv=$conf/torch/compute/ZBVZeroBubble_pp4_mb8_v2.csv
# expect_rule NAME RULE SOURCE SED_SCRIPT [validate options]: mutate SOURCE, expect exit 1
# and "[RULE]" in the report.
expect_rule() {
  local name=$1 rule=$2 src=$3 script=$4
  shift 4
  sed -e "$script" "$src" >"$tmp/$name.csv"
  if cmp -s "$src" "$tmp/$name.csv"; then fail "$name: the mutation changed nothing"; return; fi
  "$tool" validate "$tmp/$name.csv" "$@" >"$tmp/out" 2>"$tmp/err"
  local status=$?
  [[ $status == 1 ]] || fail "$name: exit $status, expected 1"
  grep -qF "[$rule]" "$tmp/out" || fail "$name: no [$rule] in the report"
  grep -qF -- "<-- ERROR HERE" "$tmp/out" || [[ $rule == missing_* || $rule == rank_count ]] \
    || fail "$name: no <-- ERROR HERE in the step table"
  echo "ok: $name -> $rule"
}
expect_rule drop_backward missing_backward "$compute" '1s/,0B3,/,,/'
expect_rule drop_forward missing_forward "$compute" '2s/,1F2,/,,/'
expect_rule duplicate_forward duplicate_action "$compute" '3s/$/,2F2/'
expect_rule move_backward_first backward_before_forward "$compute" '1s/^0F0,/0B0,0F0,/;1s/,0B0,/,,/'
expect_rule swap_dependency dependency_order "$zbv" '4s/,3F0,4F0,/,4F0,3F0,/'
expect_rule microbatch_out_of_range microbatch_out_of_range "$compute" '1s/,0F7,/,0F8,/' --microbatches 8
expect_rule missing_rank_row rank_count "$compute" '4d' --ranks 4
expect_rule drop_send unmatched_recv "$comms" '1s/,0SEND_F0,/,/'
expect_rule drop_recv missing_recv "$comms" '2s/,1RECV_F0,/,/'
expect_rule move_recv_after_use missing_recv "$comms" '2s/1RECV_F0,1F0,/1F0,1RECV_F0,/'
expect_rule duplicate_send duplicate_action "$comms" '1s/,0SEND_F0,/,0SEND_F0,0SEND_F0,/'
expect_rule drop_unshard compute_while_sharded "$comms" '1s/^0UNSHARD,//'
# The JSON report names the same rule.
"$tool" validate --format json "$tmp/drop_backward.csv" >"$tmp/json"
[[ $? == 1 ]] || fail "json: exit status"
/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not d["valid"]; assert any(v["rule"]=="missing_backward" for v in d["violations"])' "$tmp/json" \
  || fail "json report"

# Garbage: exit 2, a message, nothing on stdout.
head -c 4096 /dev/urandom >"$tmp/random.csv"
printf '\x00\x01\x02F\n' >"$tmp/binary.csv"
printf 'hello,world\n' >"$tmp/words.csv"
: >"$tmp/empty.csv"
for g in random binary words empty; do
  "$tool" validate "$tmp/$g.csv" >"$tmp/out" 2>"$tmp/err"
  status=$?
  [[ $status == 2 ]] || fail "garbage $g: exit $status, expected 2"
  [[ -s $tmp/out ]] && fail "garbage $g: stdout not empty"
  grep -q '^ppsched: error:' "$tmp/err" || fail "garbage $g: no error message"
done
exit $failed
