#!/usr/bin/env bash
# Runs a ppsched command that writes a file (render, trace, compare --output) and checks it:
#   the exit status; on status 2 a 'ppsched: error:' message and nothing on stdout; on any
#   failure no file at all left in the output directory (not even a temporary one); on status 0
#   exactly the output file, and:
#   svg   well-formed XML (xmllint --noout), renders to a non-empty PNG (rsvg-convert), and has
#         one <rect class="act"> box per action;
#   json  valid JSON (python3), one complete ("X") event per action, and with --flows one flow
#         start and one flow end per SEND of the order, paired by id.
# The expected number of actions comes from another subcommand, not from the file under test:
#   --actions-of "ARGS"    count the actions of 'ppsched generate ARGS' (PyTorch's CSV cells)
#   --actions-of-csv FILE  count the actions of a CSV file
#   --actions-of-compare "ARGS"  sum the actions of every schedule 'ppsched compare ARGS
#                          --format json' lists (each generated with its stages per rank)
# In the command, @OUT@ is replaced by the output file (in a fresh directory) and @DIR@ by that
# directory.
# usage: check_output.sh --kind svg|json [--actions-of ... | --actions-of-csv F |
#                        --actions-of-compare ...] [--flows] [--stdout-has TEXT] STATUS --
#                        COMMAND [ARGS...]
set -u
kind=svg actions_of='' actions_csv='' actions_compare='' flows=0 stdout_has=''
while [[ $# -gt 0 && $1 != -- ]]; do
  case $1 in
    --kind) kind=$2; shift 2 ;;
    --actions-of) actions_of=$2; shift 2 ;;
    --actions-of-csv) actions_csv=$2; shift 2 ;;
    --actions-of-compare) actions_compare=$2; shift 2 ;;
    --flows) flows=1; shift ;;
    --stdout-has) stdout_has=$2; shift 2 ;;
    *) expected=$1; shift ;;
  esac
done
shift # the --
tool=$1
work=$(mktemp -d) dir=$(mktemp -d)
trap 'rm -rf "$work" "$dir"' EXIT
out=$dir/out.$kind
args=()
for a in "$@"; do
  a=${a//@OUT@/$out}
  args+=("${a//@DIR@/$dir}")
done
"${args[@]}" </dev/null >"$work/stdout" 2>"$work/stderr"
status=$?
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# Counts the actions in CSV text on stdin: non-empty cells.
count_cells() { awk -F, '{ for (i = 1; i <= NF; i++) if ($i ~ /[^ \r]/) n++ } END { print n + 0 }'; }

[[ $status == "$expected" ]] || fail "exit status $status, expected $expected"
left=$(ls -A "$dir")
if [[ $expected == 2 ]]; then
  head -c 15 "$work/stderr" | grep -qx 'ppsched: error:' || fail "stderr does not start with 'ppsched: error:'"
  [[ -s $work/stdout ]] && fail "stdout is not empty on error"
fi
if [[ $expected != 0 ]]; then
  [[ -z $left ]] || fail "files left behind after a failure: $left"
fi
if [[ $expected == 0 && $status == 0 ]]; then
  [[ -s $work/stderr ]] && fail "stderr is not empty on success"
  [[ $left == "out.$kind" ]] || fail "expected exactly out.$kind in the output directory, found: $left"
  if [[ -n $stdout_has ]] && ! grep -qF -- "$stdout_has" "$work/stdout"; then
    fail "stdout lacks '$stdout_has'"
  fi
  want=''
  if [[ -n $actions_of ]]; then
    # shellcheck disable=SC2086  # the generate arguments are words
    want=$("$tool" generate $actions_of --format csv | count_cells)
  elif [[ -n $actions_csv ]]; then
    want=$(count_cells <"$actions_csv")
  elif [[ -n $actions_compare ]]; then
    want=0
    # shellcheck disable=SC2086
    while read -r name v; do
      n=$("$tool" generate "$name" --stages-per-rank "$v" $actions_compare --format csv | count_cells)
      want=$((want + n))
    done < <("$tool" compare $actions_compare --format json |
             python3 -c 'import json, sys
for r in json.load(sys.stdin)["results"]: print(r["schedule"], r["stages_per_rank"])')
  fi
  case $kind in
    svg)
      xmllint --noout "$out" 2>"$work/xmllint" || fail "not well-formed XML: $(head -c 400 "$work/xmllint")"
      if rsvg-convert "$out" -o "$work/out.png" 2>"$work/rsvg"; then
        [[ -s $work/out.png ]] || fail "rsvg-convert wrote an empty PNG"
        [[ $(head -c 4 "$work/out.png" | od -An -c | tr -d ' ') == '211PNG' ]] || fail "not a PNG"
      else
        fail "rsvg-convert failed: $(head -c 400 "$work/rsvg")"
      fi
      boxes=$(grep -o '<rect class="act"' "$out" | wc -l)
      if [[ -n $want && $boxes != "$want" ]]; then fail "$boxes boxes for $want actions"; fi
      ;;
    json)
      python3 - "$out" "${want:--1}" "$flows" "$tool" "$actions_of" >"$work/json" 2>&1 <<'EOF' || fail "$(cat "$work/json")"
import json, subprocess, sys
path, want, flows, tool, gen = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4], sys.argv[5]
events = json.load(open(path))["traceEvents"]
x = [e for e in events if e["ph"] == "X"]
if want >= 0 and len(x) != want:
    sys.exit(f"{len(x)} complete events for {want} actions")
if flows:
    csv = subprocess.run([tool, "generate", *gen.split(), "--format", "csv"], check=True,
                         capture_output=True, text=True).stdout
    sends = sum(1 for line in csv.splitlines() for c in line.split(",") if "SEND_" in c)
    starts = sorted(e["id"] for e in events if e["ph"] == "s")
    ends = sorted(e["id"] for e in events if e["ph"] == "f")
    if len(starts) != sends or starts != ends or len(set(starts)) != len(starts):
        sys.exit(f"{len(starts)} flow starts, {len(ends)} flow ends for {sends} sends")
EOF
      ;;
  esac
fi
if [[ $failed != 0 ]]; then
  echo "command: ${args[*]}"
  echo "--- stdout (first 20 lines)"; head -n 20 "$work/stdout"
  echo "--- stderr"; cat "$work/stderr"
  exit 1
fi
echo "ok: status $status: ${args[*]}"
