#!/usr/bin/env bash
# Threads change the time of tune's search, never its answer: the same tune call with
# --threads 1 and --threads 3 must print the same makespan, bound and count of orders timed,
# and write the same order byte for byte.
# usage: tune_threads.sh PPSCHED [tune arguments...]
set -u
tool=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
for t in 1 3; do
  "$tool" tune "$@" --threads "$t" --quiet --format json --output "$tmp/order$t.csv" \
    >"$tmp/tune$t.json" 2>"$tmp/err" || fail "tune --threads $t exited $? ($(cat "$tmp/err"))"
done
cmp -s "$tmp/order1.csv" "$tmp/order3.csv" || fail "the orders differ"
python3 - "$tmp/tune1.json" "$tmp/tune3.json" <<'PY' || fail "the results differ"
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
for key in ("makespan", "lower_bound", "evaluations", "beam_nodes", "exact_nodes"):
    assert a[key] == b[key], (key, a[key], b[key])
assert a["evaluations"] > 1000, a["evaluations"]  # the tabu search did run
PY
echo "same answer on 1 and 3 threads"
