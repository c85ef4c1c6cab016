#!/usr/bin/env bash
# One measured run of the MPI example read back by `ppsched calibrate`: the run writes a trace per
# pipeline rank, the tool must read them, fit costs, replay the executed order and write the
# cost file and the overlay picture.
# usage: calibrate_test.sh DIR PPSCHED -- COMMAND... (the mpirun of the example, without --trace)
set -eu
dir=$1 ppsched=$2
shift 3
rm -rf "$dir"
mkdir -p "$dir"
"$@" --trace "$dir"
"$ppsched" calibrate "$dir"/rank*.json --output "$dir/fitted.json" --picture "$dir/overlay.svg" \
  | tee "$dir/report.txt"
grep -q '^step time: measured .*, predicted ' "$dir/report.txt"
grep -q '"stages"' "$dir/fitted.json"
grep -q '<svg' "$dir/overlay.svg"
# The fitted costs are a cost file simulate reads.
"$ppsched" simulate 1F1B --ranks 2 --microbatches 4 --lower --costs "$dir/fitted.json" >/dev/null
echo "ok: calibrate read the example's trace"
