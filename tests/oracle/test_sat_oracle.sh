#!/usr/bin/env bash
# sat_oracle.py (the SAT encoding, solved by CaDiCaL) against exact_search (the branch and
# bound), two independent exact oracles, on small problems with memory limits and message
# times:
# 1. on problems whose costs lie on a grid of 0.1 (split and fused backward, loop and v; and 12
#    seeded random ones: 2-3 ranks, 1-3 stages per rank, activations of several sizes),
#    exact_search proves the optimum OPT; sat_oracle proves that nothing is faster than OPT,
#    and below OPT + 0.05 finds an order that it replays, and `ppsched simulate` confirms, at OPT;
# 2. --floor-grid (costs rounded down: a relaxation) equals --grid where nothing is rounded,
#    and on costs that lie on no grid never claims "infeasible" above the optimum;
# 3. (PART hard, instead of the others) on a 4-rank problem that exact_search cannot decide in
#    an hour, it proves the optimum (about 30 s: ctest runs it in one build only);
# 4. bad input exits 2 with a message.
# Skips (exit 77) when cadical is missing.
# usage: test_sat_oracle.sh PPSCHED EXACT_SEARCH [quick|hard]
set -u
here=$(cd "$(dirname "$0")" && pwd)
ppsched=${1:?usage: test_sat_oracle.sh PPSCHED EXACT_SEARCH}
exact=${2:?usage: test_sat_oracle.sh PPSCHED EXACT_SEARCH [quick|hard]}
part=${3:-quick}
[[ $part == quick || $part == hard ]] || { echo "part must be quick or hard" >&2; exit 2; }
python=/usr/bin/python3
if ! command -v cadical >/dev/null; then
  echo "SKIP: cadical is not installed (apt-get install cadical)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
field() { "$python" -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2]))' "$1" "$2"; }
sat() { "$python" "$here/sat_oracle.py" "$@" --time-limit 300; }

# problem NAME PLACEMENT BACKWARD MESSAGE LIMIT "F..." "I..." "W..." or "B..."
problem() {
  local dir=$tmp/$1
  mkdir -p "$dir"
  {
    echo "ranks 2"
    echo "microbatches 4"
    echo "stages_per_rank 2"
    echo "placement $2"
    echo "backward $3"
    echo "message $4"
    echo "input_grad_frees 0.0"
    echo "memory_limit $5"
    echo "$6"
    echo "$7"
    [[ -n ${8:-} ]] && echo "$8"
    echo "activation 1.0 1.0 1.0 1.0"
    echo "parameters 0.0 0.0 0.0 0.0"
  } >"$dir/problem.txt"
  "$python" - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
cost = {}
for line in open(d + "/problem.txt"):
    k, *v = line.split()
    if k in ("F", "I", "W", "B"):
        cost[k] = [float(x) for x in v]
    if k == "message":
        cost["p2p_latency"] = float(v[0])
json.dump(cost, open(d + "/costs.json", "w"))
PY
}

