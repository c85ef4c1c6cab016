#!/usr/bin/env bash
# The cost file shown in docs/simulation.md ("Cost files"), run as a reader would copy it:
# `simulate` must accept it for the 4 stages its per-stage arrays give.
# Usage: check_doc_cost_example.sh PPSCHED DOCS_SIMULATION_MD
set -u
tool=$1 doc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The first ```json block after the "### Cost files" heading.
awk '/^### Cost files/ { section = 1 } section && /^```json/ { inside = 1; next }
     inside && /^```/ { exit } inside { print }' "$doc" >"$tmp/costs.json"
[[ -s $tmp/costs.json ]] || { echo "FAIL: no JSON example under '### Cost files' in $doc"; exit 1; }
if ! "$tool" simulate 1F1B --ranks 4 --microbatches 8 --costs "$tmp/costs.json" >"$tmp/out" 2>"$tmp/err"; then
  echo "FAIL: the documented cost file is refused: $(cat "$tmp/err")"
  exit 1
fi
grep -q "makespan" "$tmp/out" || { echo "FAIL: no makespan printed"; exit 1; }
echo "ok: the documented cost file runs"
