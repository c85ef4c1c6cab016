#!/usr/bin/env bash
# exact_search (the tests' own branch and bound) against ppsched:
# 1. with a loose target it returns an order that ppsched validates and simulates to the
#    makespan it claims, and proves it optimal;
# 2. on a slice of issue 16's suite (2 ranks, m 2 and 4, every placement, two cost shapes, latency 0.1,
#    every memory case) optimality.py --exact proves every optimum, finds no contradiction,
#    and tune is within 1% of each (the full runs are in results/, see README.md).
# 3. the rank relaxation (one rank alone, solved exactly) of ppsched tune and of exact_search,
#    two independent implementations, agree on a memory-limited four-rank problem, stay
#    below tune's makespan, and prove tune within 1 % of the optimum there; switched off, the
#    search still agrees with it.
# usage: test_exact_search.sh PPSCHED EXACT_SEARCH
set -u
here=$(cd "$(dirname "$0")" && pwd)
ppsched=${1:?usage: test_exact_search.sh PPSCHED EXACT_SEARCH}
exact=${2:?usage: test_exact_search.sh PPSCHED EXACT_SEARCH}
python=/usr/bin/python3
[[ -x $python ]] || python=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

cat >"$tmp/p.txt" <<'P'
ranks 2
microbatches 4
stages_per_rank 2
placement v
backward split
message 0.1
input_grad_frees 0.0
memory_limit 3.0
F 1.3 1.0 1.0 1.6
I 1.3 1.0 1.0 1.6
W 0.65 0.5 0.5 0.8
activation 1.0 1.0 1.0 1.0
parameters 0.0 0.0 0.0 0.0
P
cat >"$tmp/costs.json" <<'C'
{"F": [1.3, 1.0, 1.0, 1.6], "I": [1.3, 1.0, 1.0, 1.6], "W": [0.65, 0.5, 0.5, 0.8],
 "activation": [1, 1, 1, 1], "p2p_latency": 0.1}
C
out=$("$exact" "$tmp/p.txt" --target 1000 --order "$tmp/order.csv") || fail "exact_search failed"
echo "$out"
status=$("$python" -c 'import json,sys; print(json.loads(sys.argv[1])["status"])' "$out")
best=$("$python" -c 'import json,sys; print(json.loads(sys.argv[1])["makespan"])' "$out")
[[ $status == optimal ]] || fail "status $status, expected optimal"
"$ppsched" validate "$tmp/order.csv" >/dev/null || fail "its order does not validate"
sim=$("$ppsched" simulate --csv "$tmp/order.csv" --costs "$tmp/costs.json" --memory-limit 3 \
  --format json) || fail "its order does not simulate within the memory limit"
"$python" - "$sim" "$best" <<'PY' || fail "simulate disagrees with exact_search's makespan"
import json, sys
ms = json.loads(sys.argv[1])["makespan"]
assert abs(ms - float(sys.argv[2])) <= 1e-9 * ms, (ms, sys.argv[2])
PY
# A target at the optimum: nothing faster exists.
out=$("$exact" "$tmp/p.txt" --target "$best") || fail "exact_search failed at the optimum"
[[ $out == *'"status": "optimal", "makespan": null'* ]] || fail "found an order below its optimum: $out"
# One rank per node (the default) against every rank's children: the same optimum on two
# four-rank problems with a memory limit, and nothing below it.
for costs in 'F 1.3 1.0 1.0 1.0 1.0 1.0 1.0 1.6
I 1.3 1.0 1.0 1.0 1.0 1.0 1.0 1.6
W 1.3 1.0 1.0 1.0 1.0 1.0 1.0 1.6' 'F 1.1595 1.213 0.8551 1.1091 1.225 1.0334 1.1723 0.9715
I 1.0483 0.8072 0.7935 0.8093 1.1221 1.146 1.0249 1.062
W 1.1017 1.1526 1.057 1.051 1.1822 1.1431 1.213 0.9806'; do
  printf 'ranks 4\nmicrobatches 4\nstages_per_rank 2\nplacement v\nbackward split\nmessage 0.0\n'\
'input_grad_frees 0.0\nmemory_limit 3.0\n%s\nactivation 1 1 1 1 1 1 1 1\nparameters 0 0 0 0 0 0 0 0\n' \
    "$costs" >"$tmp/p4.txt"
  all=$("$exact" "$tmp/p4.txt" --target 1000 --branch all) || fail "--branch all failed"
  one=$("$exact" "$tmp/p4.txt" --target 1000 --branch one) || fail "--branch one failed"
  echo "$all"; echo "$one"
  "$python" - "$all" "$one" <<'PY' || fail "the two branchings disagree: $all / $one"
