#!/usr/bin/env bash
# Draws the pictures the README and docs show (docs/img/*.svg) with the ppsched tool, so they
# never go stale. With --check it only compares what the tool draws now with the committed files
# and fails naming each stale, missing or extra picture (the test cli.pictures_up_to_date runs
# this).
# Usage: scripts/update-pictures.sh [--check] [--tool PATH]
#   --tool PATH  the ppsched executable (default: build/release/tools/ppsched, built with the
#                release preset when missing)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
check=0 tool=''
while [[ $# -gt 0 ]]; do
  case $1 in
    --check) check=1; shift ;;
    --tool) tool=$2; shift 2 ;;
    *) echo "usage: scripts/update-pictures.sh [--check] [--tool PATH]" >&2; exit 2 ;;
  esac
done
# shellcheck source=scripts/release-tool.sh
source "$root/scripts/release-tool.sh"
tool=$(release_tool "$root" "$tool")

# name | ppsched arguments (render unless the arguments start with a subcommand of their own).
# The costs are the defaults: F = I = W = 1, B = 2, messages free unless given.
pictures=(
  "gpipe_4x8|GPipe --ranks 4 --microbatches 8"
  "1f1b_4x8|1F1B --ranks 4 --microbatches 8"
  "interleaved_1f1b_4x8|Interleaved1F1B --ranks 4 --microbatches 8 --stages-per-rank 2"
  "looped_bfs_4x8|LoopedBFS --ranks 4 --microbatches 8 --stages-per-rank 2"
  "interleaved_zero_bubble_4x8|InterleavedZeroBubble --ranks 4 --microbatches 8 --stages-per-rank 2"
  "zbv_zero_bubble_4x8|ZBVZeroBubble --ranks 4 --microbatches 8"
  "zbv_zero_bubble_4x8_lowered|ZBVZeroBubble --ranks 4 --microbatches 8 --lower --p2p 0.25"
  "dualpipe_v_4x10|DualPipeV --ranks 4 --microbatches 10"
  "dualpipe_4x8|DualPipe --ranks 4 --microbatches 8"
  "compare_4x8|compare --ranks 4 --microbatches 8 --max-stages-per-rank 2"
  "tune_uneven_4x8|tune --ranks 4 --microbatches 8 --costs @ROOT@/examples/costs_uneven_4.json --memory-limit 3 --max-evaluations 20000 --time-limit 600 --quiet --format none"
)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for entry in "${pictures[@]}"; do
  name=${entry%%|*}
  read -r -a args <<<"${entry#*|}"
  args=("${args[@]//@ROOT@/$root}")
  [[ ${args[0]} == compare || ${args[0]} == tune ]] || args=(render "${args[@]}")
  # tune writes its order with --output and its picture with --picture.
  flag=--output
  [[ ${args[0]} == tune ]] && flag=--picture
  if ! "$tool" "${args[@]}" "$flag" "$tmp/$name.svg" >"$tmp/log" 2>&1; then
    echo "update-pictures: 'ppsched ${args[*]}' failed:" >&2
    cat "$tmp/log" >&2
    exit 1
  fi
done

img=$root/docs/img
if [[ $check == 1 ]]; then
  problems=()
  for f in "$tmp"/*.svg; do
    name=$(basename "$f")
    if [[ ! -f $img/$name ]]; then
      problems+=("docs/img/$name is missing")
    elif ! cmp -s "$f" "$img/$name"; then
      problems+=("docs/img/$name differs from what the tool draws now")
    fi
  done
  for f in "$img"/*.svg; do
    [[ -e $f ]] || continue
    [[ -f $tmp/$(basename "$f") ]] || problems+=("docs/img/$(basename "$f") is not drawn by this script")
  done
  if [[ ${#problems[@]} -gt 0 ]]; then
    printf 'update-pictures: %s\n' "${problems[@]}"
    echo "update-pictures: run 'bash scripts/update-pictures.sh' and commit docs/img"
    exit 1
  fi
  echo "update-pictures: ${#pictures[@]} pictures in docs/img are up to date"
  exit 0
fi

mkdir -p "$img"
changed=0
for f in "$tmp"/*.svg; do
  name=$(basename "$f")
  if ! cmp -s "$f" "$img/$name" 2>/dev/null; then
    cp "$f" "$img/$name"
    echo "update-pictures: wrote docs/img/$name"
    changed=$((changed + 1))
  fi
done
for f in "$img"/*.svg; do
  [[ -e $f ]] || continue
  if [[ ! -f $tmp/$(basename "$f") ]]; then
    rm "$f"
    echo "update-pictures: removed docs/img/$(basename "$f")"
    changed=$((changed + 1))
  fi
done
echo "update-pictures: ${#pictures[@]} pictures, $changed changed"
