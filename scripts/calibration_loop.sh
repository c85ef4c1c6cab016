#!/usr/bin/env bash
# The closed loop of docs/calibration.md (a benchmark, not a test): the MPI example runs a
# schedule with a compute cost that differs per stage (F of stage s = 1000 + 250 s microseconds
# of arithmetic, I = F, W = F/2), writes a PP:<action> trace per pipeline rank, and
# `ppsched calibrate` fits costs to it and replays the executed order. Reports, per schedule and
# rank count, the largest and mean error of the recovered per-stage costs against the configured
# ones (target 10 %), the predicted against the measured step time (target 5 %), the replay with
# per-stage means instead of medians (outliers in: what a busy machine costs), and the 1-minute
# load average before and after the run (the machine is shared: run it on a quiet one).
#
# usage: scripts/calibration_loop.sh [BUILD_DIR (default build/release)] [OUT_DIR]
#   RANKS="2 4" SCHEDULES="1F1B Interleaved1F1B ZB-H1 ZBVZeroBubble" MICROBATCHES=8
#   ITERATIONS=20 JOBS=1 (build parallelism when the tools are missing)
#   PRIORITY=rt: run each mpirun under `chrt -f 10` (SCHED_FIFO; root or CAP_SYS_NICE): the
#   ranks then keep their cores against every other job of a shared machine. A diagnostic,
#   reported as such (the `scheduling` column); the measurement proper runs at normal priority
#   on a quiet machine.
# One process per pipeline rank (`--replicas 1`: no data-parallel twin whose waits would share
# the cores). While there are at least as many cores as ranks, each process is bound to a core
# of its own (no migrations; a waiting rank keeps its core and notices a message within ~10 us,
# see `measured_waits` in examples/mpi_pipeline/mpi_handlers.hpp); more ranks than cores (4 on a
# 2-core machine) run unbound and oversubscribed, and are reported separately.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
out=${2:-$build/calibration}
ranks_list=${RANKS:-"2 4"}
schedules=${SCHEDULES:-"1F1B Interleaved1F1B ZB-H1 ZBVZeroBubble"}
mb=${MICROBATCHES:-8}
iterations=${ITERATIONS:-20}
cores=$(nproc)
prio=()
scheduling=normal
if [[ ${PRIORITY:-} == rt ]]; then
  prio=(chrt -f 10)
  scheduling=SCHED_FIFO
fi
py=/usr/bin/python3
ppsched=$build/tools/ppsched
example=$build/examples/mpi_pipeline/ppsched_mpi_pipeline
if [[ ! -x $ppsched || ! -x $example ]]; then
  (cd "$root" && cmake --preset release >/dev/null)
  cmake --build "$build" -j"${JOBS:-1}" --target ppsched-cli ppsched_mpi_pipeline
fi
flags=(--oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)
[[ $(id -u) == 0 ]] && flags+=(--allow-run-as-root)
costs=$(seq -s, 1000 250 2750) # 8 stages; the example repeats the last for more
mkdir -p "$out"
results=$out/results.md
echo "| schedule | ranks | processes | stages | cost error max | cost error mean | measured step (ms) | predicted (ms) | step error | predicted with means (ms) | scheduling | load before / after |" >"$results"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|" >>"$results"
for ranks in $ranks_list; do
  if ((ranks <= cores)); then
    bind=(--map-by core --bind-to core)
  else
    bind=(--bind-to none)
  fi
  for s in $schedules; do
    dir=$out/$s.$ranks
    rm -rf "$dir"
    mkdir -p "$dir"
    echo "== $s, $ranks pipeline ranks ($ranks processes, ${bind[*]})"
    load_before=$(cut -d' ' -f1 /proc/loadavg)
    if ! timeout 600 "${prio[@]}" mpirun "${flags[@]}" "${bind[@]}" -np "$ranks" "$example" --replicas 1 \
        --schedule "$s" --config "$mb" --variants ddp --stage-cost-us "$costs" \
        --iterations "$iterations" --trace "$dir" >"$dir/run.txt" 2>&1; then
      echo "   the run failed:"; tail -n 5 "$dir/run.txt"; continue
    fi
    "$ppsched" calibrate "$dir"/rank*.json --output "$dir/fitted.json" \
      --order "$dir/order.csv" --picture "$dir/overlay.svg" >"$dir/report.txt" || {
      echo "   calibrate failed"; continue; }
    "$py" - "$dir" "$s" "$ranks" "$load_before" "$scheduling" >>"$results" <<'EOF'
import json, re, sys
d, name, ranks, load_before, scheduling = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
conf = json.load(open(d + "/configured_costs.json"))["stages"]
fit = json.load(open(d + "/fitted.json"))["stages"]
errors = []
for s, f in enumerate(fit):
    c = conf[s]
    want = {"F": c["F"], "I": c["I"], "W": c["W"], "B": c["I"] + c["W"]}
    for k, v in f.items():
        if k in want:
            errors.append(abs(v - want[k]) / want[k])
report = open(d + "/report.txt").read()
m = re.search(r"step time: measured ([0-9.e+-]+).*, predicted ([0-9.e+-]+) \(([-+0-9.e]+) %\)", report)
measured, predicted, err = (float(m.group(i)) for i in (1, 2, 3))
mean = re.search(r"mean instead of its median .*: predicted ([0-9.e+-]+)", report)
load = open("/proc/loadavg").read().split()[0]
print(f"| {name} | {ranks} | {ranks} | {len(fit)} | {100 * max(errors):.1f} % | "
      f"{100 * sum(errors) / len(errors):.1f} % | {measured:.1f} | {predicted:.1f} | {err:+.1f} % | "
      f"{float(mean.group(1)) if mean else float('nan'):.1f} | {scheduling} | {load_before} / {load} |")
EOF
    tail -n 1 "$results"
  done
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "results: $results (traces, reports and pictures under $out)"
cat "$results"
