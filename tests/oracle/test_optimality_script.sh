#!/usr/bin/env bash
# optimality.py runs end to end on a slice of the suite, with a stand-in for `ppsched tune`
# (the real tool answers every other command): the table lists every problem as proven optimal,
# and a tune whose "lower bound" exceeds the optimum is reported as a contradiction. With
# EXACT_SEARCH (and cadical): --sat decides the rows of a --results file that exact_search left
# open (here made so by hand) with the SAT oracle, which must find exact_search's optima.
# Skips (exit 77) when python3-pulp or coinor-cbc is missing.
# usage: test_optimality_script.sh PPSCHED [EXACT_SEARCH]
set -u
here=$(cd "$(dirname "$0")" && pwd)
ppsched=${1:?usage: test_optimality_script.sh PPSCHED [EXACT_SEARCH]}
exact=${2:-}
# shellcheck source=require_solver.sh
source "$here/require_solver.sh" || exit 1 # python; exit 77 without pulp or cbc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

make_stub() { # make_stub FILE MAKESPAN LOWER_BOUND
  cat >"$1" <<STUB
#!/usr/bin/env bash
if [[ \$1 == tune ]]; then echo '{"makespan": $2, "lower_bound": $3}'; exit 0; fi
exec "$ppsched" "\$@"
STUB
  chmod +x "$1"
}
slice=(--ranks 2 --placements loop1 --costs uniform,skew --latency 0 --time-limit 30)

make_stub "$tmp/sound" 1000 0
"$python" "$here/optimality.py" "$tmp/sound" "${slice[@]}" --output "$tmp/sound.md" 2>"$tmp/log" \
  || fail "optimality.py failed: $(cat "$tmp/log")"
rows=$(grep -c '^| p2 ' "$tmp/sound.md")
[[ $rows == 12 ]] || fail "expected 12 problems (2 m x 2 costs x 3 memory limits), got $rows"
optimal=$(grep -c '^| p2 .* | optimal | ' "$tmp/sound.md")
[[ $optimal == "$rows" ]] || fail "only $optimal of $rows problems proven optimal"
grep -q '^tune / optimum on 12 proven problems' "$tmp/sound.md" || fail "no ratio summary"
grep -q CONTRADICTION "$tmp/sound.md" && fail "a contradiction with a sound stand-in"

make_stub "$tmp/unsound" 1000 1e9
"$python" "$here/optimality.py" "$tmp/unsound" "${slice[@]}" --memory none \
  --output "$tmp/unsound.md" 2>"$tmp/log" || fail "optimality.py failed: $(cat "$tmp/log")"
[[ $(grep -c '^CONTRADICTION: .*lower bound' "$tmp/unsound.md") == 4 ]] \
  || fail "an unsound lower bound is not reported on each of the 4 problems"

if [[ -n $exact ]] && command -v cadical >/dev/null; then
  sat_slice=(--ranks 2 --placements loop2 --costs uniform,random --latency 0.1 --memory half
    --exact "$exact" --no-ilp --results "$tmp/r.jsonl")
  "$python" "$here/optimality.py" "$ppsched" "${sat_slice[@]}" --output "$tmp/exact.md" \
    2>"$tmp/log" || fail "optimality.py --exact failed: $(cat "$tmp/log")"
  # Forget exact_search's proofs: the SAT oracle must decide those rows again.
  "$python" - "$tmp/r.jsonl" <<'PY' || fail "no results to doctor"
import json, sys
rows = [json.loads(x) for x in open(sys.argv[1])]
assert len(rows) == 4 and all(r["exact"]["status"] == "optimal" for r in rows), rows
json.dump({r["key"]: r["exact"]["optimum"] for r in rows}, open(sys.argv[1] + ".opt", "w"))
for r in rows:
    r["exact"]["status"] = "unknown"
    r["exact"].pop("optimum")
open(sys.argv[1], "w").write("".join(json.dumps(r) + "\n" for r in rows))
PY
  "$python" "$here/optimality.py" "$ppsched" "${sat_slice[@]}" --sat --output "$tmp/sat.md" \
    2>"$tmp/log" || fail "optimality.py --sat failed: $(cat "$tmp/log")"
  "$python" - "$tmp/r.jsonl" <<'PY' || fail "the SAT oracle's answers are wrong or missing"
import json, sys
opt = json.load(open(sys.argv[1] + ".opt"))
rows = [json.loads(x) for x in open(sys.argv[1])]
assert len(rows) == 4, len(rows)
for r in rows:
    sat = r["sat"]
    if "random" in r["key"]:  # costs on no grid: tune (optimal here) within 1 %, by rounding
        assert sat["within_1pct"] == "proven", (r["key"], sat)
    else:
        assert abs(sat["optimum"] - opt[r["key"]]) <= 1e-9 * opt[r["key"]], (r["key"], sat)
PY
  grep -q '(0 by exact_search, 2 by the SAT oracle)' "$tmp/sat.md" ||
    fail "the summary does not count the SAT oracle's proofs: $(grep 'proven optima' "$tmp/sat.md")"
  grep -q 'tune proven within 1% of the optimum on 2' "$tmp/sat.md" ||
    fail "the summary does not count the SAT oracle's 1 % proofs"
  # --sat needs --exact.
  "$python" "$here/optimality.py" "$ppsched" --sat --no-ilp >/dev/null 2>&1 &&
    fail "--sat without --exact was accepted"
else
  echo "SKIP (part): --sat needs EXACT_SEARCH and cadical"
fi

[[ $failed == 0 ]] && echo "optimality.py: ok"
exit $failed
