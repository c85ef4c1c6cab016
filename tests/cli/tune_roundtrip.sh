#!/usr/bin/env bash
# Runs `ppsched tune ... --output ORDER.csv --picture PIC.svg --format json`, then checks what a
# user would: the CSV is an order `ppsched simulate --csv` accepts and times to the makespan tune
# printed (with the same costs), its peak memory per rank is within the limit tune was given,
# and the picture is well-formed SVG.
# usage: tune_roundtrip.sh PPSCHED [tune arguments...]
set -u
tool=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$tool" tune "$@" --quiet --output "$tmp/order.csv" --picture "$tmp/pic.svg" --format json \
  >"$tmp/tune.json" 2>"$tmp/err" || fail "tune exited $? ($(cat "$tmp/err"))"
[[ -s $tmp/err ]] && fail "tune wrote to stderr: $(cat "$tmp/err")"
# The cost and memory options of the tune call, for simulate.
sim_args=()
limit=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --ranks|--microbatches|--stages-per-rank|--time-limit|--max-evaluations|--seed|--backward) shift 2 ;;
    --memory-limit) limit=$2; shift 2 ;;
    --placement) sim_args+=("$1" "$2"); shift 2 ;;
    *) sim_args+=("$1"); shift ;;
  esac
done
"$tool" simulate --csv "$tmp/order.csv" "${sim_args[@]}" --format json >"$tmp/sim.json" \
  2>"$tmp/err" || fail "simulate --csv of the tuned order exited $? ($(cat "$tmp/err"))"
python3 - "$tmp/tune.json" "$tmp/sim.json" "$limit" <<'PY' || fail "numbers differ"
import json, sys
t = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2])); limit = sys.argv[3]
assert t["makespan"] == s["makespan"], (t["makespan"], s["makespan"])
peaks = [r["peak_memory"] for r in s["ranks"]]
assert peaks == t["peak_memory"], (peaks, t["peak_memory"])
if limit:
    assert max(peaks) <= float(limit), (peaks, limit)
assert t["lower_bound"] <= t["makespan"] * (1 + 1e-12)
if t["best_builtin"] is not None:
    assert t["makespan"] <= t["best_builtin"]["makespan"], t["best_builtin"]
print("makespan", t["makespan"], "bound", t["lower_bound"], "best built-in", t["best_builtin"])
PY
if command -v xmllint >/dev/null; then
  xmllint --noout "$tmp/pic.svg" || fail "the picture is not well-formed XML"
fi
echo "ok"
