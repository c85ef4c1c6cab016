#!/usr/bin/env bash
# optimality.py runs end to end on a slice of the suite, with a stand-in for `ppsched tune`
# (the real tool answers every other command): the table lists every problem as proven optimal,
# and a tune whose "lower bound" exceeds the optimum is reported as a contradiction.
# Skips (exit 77) when python3-pulp or coinor-cbc is missing.
# usage: test_optimality_script.sh PPSCHED
set -u
here=$(cd "$(dirname "$0")" && pwd)
ppsched=${1:?usage: test_optimality_script.sh PPSCHED}
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

[[ $failed == 0 ]] && echo "optimality.py: ok"
exit $failed
