#!/usr/bin/env bash
# Checks `ppsched lower` against PyTorch and against `generate --lower`:
#   - every compute file in CONFORMANCE_DIR/torch/compute lowers to its comms file, byte for byte;
#   - for every built-in schedule at a few sizes, `generate NAME | lower -` is byte for byte
#     `generate NAME --lower`;
#   - --transport rendezvous --defer-recv output passes `validate --transport rendezvous`, and
#     --defer-recv alone rebuilds the hang of PyTorch issue 172668 (rendezvous finds it).
# usage: check_lower.sh TOOL CONFORMANCE_DIR
set -u
tool=$1 conf=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0 n=0
fail() { echo "FAIL: $*"; failed=1; }

for f in "$conf"/torch/compute/*.csv; do
  n=$((n + 1))
  name=$(basename "$f")
  "$tool" lower "$f" >"$tmp/out" 2>"$tmp/err" || { fail "$name: exit $? ($(head -c 200 "$tmp/err"))"; continue; }
  cmp -s "$tmp/out" "$conf/torch/comms/$name" || fail "$name differs from PyTorch's lowered order"
done
echo "lowered $n PyTorch compute files"

m=0
for s in GPipe 1F1B Interleaved1F1B LoopedBFS InterleavedZeroBubble ZBVZeroBubble DualPipeV \
         MegatronInterleaved ZB-H1 ZB-H2 1F1B-V ZB-1P V-Half DualPipe; do
  for size in "--ranks 2 --microbatches 4" "--ranks 4 --microbatches 8" "--ranks 3 --microbatches 6 --stages-per-rank 2"; do
    # shellcheck disable=SC2086
    "$tool" generate "$s" $size --for ppsched >"$tmp/compute.csv" 2>/dev/null || continue
    # shellcheck disable=SC2086
    "$tool" generate "$s" $size --lower --for ppsched >"$tmp/expected.csv" 2>/dev/null
    m=$((m + 1))
    "$tool" lower "$tmp/compute.csv" --for ppsched >"$tmp/out" 2>"$tmp/err" \
      || { fail "$s $size: lower exit $? ($(head -c 200 "$tmp/err"))"; continue; }
    cmp -s "$tmp/out" "$tmp/expected.csv" || fail "$s $size: lower differs from generate --lower"
    "$tool" lower "$tmp/compute.csv" --for ppsched --defer-recv --transport rendezvous >"$tmp/safe.csv" \
      || { fail "$s $size: rendezvous-safe lowering failed"; continue; }
    "$tool" validate --transport rendezvous "$tmp/safe.csv" >/dev/null \
      || fail "$s $size: the rendezvous-safe lowering deadlocks under rendezvous"
  done
done
echo "compared $m generated orders"

# PyTorch issue 172668: Interleaved1F1B, pp=2, two stages per rank, receives deferred.
"$tool" lower "$conf/torch/compute/Interleaved1F1B_pp2_mb4_v2.csv" --defer-recv >"$tmp/deferred.csv" \
  || fail "--defer-recv failed"
"$tool" validate "$tmp/deferred.csv" >/dev/null || fail "the deferred order fails under eager"
"$tool" validate --transport rendezvous "$tmp/deferred.csv" >"$tmp/report"
[[ $? == 1 ]] || fail "rendezvous does not find the hang of issue 172668"
grep -q 'deadlock cycle (rendezvous transport): rank 0 -> rank 1 -> rank 0' "$tmp/report" \
  || grep -q 'deadlock cycle (rendezvous transport): rank 1 -> rank 0 -> rank 1' "$tmp/report" \
  || fail "no cycle of the two ranks in the report"
grep -q '0SEND_F1 waits forever for 1RECV_F1' "$tmp/report" || fail "rank 0 is not at 0SEND_F1"
grep -q '1SEND_F0 waits forever for 2RECV_F0' "$tmp/report" || fail "rank 1 is not at 1SEND_F0"
exit $failed
