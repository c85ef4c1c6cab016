#!/usr/bin/env bash
# The fitted cost file of `ppsched calibrate` feeds `simulate --costs`:
# the executed order replayed with the fitted costs takes as long as with the costs the trace
# was made from (data/calibrate/truth.json), and every output file is written.
# usage: calibrate_roundtrip.sh PPSCHED DATA_DIR
set -eu
ppsched=$1 data=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$ppsched" calibrate "$data/1f1b_rank0.json" "$data/1f1b_rank1.json" --output "$tmp/costs.json" \
  --order "$tmp/order.csv" --picture "$tmp/overlay.svg" >"$tmp/report.txt"
for f in costs.json order.csv overlay.svg; do
  [[ -s $tmp/$f ]] || { echo "FAIL: $f not written"; exit 1; }
done
grep -q '<svg' "$tmp/overlay.svg" || { echo "FAIL: overlay.svg is not an SVG"; exit 1; }
fitted=$("$ppsched" simulate --csv "$tmp/order.csv" --costs "$tmp/costs.json" --format json)
truth=$("$ppsched" simulate --csv "$tmp/order.csv" --costs "$data/truth.json" --format json)
m_fit=$(sed -n 's/^{"makespan": \([^,]*\),.*/\1/p' <<<"$fitted")
m_truth=$(sed -n 's/^{"makespan": \([^,]*\),.*/\1/p' <<<"$truth")
echo "makespan with fitted costs $m_fit, with the true costs $m_truth"
awk -v a="$m_fit" -v b="$m_truth" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 1e-9 * b) }' \
  || { echo "FAIL: makespans differ"; exit 1; }
# The same file for a generated schedule (compare cannot take per-stage costs yet: it splits
# a rank's costs over its stages).
"$ppsched" simulate 1F1B --ranks 2 --microbatches 4 --lower --costs "$tmp/costs.json" >/dev/null
echo ok