quick() {
# 1. Both sides of the optimum, on the grid.
problem split_loop loop split 0.1 3.0 "F 1.2 1.0 0.9 1.3" "I 1.0 1.1 1.0 1.4" "W 0.6 1.5 0.5 1.0"
problem fused_v v fused 0.1 2.0 "F 1.0 1.1 1.0 1.6" "B 2.0 2.2 1.9 3.1"
for name in split_loop fused_v; do
  p=$tmp/$name/problem.txt
  out=$("$exact" "$p" --target 1000) || fail "$name: exact_search failed"
  [[ $(field "$out" status) == optimal ]] || fail "$name: exact_search did not prove an optimum"
  opt=$(field "$out" makespan)
  echo "$name: exact_search's optimum $opt"
  out=$(sat "$p" --grid 0.1 --below "$opt") || fail "$name: sat_oracle failed below $opt"
  echo "  below $opt: $(field "$out" status) ($(field "$out" clauses) clauses)"
  [[ $(field "$out" status) == infeasible ]] || fail "$name: sat_oracle finds an order below $opt"
  above=$("$python" -c "print($opt + 0.05)")
  out=$(sat "$p" --grid 0.1 --below "$above" --ppsched "$ppsched") ||
    fail "$name: sat_oracle failed below $above"
  echo "  below $above: $(field "$out" status) makespan $(field "$out" makespan)" \
    "simulated $(field "$out" simulated)"
  [[ $(field "$out" status) == feasible ]] || fail "$name: no order below $above: $out"
  "$python" - "$out" "$opt" <<'PY' || fail "$name: the order found is not at the optimum"
import json, sys
out, opt = json.loads(sys.argv[1]), float(sys.argv[2])
assert abs(out["makespan"] - opt) <= 1e-9 * opt, (out["makespan"], opt)
assert abs(out["simulated"] - opt) <= 1e-9 * opt, (out["simulated"], opt)
PY
  # 2a. Nothing to round: the relaxation is the problem itself.
  out=$(sat "$p" --floor-grid 0.1 --below "$opt") || fail "$name: --floor-grid failed"
  [[ $(field "$out" status) == infeasible ]] || fail "$name: --floor-grid below $opt: $out"
  out=$(sat "$p" --floor-grid 0.1 --below "$above") || fail "$name: --floor-grid failed"
  [[ $(field "$out" status) == relaxation_feasible ]] ||
    fail "$name: --floor-grid below $above: $(field "$out" status), expected relaxation_feasible"
  [[ $(field "$out" order) == None ]] || fail "$name: --floor-grid reports an order as valid"
done

# 1b. Seeded random problems on the grid: 2-3 ranks, 1-3 stages per rank, loop and v, split and
#     fused, activations of several sizes, parameters, memory limits near the least.
"$python" - "$here/sat_oracle.py" "$exact" "$tmp" <<'PY' || fail "random problems: see above"
import json, random, subprocess, sys
oracle, exact, tmp = sys.argv[1:4]
bad = 0
for seed in range(12):
    R = random.Random(seed)
    P = R.choice([2, 3]); V = R.choice([1, 2, 3] if P == 2 else [1, 2])
    M = max(1, min(R.choice([1, 2, 3]), 12 // (P * V)))
    pl, bw = R.choice(["loop", "v"]), R.choice(["split", "fused"])
    S = P * V
    kinds = ["F", "I", "W"] if bw == "split" else ["F", "B"]
    cost = {k: [R.randint(5, 20) / 10 for _ in range(S)] for k in kinds}
    act = [R.choice([0.0, 0.5, 1.0, 1.5]) for _ in range(S)]
    par = [R.choice([0.0, 0.0, 0.5]) for _ in range(S)]
    def rank(s):
        lap, pos = divmod(s, P)
        return P - 1 - pos if pl == "v" and lap % 2 else pos
    need = max(sum(par[s] for s in range(S) if rank(s) == r) +
               max(act[s] for s in range(S) if rank(s) == r) for r in range(P))
    lim = need + R.choice([0.0, 0.5, 1.0, 2.0])
    path = f"{tmp}/random{seed}.txt"
    with open(path, "w") as f:
        f.write(f"ranks {P}\nmicrobatches {M}\nstages_per_rank {V}\nplacement {pl}\n"
                f"backward {bw}\nmessage {R.choice([0.0, 0.1, 0.2])}\ninput_grad_frees 0.0\n"
                f"memory_limit {lim}\n")
        for k in kinds:
            f.write(k + " " + " ".join(map(str, cost[k])) + "\n")
        f.write("activation " + " ".join(map(str, act)) + "\n")
        f.write("parameters " + " ".join(map(str, par)) + "\n")
    ex = json.loads(subprocess.run([exact, path, "--target", "1000"], capture_output=True,
                                   text=True).stdout)
    if ex["status"] != "optimal" or ex["makespan"] is None:
        continue  # no order fits (exact_search says so): nothing to compare
    opt = ex["makespan"]
    def sat(below):
        out = subprocess.run(["/usr/bin/python3", oracle, path, "--grid", "0.1", "--below",
                              repr(below), "--time-limit", "120"], capture_output=True, text=True)
        return json.loads(out.stdout)
    lo, hi = sat(opt), sat(opt + 0.05)
    ok = lo["status"] == "infeasible" and hi["status"] == "feasible" and \
        abs(hi["makespan"] - opt) <= 1e-9 * opt
    print(f"  random {seed}: P {P} V {V} M {M} {pl} {bw}, optimum {opt}: below it "
          f"{lo['status']}, below +0.05 {hi['status']} {hi.get('makespan')}")
    bad += not ok
sys.exit(1 if bad else 0)
PY

# 2b. Costs on no grid: --grid refuses them; --floor-grid is a relaxation, so above the optimum
#     an order always exists, and where it proves "infeasible" the optimum is not below.
problem offgrid loop split 0.13 3.0 "F 1.213 0.987 0.911 1.322" "I 1.031 1.117 0.979 1.418" \
  "W 0.613 1.497 0.522 1.006"
p=$tmp/offgrid/problem.txt
out=$("$exact" "$p" --target 1000) || fail "offgrid: exact_search failed"
opt=$(field "$out" makespan)
echo "offgrid: exact_search's optimum $opt"
sat "$p" --grid 0.1 --below 30 >/dev/null 2>"$tmp/err"
rc=$?
[[ $rc == 2 ]] || fail "offgrid --grid 0.1: exit $rc, expected 2"
grep -q "not a multiple of the grid" "$tmp/err" || fail "offgrid --grid: $(cat "$tmp/err")"
for g in 0.1 0.01; do
  above=$("$python" -c "print($opt + 1e-6)")
  out=$(sat "$p" --floor-grid "$g" --below "$above") || fail "offgrid --floor-grid $g failed"
  [[ $(field "$out" status) == relaxation_feasible ]] ||
    fail "offgrid --floor-grid $g below $above: $(field "$out" status), expected relaxation_feasible"
done
# With --ppsched, an order of the relaxation is timed with the real costs: "feasible" exactly
# when `ppsched simulate` puts it below T (at T = 1000 any order is), else "relaxation_feasible"
# with its real makespan; no order's real makespan is below the optimum.
for below in 1000 "$("$python" -c "print($opt + 1e-6)")"; do
  out=$(sat "$p" --floor-grid 0.1 --below "$below" --ppsched "$ppsched") ||
    fail "offgrid --floor-grid --ppsched below $below failed"
  echo "  --floor-grid 0.1 --ppsched below $below: $(field "$out" status)," \
    "simulated $(field "$out" simulated)"
  "$python" - "$out" "$below" "$opt" <<'PY' || fail "offgrid --ppsched below $below: $out"
import json, sys
out, below, opt = json.loads(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
real = out["simulated"]
assert real is not None and real >= opt - 1e-9 * opt, real  # no order beats the optimum
assert out["status"] == ("feasible" if real < below else "relaxation_feasible"), out
assert below < 1000 or out["status"] == "feasible", out
PY
done
# The largest value the finer relaxation proves: within the rounding of the optimum.
proved=$("$python" - "$here/sat_oracle.py" "$p" "$opt" <<'PY'
import json, subprocess, sys
oracle, p, opt = sys.argv[1], sys.argv[2], float(sys.argv[3])
best = None
for k in range(1, 16):
    below = round(opt - 0.1 * k, 6)
    out = json.loads(subprocess.run(["/usr/bin/python3", oracle, p, "--floor-grid", "0.01",
                                     "--below", str(below), "--time-limit", "120"],
                                    capture_output=True, text=True).stdout)
    if out["status"] == "infeasible":
        best = below
        break
print(best)
PY
)
echo "offgrid: --floor-grid 0.01 proves no order below $proved (optimum $opt)"
"$python" -c "import sys; b=$proved; o=$opt; sys.exit(0 if b is not None and o - 1.0 <= b <= o else 1)" ||
  fail "offgrid: the relaxation proves $proved against the optimum $opt"

# 4. Bad input.
p=$tmp/split_loop/problem.txt
for args in "--grid 0 --below 20" "--grid 0.1 --below -1" "--grid 0.1 --below 20 --time-limit 0" \
  "--grid 0.3 --below 20" "--floor-grid 2 --below 20"; do
  # shellcheck disable=SC2086
  "$python" "$here/sat_oracle.py" "$p" $args >/dev/null 2>"$tmp/err"
  rc=$?
  [[ $rc == 2 ]] || fail "$args: exit $rc, expected 2"
  grep -q "sat_oracle:" "$tmp/err" || fail "$args: no clear message: $(cat "$tmp/err")"
done
sed 's/input_grad_frees 0.0/input_grad_frees 0.5/' "$p" >"$tmp/frees.txt"
"$python" "$here/sat_oracle.py" "$tmp/frees.txt" --grid 0.1 --below 20 >/dev/null 2>"$tmp/err"
rc=$?
[[ $rc == 2 ]] || fail "input_grad_frees 0.5 with a limit: exit $rc, expected 2"
grep -q "input_grad_frees" "$tmp/err" || fail "input_grad_frees: no clear message: $(cat "$tmp/err")"

}

hard() {
# 3. At scale: the problem of issue 16's suite that the branch and bound could not decide in an
#    hour (4 ranks x 2 stages, 8 microbatches, W = 1.5 I, message 0.1, room for 5 activations;
#    tune finds 66, its bound is 64.6): its optimum is 65.6 (tests/oracle/results/sat.md).
mkdir -p "$tmp/hard"
cat >"$tmp/hard/problem.txt" <<'P'
ranks 4
microbatches 8
stages_per_rank 2
placement loop
backward split
message 0.1
input_grad_frees 0.0
memory_limit 5.5
F 1 1 1 1 1 1 1 1
I 1 1 1 1 1 1 1 1
W 1.5 1.5 1.5 1.5 1.5 1.5 1.5 1.5
activation 1 1 1 1 1 1 1 1
parameters 0 0 0 0 0 0 0 0
P
echo '{"F": 1, "I": 1, "W": 1.5, "p2p_latency": 0.1}' >"$tmp/hard/costs.json"
out=$(sat "$tmp/hard/problem.txt" --grid 0.1 --below 65.6) || fail "hard: sat_oracle failed"
echo "hard, below 65.6: $(field "$out" status) ($(field "$out" clauses) clauses," \
  "$(field "$out" solver_seconds) s)"
[[ $(field "$out" status) == infeasible ]] || fail "hard: an order below 65.6: $out"
out=$(sat "$tmp/hard/problem.txt" --grid 0.1 --below 65.65 --ppsched "$ppsched") ||
  fail "hard: sat_oracle failed"
echo "hard, below 65.65: $(field "$out" status) simulated $(field "$out" simulated)"
[[ $(field "$out" status) == feasible ]] || fail "hard: no order at 65.6: $out"
"$python" -c "import sys; sys.exit(0 if abs($(field "$out" simulated) - 65.6) < 1e-9 else 1)" ||
  fail "hard: the order found is not at 65.6"

}

"$part"
if ((failed)); then exit 1; fi
echo "sat_oracle: all checks passed"
