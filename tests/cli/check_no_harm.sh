#!/usr/bin/env bash
# "No harm from any input" (issue 15), one check per bullet, through the built tool:
#   --output: /dev/null and '-' work; FIFOs, symbolic links and (as root) device nodes made
#     with mknod are written through, never replaced by a regular file;
#   non-finite costs and costs whose totals overflow are refused (exit 2) by every command;
#   indices no order of the file's size can hold are read with the sizes its forwards show
#     (a violation, exit 1; nothing huge allocated: a memory limit guards the run);
#   a picture larger than --max-boxes is refused before anything is generated;
#   error messages escape control characters and cut long cells; --costs DIR says so;
#   cells with spaces and quoted cells are read as PyTorch's loader reads them;
#   an output never replaces a file the command reads (--costs, --csv, an order file).
# usage: check_no_harm.sh TOOL CONFORMANCE_DIR
set -u
tool=$1 conf=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; [[ -n ${reader:-} ]] && kill "$reader" 2>/dev/null' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
ok() { echo "ok: $*"; }
compute=$conf/torch/compute/1F1B_pp2_mb2_v1.csv
comms=$conf/torch/comms/1F1B_pp2_mb2_v1.csv

# expect STATUS NAME COMMAND...: the exit status; on 2 a message and an empty stdout.
expect() {
  local want=$1 name=$2
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local status=$?
  [[ $status == "$want" ]] || { fail "$name: exit $status, expected $want ($(head -c 300 "$tmp/err"))"; return 1; }
  if [[ $want == 2 ]]; then
    [[ -s $tmp/out ]] && { fail "$name: stdout not empty"; return 1; }
    grep -q '^ppsched: error:' "$tmp/err" || { fail "$name: no error message"; return 1; }
  fi
  ok "$name"
}

# --- --output through non-regular files -------------------------------------------------------
expect 0 "lower --output /dev/null" "$tool" lower "$compute" --output /dev/null
[[ -c /dev/null ]] || fail "/dev/null is no longer a device"
expect 0 "lower --output -" "$tool" lower "$compute" --output -
cmp -s "$tmp/out" "$comms" || fail "lower --output - differs from PyTorch's lowered order"
expect 0 "render --output /dev/null" "$tool" render 1F1B --ranks 2 --microbatches 2 --output /dev/null
expect 0 "trace --output /dev/null" "$tool" trace 1F1B --ranks 2 --microbatches 2 --output /dev/null
expect 0 "compare --output -" "$tool" compare --ranks 2 --microbatches 4 --output -
grep -q '^<svg' "$tmp/out" || grep -q '<svg' "$tmp/out" || fail "compare --output - wrote no SVG"

mkfifo "$tmp/fifo"
cat "$tmp/fifo" >"$tmp/from_fifo" &
reader=$!
expect 0 "lower --output FIFO" "$tool" lower "$compute" --output "$tmp/fifo"
wait "$reader"
reader=
[[ -p $tmp/fifo ]] || fail "the FIFO was replaced"
cmp -s "$tmp/from_fifo" "$comms" || fail "what came through the FIFO differs"

echo old >"$tmp/target.csv"
ln -s target.csv "$tmp/link.csv"
expect 0 "lower --output SYMLINK" "$tool" lower "$compute" --output "$tmp/link.csv"
[[ -L $tmp/link.csv ]] || fail "the symbolic link was replaced by a file"
cmp -s "$tmp/target.csv" "$comms" || fail "the link's target was not written"
ln -s missing.csv "$tmp/dangling.csv"
expect 0 "lower --output DANGLING-SYMLINK" "$tool" lower "$compute" --output "$tmp/dangling.csv"
[[ -L $tmp/dangling.csv && -f $tmp/missing.csv ]] || fail "the dangling link's target was not created"
ls -A "$tmp" | grep -q '\.tmp' && fail "a temporary file was left behind"

if [[ $(id -u) == 0 ]]; then
  mknod "$tmp/full" c 1 7 # what /dev/full is
  mknod "$tmp/null" c 1 3 # what /dev/null is
  expect 2 "lower --output DEVICE(full) as root" "$tool" lower "$compute" --output "$tmp/full"
  grep -q 'No space left' "$tmp/err" || fail "the full device's error is not reported"
  [[ -c $tmp/full ]] || fail "the full device node was replaced by a regular file"
  expect 0 "render --output DEVICE(null) as root" "$tool" render 1F1B --ranks 2 --microbatches 2 --output "$tmp/null"
  [[ -c $tmp/null ]] || fail "the null device node was replaced by a regular file"