import json, sys
a, b = (json.loads(x) for x in sys.argv[1:])
assert a["status"] == b["status"] == "optimal", (a, b)
assert abs(a["makespan"] - b["makespan"]) <= 1e-9 * a["makespan"], (a, b)
PY
  ms=$("$python" -c 'import json,sys; print(repr(json.loads(sys.argv[1])["makespan"]))' "$all")
  below=$("$exact" "$tmp/p4.txt" --target "$ms" --branch one)
  [[ $below == *'"status": "optimal", "makespan": null'* ]] || fail "--branch one beat the optimum: $below"
  below=$("$exact" "$tmp/p4.txt" --target "$ms" --rank-relaxation off)
  [[ $below == *'"status": "optimal", "makespan": null'* ]] || fail "beat the optimum without the rank relaxation: $below"
done
# The rank relaxation, library against oracle: 4 ranks x 2 stages (v), 4 microbatches, random
# costs, latency 0.1, room for 6 activations per rank (1F1B's peak).
F='1.1595 1.213 0.8551 1.1091 1.225 1.0334 1.1723 0.9715'
I='1.0483 0.8072 0.7935 0.8093 1.1221 1.146 1.0249 1.062'
W='1.1017 1.1526 1.057 1.051 1.1822 1.1431 1.213 0.9806'
printf 'ranks 4\nmicrobatches 4\nstages_per_rank 2\nplacement v\nbackward split\nmessage 0.1\n'\
'input_grad_frees 0.0\nmemory_limit 6.0\nF %s\nI %s\nW %s\nactivation 1 1 1 1 1 1 1 1\n'\
'parameters 0 0 0 0 0 0 0 0\n' "$F" "$I" "$W" >"$tmp/relax.txt"
printf '{"F": [%s], "I": [%s], "W": [%s], "p2p_latency": 0.1}\n' "${F// /, }" "${I// /, }" \
  "${W// /, }" >"$tmp/relax.json"
tuned=$("$ppsched" tune --ranks 4 --microbatches 4 --stages-per-rank 2 --placement v \
  --costs "$tmp/relax.json" --memory-limit 6 --time-limit 600 --format json) || fail "tune failed"
ms=$("$python" -c 'import json,sys; print(repr(json.loads(sys.argv[1])["makespan"]))' "$tuned")
oracle=$("$exact" "$tmp/relax.txt" --target "$ms" --time-limit 1) || fail "exact_search failed"
echo "$oracle"
"$python" - "$tuned" "$oracle" <<'PY' || fail "the rank relaxations disagree"
import json, sys
t, o = (json.loads(x) for x in sys.argv[1:])
lib, ms = t["bound"]["rank_relaxation"], t["makespan"]
print("tune: makespan", ms, "rank relaxation", lib, "(rank", t["bound"]["rank_relaxation_rank"], ")")
assert 0 < lib <= ms, (lib, ms)
assert t["lower_bound"] >= lib, t["lower_bound"]
assert o["rank_bound"] is not None and abs(o["rank_bound"] - lib) <= 1e-9 * lib, (o, lib)
PY
skipped=$("$ppsched" tune --ranks 4 --microbatches 4 --stages-per-rank 2 --placement v \
  --costs "$tmp/relax.json" --memory-limit 6 --exact-nodes 0 --format json) || fail "tune failed"
"$python" - "$skipped" <<'PY' || fail "--exact-nodes 0 did not skip the rank relaxation"
import json, sys
assert json.loads(sys.argv[1])["bound"]["rank_relaxation"] == 0
PY
within=$("$exact" "$tmp/relax.txt" --target "$("$python" -c "print(repr($ms / 1.01))")" --time-limit 5)
echo "$within"
[[ $within == *'"status": "optimal", "makespan": null'* ]] || fail "tune not proven within 1 %: $within"
"$exact" "$tmp/p.txt" --rank-relaxation maybe 2>/dev/null && fail "accepted --rank-relaxation maybe"
"$exact" "$tmp/p.txt" --branch some 2>"$tmp/err" && fail "accepted --branch some"
grep -q 'exact_search:' "$tmp/err" || fail "no error message for --branch some"
# Bad input: a clear error, exit 2.
printf 'ranks 2\nmicrobatches 2\nF 1 1\n' >"$tmp/bad.txt"
"$exact" "$tmp/bad.txt" 2>"$tmp/err" && fail "accepted a problem without I, W, activation"
grep -q 'exact_search:' "$tmp/err" || fail "no error message: $(cat "$tmp/err")"

"$python" "$here/optimality.py" "$ppsched" --exact "$exact" --no-ilp --ranks 2 \
  --costs skew,w05 --latency 0.1 --exact-time-limit 60 --output "$tmp/slice.md" 2>"$tmp/log" \
  || fail "optimality.py --exact failed: $(tail -5 "$tmp/log")"
cat "$tmp/slice.md" | tail -4
grep -q '^proven optima: 36 of 36' "$tmp/slice.md" || fail "not every optimum proven"
grep -q 'above 1% 0;' "$tmp/slice.md" || fail "tune more than 1% above an optimum"
grep -q CONTRADICTION "$tmp/slice.md" && fail "a contradiction"
exit $failed
