#!/usr/bin/env bash
# ti_oracle.py (the time-indexed integer program) against exact_search (the branch and bound),
# two independent exact oracles, on a memory-limited two-rank problem whose costs lie on a
# grid of 0.5:
# 1. exact_search finds and proves the optimum OPT;
# 2. ti_oracle proves that nothing is faster than OPT, and below OPT + 0.5 finds an order that
#    it replays, and `ppsched simulate` confirms, at OPT;
# 3. --relax-ranks (a relaxation) never claims "infeasible" where an order exists, never
#    replays its orders as valid ones, and agrees that nothing is below the longest path;
# 4. bad input exits 2.
# Skips (exit 77) when python3-pulp or coinor-cbc is missing.
# usage: test_ti_oracle.sh PPSCHED EXACT_SEARCH
set -u
here=$(cd "$(dirname "$0")" && pwd)
ppsched=${1:?usage: test_ti_oracle.sh PPSCHED EXACT_SEARCH}
exact=${2:?usage: test_ti_oracle.sh PPSCHED EXACT_SEARCH}
# shellcheck source=require_solver.sh
source "$here/require_solver.sh" || exit 1 # python; exit 77 without pulp or cbc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
field() { "$python" -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2]))' "$1" "$2"; }

cat >"$tmp/problem.txt" <<'P'
ranks 2
microbatches 4
stages_per_rank 2
placement loop
backward split
message 0.0
input_grad_frees 0.0
memory_limit 3.0
F 1.0 1.0 1.0 1.0
I 1.0 1.0 1.0 1.0
W 1.5 1.5 1.5 1.5
activation 1.0 1.0 1.0 1.0
parameters 0.0 0.0 0.0 0.0
P
cat >"$tmp/costs.json" <<'C'
{"F": 1, "I": 1, "W": 1.5}
C
ti() { "$python" "$here/ti_oracle.py" "$tmp/problem.txt" --grid 0.5 --time-limit 120 "$@"; }

# 1. The optimum, by the branch and bound.
out=$("$exact" "$tmp/problem.txt" --target 1000) || fail "exact_search failed"
echo "exact_search: $out"
[[ $(field "$out" status) == optimal ]] || fail "exact_search did not prove an optimum"
opt=$(field "$out" makespan)
above=$("$python" -c "print($opt + 0.5)")

# 2. The time-indexed program agrees on both sides of it.
out=$(ti --below "$opt") || fail "ti_oracle failed below the optimum"
echo "below $opt: $out"
[[ $(field "$out" status) == infeasible ]] || fail "ti_oracle finds an order below the optimum $opt"
out=$(ti --below "$above" --ppsched "$ppsched" --costs "$tmp/costs.json") ||
  fail "ti_oracle failed below $above"
echo "below $above: $(field "$out" status) makespan $(field "$out" makespan) simulated $(field "$out" simulated)"
[[ $(field "$out" status) == feasible ]] || fail "ti_oracle finds no order below $above"
"$python" - "$out" "$opt" <<'PY' || fail "the order found is not at the optimum"
import json, sys
out, opt = json.loads(sys.argv[1]), float(sys.argv[2])
assert abs(out["makespan"] - opt) <= 1e-9 * opt, (out["makespan"], opt)
assert abs(out["simulated"] - opt) <= 1e-9 * opt, (out["simulated"], opt)
PY

# 3. A relaxation: where an order exists it cannot be infeasible, and its orders are not
#    replayed as valid ones.
for relax in 0 1 0,1; do
  out=$(ti --below "$above" --relax-ranks "$relax") || fail "ti_oracle --relax-ranks $relax failed"
  status=$(field "$out" status)
  [[ $status == relaxation_feasible ]] ||
    fail "--relax-ranks $relax below $above: status $status, expected relaxation_feasible"
  [[ $(field "$out" order) == None ]] || fail "--relax-ranks $relax reports an order as valid"
done
# Every rank relaxed leaves only the dependencies and each queue's microbatch order: their
# longest path (worked out here) decides, although each rank's load (28) exceeds it.
path=$("$python" - <<'PY'
S, M, d = 4, 4, {"F": 1.0, "I": 1.0, "W": 1.5}
end = {}
def finish(k, s, j):  # longest path to the end of (k, s, j)
    if (k, s, j) not in end:
        before = [finish(k, s, j - 1)] if j > 0 else []
        if k == "F" and s > 0: before.append(finish("F", s - 1, j))
        if k == "I":
            before.append(finish("F", s, j))
            if s + 1 < S: before.append(finish("I", s + 1, j))
        if k == "W": before.append(finish("I", s, j))
        end[k, s, j] = max(before, default=0.0) + d[k]
    return end[k, s, j]
print(max(finish(k, s, j) for k in d for s in range(S) for j in range(M)))
PY
)
echo "longest path: $path"
out=$(ti --below "$path" --relax-ranks 0,1) || fail "ti_oracle --relax-ranks 0,1 failed"
[[ $(field "$out" status) == infeasible ]] || fail "an order below the longest path $path: $out"
out=$(ti --below "$("$python" -c "print($path + 0.5)")" --relax-ranks 0,1) ||
  fail "ti_oracle --relax-ranks 0,1 failed"
[[ $(field "$out" status) == relaxation_feasible ]] ||
  fail "all ranks relaxed, nothing at the longest path $path: $out"

# 4. Bad input.
for bad in 2 -1 x 0,,7; do
  ti --below 20 --relax-ranks "$bad" >/dev/null 2>"$tmp/err"
  rc=$?
  [[ $rc == 2 ]] || fail "--relax-ranks $bad: exit $rc, expected 2"
  grep -q "relax-ranks" "$tmp/err" || fail "--relax-ranks $bad: no clear message: $(cat "$tmp/err")"
done

if ((failed)); then exit 1; fi
echo "ti_oracle: all checks passed"