else
  echo "skipped: the mknod device-node checks need root (uid $(id -u))"
fi

# --- non-finite costs and overflowing totals, one rule everywhere ----------------------------
printf '{"F": 1e300, "B": 1e308}\n' >"$tmp/huge.json"
for cmd in "simulate 1F1B --ranks 2 --microbatches 4" "timeline 1F1B --ranks 2 --microbatches 4" \
           "render 1F1B --ranks 2 --microbatches 4 --output $tmp/x.svg" \
           "trace 1F1B --ranks 2 --microbatches 4 --output $tmp/x.json" \
           "compare --ranks 2 --microbatches 4"; do
  # shellcheck disable=SC2086
  expect 2 "$cmd --f inf" "$tool" $cmd --f inf
  # shellcheck disable=SC2086
  expect 2 "$cmd --f nan" "$tool" $cmd --f nan
  # shellcheck disable=SC2086
  expect 2 "$cmd --f 1e308 --b 1e308" "$tool" $cmd --f 1e308 --b 1e308
  # shellcheck disable=SC2086
  expect 2 "$cmd --costs huge.json" "$tool" $cmd --costs "$tmp/huge.json"
done
expect 2 "generate --f inf" "$tool" generate ZB-1P --ranks 2 --microbatches 4 --f inf
[[ -e $tmp/x.svg || -e $tmp/x.json ]] && fail "a picture or trace was written for refused costs"

# A memory limit (ulimit -v) guards the checks below; sanitizer builds reserve terabytes of
# address space and cannot start under one, so there they run without it.
limit_ok=1
(ulimit -v 400000; "$tool" --version) >/dev/null 2>&1 || {
  limit_ok=0
  echo "note: the tool cannot start under ulimit -v (a sanitizer build?): memory limits skipped"
}
limit() { [[ $limit_ok == 1 ]] && ulimit -v "$1"; }

# --- indices the file cannot hold ------------------------------------------------------------
(
  limit 400000 # 400 MB: a table sized by the index would not fit
  printf '0F2147483647\n' >"$tmp/maxmb.csv"
  printf '0F100000000\n' >"$tmp/bigmb.csv"
  for f in maxmb bigmb; do
    for cmd in "validate" "lower" "show" "simulate --csv" "timeline --csv"; do
      # shellcheck disable=SC2086
      "$tool" $cmd "$tmp/$f.csv" >"$tmp/out" 2>"$tmp/err"
      status=$?
      if [[ $cmd == show ]]; then
        [[ $status == 0 || $status == 2 ]] || echo "FAIL: $cmd $f: exit $status"
      else
        # Read with the sizes its forwards show (one microbatch): the index is a violation.
        [[ $status == 1 ]] || echo "FAIL: $cmd $f: exit $status, expected 1"
        grep -q 'microbatch index out of range' "$tmp/out" "$tmp/err" || echo "FAIL: $cmd $f: message"
      fi
    done
  done
) >"$tmp/index.log" 2>&1
if grep -q FAIL "$tmp/index.log"; then fail "$(cat "$tmp/index.log")"; else ok "huge indices are violations"; fi

# --- pictures are capped -----------------------------------------------------------------------
expect 2 "render 4000x4000 capped" "$tool" render GPipe --ranks 4000 --microbatches 4000 --output "$tmp/big.svg"
grep -q -- '--max-boxes' "$tmp/err" || fail "the cap's message does not name --max-boxes"
[[ -e $tmp/big.svg ]] && fail "a capped picture was written"
# tune refuses before its search (the tuned order alone is over the cap: a 740 MB SVG once).
expect 2 "tune 512x1024 --picture capped" timeout 20 "$tool" tune --ranks 512 --microbatches 1024 \
  --time-limit 1 --quiet --picture "$tmp/big.svg"
grep -q -- '--max-boxes' "$tmp/err" || fail "tune's cap does not name --max-boxes"
[[ -e $tmp/big.svg ]] && fail "tune wrote a capped picture"
expect 0 "render with --max-boxes raised" "$tool" render GPipe --ranks 2 --microbatches 4 --max-boxes 16 --output "$tmp/ok.svg"
expect 2 "render over a lowered --max-boxes" "$tool" render GPipe --ranks 2 --microbatches 4 --max-boxes 15 --output "$tmp/no.svg"
expect 2 "compare --output capped" "$tool" compare --ranks 1000 --microbatches 4000 --output "$tmp/c.svg"
# Without a picture compare keeps no timeline (summary mode), one order at a time: its memory
# stays that of the largest single order.
(
  limit 1500000
  "$tool" compare --ranks 32 --microbatches 1024 --max-stages-per-rank 2 --format none
) >"$tmp/out" 2>"$tmp/err"
status=$?
[[ $status == 0 ]] && ok "compare without --output within 1.5 GB" || fail "compare in summary mode: exit $status ($(head -c 200 "$tmp/err"))"

