#!/usr/bin/env bash
# Runs `ppsched tune ... --output ORDER.csv --picture PIC.svg --format json`, then checks what a
# user would: the CSV is an order `ppsched simulate --csv` accepts and times to the makespan tune
# printed (with the same costs), its peak memory per rank is within the limit tune was given,
# and the picture is well-formed SVG whose subtitle names the charts it draws.
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
python3 - "$tmp/tune.json" "$tmp/sim.json" "$limit" "$tmp/pic.svg" <<'PY' || fail "numbers differ"
import json, re, sys
t = json.load(open(sys.argv[1])); s = json.load(open(sys.argv[2])); limit = sys.argv[3]
# The picture's subtitle names what is drawn: the best built-in only where one fits, 1F1B only
# where its chart is there.
svg = open(sys.argv[4]).read()
charts = re.findall(r">([^<>]+?) \(V=\d+\): makespan", svg)
subtitle = re.search(r"the tuned order[^<]*", svg).group(0)
assert charts[0] == "tuned", charts
assert ("the best built-in schedule that fits" in subtitle) == (t["best_builtin"] is not None), subtitle
assert ("no built-in schedule fits" in subtitle) == (t["best_builtin"] is None), subtitle
assert ("1F1B for reference" in subtitle) == ("1F1B" in charts[1:] and
                                               (t["best_builtin"] or {}).get("name") != "1F1B"), (subtitle, charts)
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
