#!/usr/bin/env bash
# Builds the benchmarks in Release (-O3, NDEBUG) and runs them, as docs/performance.md does.
#
# Usage: scripts/run_benchmarks.sh [-r repetitions] [-f filter] [-t min_time] [-w] [-o out.json]
#   -r  repetitions of each benchmark; the report keeps the best (default 3)
#   -f  a --benchmark_filter regex (default: everything)
#   -t  minimum time per benchmark in seconds (default 0.2)
#   -w  "warm allocator": glibc keeps freed memory instead of returning it to the kernel, so
#       repeated calls do not pay page faults for fresh memory (see docs/performance.md)
#   -o  where the JSON goes (default build/bench-release/benchmarks-<mode>.json)
# Prints the report of benchmarks/report.py. Every benchmark runs on one thread.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$root/build/bench-release
reps=3 filter="" min_time=0.2 warm=0 out=""
while getopts "r:f:t:wo:h" opt; do
  case $opt in
    r) reps=$OPTARG ;;
    f) filter=$OPTARG ;;
    t) min_time=$OPTARG ;;
    w) warm=1 ;;
    o) out=$OPTARG ;;
    *) sed -n '2,14p' "${BASH_SOURCE[0]}"; exit 2 ;;
  esac
done
mode=$([[ $warm -eq 1 ]] && echo warm || echo default)
out=${out:-$build/benchmarks-$mode.json}

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPPSCHED_BUILD_TESTS=OFF \
  -DPPSCHED_BUILD_EXAMPLES=OFF -DPPSCHED_WERROR=OFF >&2
cmake --build "$build" --target ppsched_benchmarks ppsched-cli >&2

args=(--benchmark_min_time="$min_time" --benchmark_repetitions="$reps"
      --benchmark_out="$out" --benchmark_out_format=json)
[[ -n $filter ]] && args+=(--benchmark_filter="$filter")
if [[ $warm -eq 1 ]]; then
  # Never give memory back (no trimming, no per-block mmap): what a long-running process
  # that evaluates many schedules sees after its first call.
  export GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295:glibc.malloc.top_pad=268435456
fi
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$build/benchmarks/ppsched_benchmarks" "${args[@]}" >&2
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 "$root/benchmarks/report.py" "$out"