# --- messages ------------------------------------------------------------------------------------
printf '0F0,\x1b[2J%s\n' "$(head -c 3000 /dev/zero | tr '\0' x)" >"$tmp/noisy.csv"
expect 2 "control characters in a cell" "$tool" validate "$tmp/noisy.csv"
grep -q $'\x1b' "$tmp/err" && fail "the message echoes an escape character"
[[ $(wc -c <"$tmp/err") -lt 400 ]] || fail "the message is not cut ($(wc -c <"$tmp/err") bytes)"
expect 2 "control characters in a command" "$tool" $'frob\x1b[2Jnicate'
grep -q $'\x1b' "$tmp/err" && fail "the message echoes an escape character"
# A library's error reaches the user without the C++ function that raised it.
expect 2 "an impossible memory limit" "$tool" tune --ranks 2 --microbatches 2 --memory-limit 0.5
grep -q '^ppsched: error: the memory limit 0.5 is below' "$tmp/err" || fail "tune's error: $(cat "$tmp/err")"
grep -q 'ppsched::' "$tmp/err" && fail "an error names a C++ function: $(cat "$tmp/err")"
# Bytes that are not UTF-8 are escaped; UTF-8 text is echoed as it is.
expect 2 "a command that is not UTF-8" "$tool" $'frob\xff\xc3nicate'
grep -q 'frob\\xff\\xc3nicate' "$tmp/err" || fail "bytes that are not UTF-8 are not escaped ($(cat "$tmp/err"))"
expect 2 "a command in UTF-8" "$tool" 'frobnicaté'
grep -q 'frobnicaté' "$tmp/err" || fail "UTF-8 is not echoed as it is ($(cat "$tmp/err"))"
mkdir "$tmp/adir"
expect 2 "--costs DIR" "$tool" simulate 1F1B --ranks 2 --microbatches 2 --costs "$tmp/adir"
grep -q 'is a directory' "$tmp/err" || fail "--costs DIR does not say it is a directory"

# --- PyTorch's loader: spaces and quotes -----------------------------------------------------
sed -e 's/,/, /g' "$compute" >"$tmp/spaced.csv"
sed -e 's/\([^,]*\)/"\1"/g' "$compute" >"$tmp/quoted.csv"
for f in spaced quoted; do
  expect 0 "lower $f cells" "$tool" lower "$tmp/$f.csv"
  cmp -s "$tmp/out" "$comms" || fail "$f cells lower differently"
done
# --- several outputs: all or none --------------------------------------------------------------
# calibrate writes a cost file, an order and a picture: a failing one (a full device) leaves
# neither of the others behind.
cal=$(dirname "$0")/data/calibrate
if [[ -w /dev/full ]]; then
  expect 2 "calibrate with one output on a full device" "$tool" calibrate "$cal/1f1b_rank0.json" \
    "$cal/1f1b_rank1.json" --output "$tmp/costs.json" --order "$tmp/order.csv" --picture /dev/full
  [[ -e $tmp/costs.json || -e $tmp/order.csv ]] && fail "calibrate left outputs behind"
  ls -a "$tmp" | grep -q '\.tmp' && fail "calibrate left a temporary file behind"
fi
expect 0 "calibrate with every output" "$tool" calibrate "$cal/1f1b_rank0.json" \
  "$cal/1f1b_rank1.json" --output "$tmp/costs.json" --order "$tmp/order.csv" --picture "$tmp/p.svg"
[[ -s $tmp/costs.json && -s $tmp/order.csv && -s $tmp/p.svg ]] || fail "calibrate wrote not every output"
# tune writes an order and a picture after its search: the same, and a missing directory for
# the picture leaves no order behind either.
expect 2 "tune with the picture in a missing directory" "$tool" tune --ranks 2 --microbatches 2 \
  --quiet --output "$tmp/tuned.csv" --picture "$tmp/missing/p.svg"
[[ -e $tmp/tuned.csv ]] && fail "tune left its order behind"
if [[ -w /dev/full ]]; then
  expect 2 "tune with the picture on a full device" "$tool" tune --ranks 2 --microbatches 2 \
    --quiet --output "$tmp/tuned.csv" --picture /dev/full
  [[ -e $tmp/tuned.csv ]] && fail "tune left its order behind"
