#!/usr/bin/env bash
# `ppsched tune --picture`: the subtitle names what is drawn. Usage: check_tune_picture.sh PPSCHED
set -u
tool=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
subtitle() { grep -o 'the tuned order[^<]*' "$1"; }
# v with room for 3 activations: no built-in fits, and 1F1B is no reference for a V.
"$tool" tune --ranks 4 --microbatches 8 --stages-per-rank 2 --placement v --memory-limit 3 \
  --max-evaluations 500 --quiet --picture "$tmp/tight.svg" >/dev/null || fail "tune (tight) failed"
s=$(subtitle "$tmp/tight.svg")
[[ $s == *"(no built-in schedule fits)"* ]] || fail "tight: '$s' does not say no built-in fits"
[[ $s == *"1F1B"* ]] && fail "tight: '$s' names 1F1B, which is not drawn"
[[ $(grep -c '>tuned' "$tmp/tight.svg") -ge 1 ]] || fail "tight: no tuned chart"
# A loop of one stage per rank: the best built-in and 1F1B beside the tuned order.
"$tool" tune --ranks 4 --microbatches 8 --f 1 --b 2.4 --max-evaluations 500 --quiet \
  --picture "$tmp/loop.svg" >/dev/null || fail "tune (loop) failed"
s=$(subtitle "$tmp/loop.svg")
[[ $s == *"the best built-in schedule that fits"* ]] || fail "loop: '$s' does not name the best built-in"
exit $failed
