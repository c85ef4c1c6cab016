#!/usr/bin/env bash
# A local fuzzing campaign over ppsched's libFuzzer targets (tests/fuzz, docs/robustness.md).
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]     (default: 600 s, every target)
# Builds build/fuzz (clang, ASan + UBSan + libFuzzer), then fuzzes each target in turn from its
# committed corpus plus build/fuzz/campaign/<target> (kept between runs). New inputs go to that
# directory, crashes to build/fuzz/campaign/<target>-crash-*; a summary line per target gives
# runs, exec/s, coverage (edges) and features. Add a crash that was fixed to
# tests/fuzz/corpus/<target>/ so the replay tests keep it. Environment: PPSCHED_FUZZ_JOBS (how
# many targets at once, default 1), PPSCHED_FUZZ_FLAGS (more libFuzzer flags).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
seconds=${1:-600}
shift || true
all=$(sed -n 's/^set(PPSCHED_FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/CMakeLists.txt)
targets=("$@")
# shellcheck disable=SC2206 # one word per target
[[ ${#targets[@]} -eq 0 ]] && targets=($all)
dir=build/fuzz
cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPPSCHED_FUZZ=ON -DPPSCHED_BUILD_TOOLS=OFF -DPPSCHED_BUILD_BENCHMARKS=OFF \
  -DPPSCHED_BUILD_EXAMPLES=OFF >/dev/null
grep -q '^PPSCHED_HAS_LIBFUZZER:INTERNAL=1' "$dir/CMakeCache.txt" || {
  echo "fuzz.sh: clang's libFuzzer runtime is missing (apt-get install libclang-rt-14-dev)" >&2
  exit 2
}
cmake --build "$dir" --target "${targets[@]}"
mkdir -p "$dir/campaign"
run_one() {
  local t=$1 work=$dir/campaign/$1 log=$dir/campaign/$1.log
  mkdir -p "$work"
  # shellcheck disable=SC2086 # extra flags split on purpose
  "$dir/tests/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 -artifact_prefix="$dir/campaign/$t-" ${PPSCHED_FUZZ_FLAGS:-} \
    "$work" "tests/fuzz/corpus/$t" >"$log" 2>&1
  local status=$?
  local last runs eps
  last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  eps=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  printf '%-16s %4ss  status %d  runs %s  exec/s %s  %s\n' "$t" "$seconds" "$status" \
    "${runs:-?}" "${eps:-?}" "$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9a-zA-Z]+' <<<"$last")"
  return $status
}
failed=0
jobs=${PPSCHED_FUZZ_JOBS:-1}
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if [[ ${#pids[@]} -ge $jobs ]]; then
    wait "${pids[0]}" || failed=1
    pids=("${pids[@]:1}")
  fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[[ $failed -eq 0 ]] && echo "fuzz.sh: nothing found" || echo "fuzz.sh: crashes in $dir/campaign (see the logs)"
exit $failed