fi
expect 0 "tune with both outputs" "$tool" tune --ranks 2 --microbatches 2 --quiet \
  --output "$tmp/tuned.csv" --picture "$tmp/tuned.svg"
[[ -s $tmp/tuned.csv && -s $tmp/tuned.svg ]] || fail "tune wrote not every output"
grep -q "wrote $tmp/tuned.svg" "$tmp/out" || fail "tune does not say where its picture went"
# '-' is standard output where it is the only output; plan, calibrate and tune print a report there.
for flag in --output --picture; do
  expect 2 "tune $flag -" "$tool" tune --ranks 2 --microbatches 2 --quiet $flag -
  grep -q "a file name, not '-'" "$tmp/err" || fail "tune $flag - does not say why"
done
expect 2 "calibrate --output -" "$tool" calibrate "$cal/1f1b_rank0.json" "$cal/1f1b_rank1.json" --output -
grep -q "a file name, not '-'" "$tmp/err" || fail "calibrate --output - does not say why"
expect 2 "plan --output -" "$tool" plan "$(dirname "$0")/data/model_tiny.json" --ranks 2 --microbatches 4 --output -
grep -q "a file name, not '-'" "$tmp/err" || fail "plan --output - does not say why"
[[ -e ./- ]] && fail "a file named '-' was written"
# Two outputs into one file: refused before anything is written.
expect 2 "calibrate with one file for two outputs" "$tool" calibrate "$cal/1f1b_rank0.json" \
  "$cal/1f1b_rank1.json" --output "$tmp/same.x" --order "$tmp/./same.x"
grep -q "the same file" "$tmp/err" || fail "two outputs in one file: no reason given"
[[ -e $tmp/same.x ]] && fail "two outputs in one file: something was written"
expect 2 "tune with one file for two outputs" "$tool" tune --ranks 2 --microbatches 2 --quiet \
  --output "$tmp/same.x" --picture "$tmp/./same.x"
grep -q "the same file" "$tmp/err" || fail "tune: two outputs in one file: no reason given"
[[ -e $tmp/same.x ]] && fail "tune: two outputs in one file: something was written"
expect 0 "tune with both outputs into /dev/null" "$tool" tune --ranks 2 --microbatches 2 --quiet \
  --output /dev/null --picture /dev/null
# An output that names an input file (through another spelling too) would replace it: refused
# before the search, the input untouched; lower and render as well.
printf '{"F": [1, 1]}\n' >"$tmp/in.json"
cp "$tmp/in.json" "$tmp/in.orig"
for flag in --output --picture; do
  expect 2 "tune $flag naming its --costs" "$tool" tune --ranks 2 --microbatches 2 --quiet \
    --costs "$tmp/in.json" $flag "$tmp/./in.json"
  grep -q "that this command reads" "$tmp/err" || fail "tune $flag onto its input: no reason given"
  cmp -s "$tmp/in.json" "$tmp/in.orig" || fail "tune $flag replaced its --costs file"
done
cp "$compute" "$tmp/in.csv"
expect 2 "lower --output naming its input" "$tool" lower "$tmp/in.csv" --output "$tmp/in.csv"
cmp -s "$tmp/in.csv" "$compute" || fail "lower replaced its input"
expect 2 "render --output naming its --csv" "$tool" render --csv "$tmp/in.csv" --output "$tmp/in.csv"
cmp -s "$tmp/in.csv" "$compute" || fail "render replaced its input"
# An empty file name is refused with the flag that has it.
expect 2 "tune --picture ''" "$tool" tune --ranks 2 --microbatches 2 --quiet --picture ''
grep -q -- "--picture needs a file name" "$tmp/err" || fail "tune --picture '' names another flag"
# /dev/stdout through a pipe: the descriptor's link names no path, the link itself opens.
"$tool" trace 1F1B --ranks 2 --microbatches 2 --output /dev/stdout 2>"$tmp/err" | cat >"$tmp/piped"
grep -q '"traceEvents"' "$tmp/piped" || fail "--output /dev/stdout into a pipe wrote nothing ($(cat "$tmp/err"))"
# A failing write is exit status 2, standard output as a named file, with no usage hint.
if [[ -w /dev/full ]]; then
  "$tool" generate 1F1B --ranks 2 --microbatches 2 >/dev/full 2>"$tmp/err"
  [[ $? == 2 ]] || fail "a full standard output is not exit status 2"
  expect 2 "render --output in a missing directory" "$tool" render 1F1B --ranks 2 --microbatches 2 \
    --output "$tmp/missing/x.svg"
  grep -q -- '--help' "$tmp/err" && fail "a write error ends with a usage hint"
fi
exit $failed
