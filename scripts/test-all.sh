#!/usr/bin/env bash
# Runs every check of ppsched, as CI does (.ci/run calls this):
#   deps       install missing Debian packages (as root)
#   gcc        g++ Debug (-g1), -Werror: configure, build, ctest   (preset dev)
#   clang      clang++ 14 Debug, -Werror, with ASan + UBSan: the sanitizer build; configure,
#              build, ctest (preset clang)
#   asan       g++ with ASan + UBSan, STATIC_REQUIREs at run time  (preset asan; not in the
#              default run: the clang phase sanitizes the same tests, and each STATIC_REQUIRE
#              is a constant evaluation, which both compilers already reject on undefined
#              behaviour)
#   headers    every public header compiles on its own (g++, dev warnings)
#   consumers  install + find_package(ppsched CONFIG); add_subdirectory
#   format     clang-format-14 --dry-run -Werror on the C++ sources
#   bench      a short run of each benchmark executable, if there are any
#   fuzz       clang + libFuzzer: each fuzz target fuzzed for PPSCHED_FUZZ_SECONDS (default 20)
#              from its committed corpus (skipped when clang's fuzzer runtime is missing; the
#              corpus replays run in gcc and clang as plain tests)
# Usage: scripts/test-all.sh [phase...]   (default: all phases, in that order)
# Prints the time of each phase and ends with a plain line `N passed, N failed` (ctest tests,
# plus one per header/format/bench/build check); exits non-zero when anything failed.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
jobs=${PPSCHED_JOBS:-$(nproc 2>/dev/null || echo 2)}
all_phases=(deps gcc clang headers consumers format bench fuzz)
phases=("$@")
[[ ${#phases[@]} -eq 0 ]] && phases=("${all_phases[@]}")

passed=0 failed=0
timings=()
failures=()
log_dir=$root/build/logs
mkdir -p "$log_dir"

note_pass() { passed=$((passed + 1)); }
note_fail() { failed=$((failed + 1)); failures+=("$1"); echo "FAILED: $1"; }

# Runs a command with its output in a log; shows the log's tail only when it fails.
quiet() {
  local name=$1 log=$log_dir/$1.log
  shift
  if "$@" >"$log" 2>&1; then return 0; fi
  echo "--- last 60 lines of $log"
  tail -n 60 "$log"
  return 1
}

# Runs ctest in a build directory and adds its counts to the totals.
run_ctest() {
  local name=$1 dir=$2 out
  shift 2
  out=$(ctest --test-dir "$dir" --output-on-failure -j2 "$@" 2>&1)
  local status=$?
  printf '%s\n' "$out" | grep -vE '^ *(Start|[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed)' || true
  local line total bad
  line=$(printf '%s\n' "$out" | grep -E 'tests passed, [0-9]+ tests? failed out of [0-9]+' | tail -n 1)
  if [[ -z $line ]]; then
    note_fail "$name: ctest did not run"
    return
  fi
  bad=$(sed -E 's/.* ([0-9]+) tests? failed out of.*/\1/' <<<"$line")
  total=$(sed -E 's/.*failed out of ([0-9]+).*/\1/' <<<"$line")
  passed=$((passed + total - bad))
  failed=$((failed + bad))
  if [[ $bad -ne 0 || $status -ne 0 ]]; then
    failures+=("$name: $bad of $total tests failed")
    [[ $bad -eq 0 ]] && note_fail "$name: ctest exit status $status"
  fi
  echo "$name: $((total - bad)) of $total tests passed"
}

# Configures (with any further cmake arguments), builds and tests one preset.
preset_phase() {
  local preset=$1 dir=build/$1
  shift
  if ! quiet "$preset-configure" cmake --preset "$preset" "$@"; then
    note_fail "$preset: configure"
    return
  fi
  if ! quiet "$preset-build" cmake --build --preset "$preset" --parallel "$jobs"; then
    note_fail "$preset: build"
    return
  fi
  run_ctest "$preset" "$dir"
}

phase_deps() {
  bash scripts/install-deps.sh || note_fail "deps: missing packages"
}

# Debug information: line tables only (-g1) unless PPSCHED_DEBUG_FLAGS says otherwise. They
# are enough for a failing test's backtrace, and the build takes about 15 % less time than
# with -g (the CI's budget is 30 minutes on 2 cores).
phase_gcc() { preset_phase dev -DCMAKE_CXX_FLAGS_DEBUG="${PPSCHED_DEBUG_FLAGS:--g1}"; }
sanitized() {
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1} \
    UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} "$@"
}
phase_clang() { sanitized preset_phase clang; }
phase_asan() { sanitized preset_phase asan; }

phase_headers() {
  # With g++ only: both compilers share libstdc++, so a header that compiles alone with one does
  # with the other, and clang already compiles every header through the tests.
  if [[ ! -f build/dev/CMakeCache.txt ]] && ! quiet dev-configure cmake --preset dev; then
    note_fail "headers: configure"
    return
  fi
  if quiet headers cmake --build build/dev --parallel "$jobs" --target all_verify_interface_header_sets; then
    note_pass
    echo "headers: every public header compiles on its own (with the dev warnings)"
  else
    note_fail "headers"
  fi
}

install_library() {
  # Install from a build of the library alone, as a packager would.
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPPSCHED_BUILD_TESTS=OFF \
    -DPPSCHED_BUILD_TOOLS=OFF -DPPSCHED_BUILD_BENCHMARKS=OFF -DPPSCHED_BUILD_EXAMPLES=OFF &&
    cmake --install "$1" --prefix "$2"
}

phase_consumers() {
  local tmp=$root/build/consumers
  rm -rf "$tmp"
  mkdir -p "$tmp"
  if ! quiet consumers-install install_library "$tmp/lib" "$tmp/prefix"; then
    note_fail "consumers: install"
    return
  fi
  if quiet consumer-find_package cmake -S tests/consumer/find_package -B "$tmp/find_package" \
      -G Ninja -DCMAKE_CXX_COMPILER=g++ -DCMAKE_PREFIX_PATH="$tmp/prefix" &&
    quiet consumer-find_package-build cmake --build "$tmp/find_package"; then
    run_ctest consumer-find_package "$tmp/find_package"
  else
    note_fail "consumer find_package: configure/build"
  fi
  if quiet consumer-add_subdirectory cmake -S tests/consumer/add_subdirectory \
      -B "$tmp/add_subdirectory" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
      -DPPSCHED_SOURCE_DIR="$root" &&
    quiet consumer-add_subdirectory-build cmake --build "$tmp/add_subdirectory"; then
    run_ctest consumer-add_subdirectory "$tmp/add_subdirectory"
  else
    note_fail "consumer add_subdirectory: configure/build"
  fi
}

phase_format() {
  local tool files=()
  tool=$(command -v clang-format-14 || command -v clang-format) || {
    note_fail "format: clang-format-14 not found"
    return
  }
  while IFS= read -r -d '' f; do files+=("$f"); done < <(
    find include tests tools benchmarks examples -type f \
      \( -name '*.hpp' -o -name '*.cpp' -o -name '*.h' -o -name '*.cc' \) -print0 2>/dev/null | sort -z)
  if "$tool" --dry-run -Werror "${files[@]}" >"$log_dir/format.log" 2>&1; then
    note_pass
    echo "format: ${#files[@]} files clean"
  else
    grep -E '^[^ ].*error:' "$log_dir/format.log" | cut -d: -f1 | sort -u | sed 's/^/  needs clang-format-14 -i: /'
    note_fail "format: run clang-format-14 -i on the files above"
  fi
}

phase_bench() {
  local dir=build/dev/benchmarks exe ran=0
  if [[ ! -d $dir ]]; then
    echo "bench: no benchmarks built"
    return
  fi
  if [[ $(ctest --test-dir build/dev -N -L bench 2>/dev/null | grep -cE 'Test +#') -gt 0 ]]; then
    echo "bench: benchmark smoke runs are CTest tests (label bench), already run in gcc"
    return
  fi
  while IFS= read -r exe; do
    ran=1
    if quiet "bench-$(basename "$exe")" timeout 300 "$exe" --benchmark_min_time=0.001; then
      note_pass
      echo "bench: $(basename "$exe") ran"
    else
      note_fail "bench: $(basename "$exe")"
    fi
  done < <(find "$dir" -maxdepth 2 -type f -perm -u+x ! -path '*/CMakeFiles/*' | sort)
  [[ $ran -eq 0 ]] && echo "bench: no benchmark executables"
}

phase_fuzz() {
  # A build of the fuzz targets only (clang, optimised, ASan + UBSan + libFuzzer), then the
  # tests labelled fuzz, two at a time: about 8 x 20 s / 2 of fuzzing plus the build.
  local dir=build/fuzz seconds=${PPSCHED_FUZZ_SECONDS:-20}
  if ! quiet fuzz-configure cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPPSCHED_FUZZ=ON -DPPSCHED_FUZZ_SECONDS="$seconds" \
      -DPPSCHED_BUILD_TOOLS=OFF -DPPSCHED_BUILD_BENCHMARKS=OFF -DPPSCHED_BUILD_EXAMPLES=OFF; then
    note_fail "fuzz: configure"
    return
  fi
  if ! grep -q '^PPSCHED_HAS_LIBFUZZER:INTERNAL=1' "$dir/CMakeCache.txt"; then
    echo "fuzz: clang's libFuzzer runtime is missing (libclang-rt-14-dev): skipped"
    return
  fi
  local targets
  targets=$(sed -n 's/^set(PPSCHED_FUZZ_TARGETS \(.*\))$/\1/p' tests/fuzz/CMakeLists.txt)
  # shellcheck disable=SC2086 # one word per target
  if ! quiet fuzz-build cmake --build "$dir" --parallel "$jobs" --target $targets; then
    note_fail "fuzz: build"
    return
  fi
  run_ctest fuzz "$dir" -L '^fuzz$'
}

# CPU seconds (user + sys) used so far by finished child processes: with other jobs on the
# machine, wall time alone says little about what the checks cost.
# Sets cpu_now to those seconds. `times` runs in this shell: in a $(...) subshell it would see
# none of this shell's children.
cpu_seconds() {
  times >"$log_dir/.times"
  cpu_now=$(tail -n 1 "$log_dir/.times" | tr 'ms' '  ' |
    awk '{ printf "%d", $1 * 60 + $2 + $3 * 60 + $4 }')
}

for phase in "${phases[@]}"; do
  if ! declare -F "phase_$phase" >/dev/null; then
    echo "test-all: unknown phase '$phase' (phases: ${all_phases[*]}; also asan)" >&2
    exit 2
  fi
done
start_all=$SECONDS
cpu_seconds
cpu_all=$cpu_now
for phase in "${phases[@]}"; do
  echo "=== $phase"
  t0=$SECONDS
  cpu_seconds
  c0=$cpu_now
  "phase_$phase"
  cpu_seconds
  line=$(printf '%-10s %4ds wall %5ds cpu' "$phase" $((SECONDS - t0)) $((cpu_now - c0)))
  timings+=("$line")
  echo "=== $line"
done

echo
echo "=== timings ($(nproc 2>/dev/null || echo '?') cores, load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null))"
printf '  %s\n' "${timings[@]}"
cpu_seconds
printf '  %-10s %4ds wall %5ds cpu\n' total $((SECONDS - start_all)) $((cpu_now - cpu_all))
if [[ ${#failures[@]} -gt 0 ]]; then
  echo "=== failures"
  printf '  %s\n' "${failures[@]}"
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
