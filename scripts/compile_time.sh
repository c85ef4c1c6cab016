#!/usr/bin/env bash
# Compile time of ppsched's compile-time checks: for each compiler, schedule and size, compiles a
# translation unit that does
#     static_assert(ppsched::validate(ppsched::generate<S>(cfg)));
# and reports its time next to a translation unit that only includes the same headers (the
# baseline). Each figure is the best of several runs (the machine may be busy).
#
# Usage: scripts/compile_time.sh [-c "g++ clang++"] [-s "schedule ..."] [-n "actions ..."]
#                                [-r repeats] [-x extra compiler flags]
#   -c  compilers (default: g++ clang++)
#   -s  schedules, by C++ name, or "all" (default: interleaved_1f1b)
#   -n  target numbers of compute actions (default: 1000 2000 4000 8000)
#   -r  runs per figure, the best is reported (default: 3)
#   -x  extra flags, e.g. "-fconstexpr-steps=100000000" to lift clang's evaluation limit
# The configuration for N actions: the schedule's default stages per rank V, microbatches
# M = 4 * ranks, ranks P chosen so that the order has about N compute actions (the numbers in
# the table are exact). A size that exceeds a compiler's constant-evaluation limit is reported
# as "limit" (raise it with -x; the library never sets such flags on its targets).
# Prints a Markdown table; exits non-zero when a compilation fails for another reason.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
compilers="g++ clang++"
schedules="interleaved_1f1b"
sizes="1000 2000 4000 8000"
repeats=3
extra=""
while getopts "c:s:n:r:x:h" opt; do
  case $opt in
    c) compilers=$OPTARG ;;
    s) schedules=$OPTARG ;;
    n) sizes=$OPTARG ;;
    r) repeats=$OPTARG ;;
    x) extra=$OPTARG ;;
    *) sed -n '2,19p' "${BASH_SOURCE[0]}"; exit 2 ;;
  esac
done

if [[ $schedules == all ]]; then
  schedules="gpipe one_f_one_b interleaved_1f1b looped_bfs interleaved_zero_bubble zbv_zero_bubble
    dualpipe_v megatron_interleaved one_f_one_b_overlap interleaved_1f1b_overlap dualpipe zb_h1
    zb_h2 one_f_one_b_v zb_1p zb_2p zb_auto zb_v v_half v_min"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ppsched-compile-time.XXXXXX")
trap 'rm -rf "$work"' EXIT
headers='#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules.hpp>'

# A helper that picks the configuration of each (schedule, size) and counts its actions.
cat >"$work/sizes.cpp" <<EOF
$headers
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <ppsched/error.hpp>
using namespace ppsched;
template <class S>
void pick(long long target, int v) {
    const config probe{.ranks = 4, .stages_per_rank = v, .microbatches = 16};
    const double k = static_cast<double>(generate<S>(probe).action_count()) / (4.0 * v * 16);
    int p = static_cast<int>(std::lround(std::sqrt(static_cast<double>(target) / (4 * k * v))));
    if (p < 2) p = 2;
    for (int q = p; q < p + 2; ++q) { // some schedules need an even number of ranks
        const config cfg{.ranks = q, .stages_per_rank = v, .microbatches = 4 * q};
        try {
            std::printf("%d %d %d %zu\n", q, v, 4 * q, generate<S>(cfg).action_count());
            return;
        } catch (const config_error&) {
        }
    }
    std::exit(1);
}
int main(int, char** argv) {
    const std::string_view s = argv[1];
    const long long n = std::atoll(argv[2]);
#define PPSCHED_PICK(name, v) if (s == #name) return pick<name>(n, v), 0;
    PPSCHED_PICK(gpipe, 1) PPSCHED_PICK(one_f_one_b, 1) PPSCHED_PICK(interleaved_1f1b, 2)
    PPSCHED_PICK(looped_bfs, 2) PPSCHED_PICK(interleaved_zero_bubble, 2)
    PPSCHED_PICK(zbv_zero_bubble, 2) PPSCHED_PICK(dualpipe_v, 2)
    PPSCHED_PICK(megatron_interleaved, 2) PPSCHED_PICK(one_f_one_b_overlap, 1)
    PPSCHED_PICK(interleaved_1f1b_overlap, 2) PPSCHED_PICK(dualpipe, 2) PPSCHED_PICK(zb_h1, 1)
    PPSCHED_PICK(zb_h2, 1) PPSCHED_PICK(one_f_one_b_v, 2) PPSCHED_PICK(zb_1p, 1)
    PPSCHED_PICK(zb_2p, 1) PPSCHED_PICK(zb_auto, 1) PPSCHED_PICK(zb_v, 2) PPSCHED_PICK(v_half, 2)
    PPSCHED_PICK(v_min, 2)
    std::fprintf(stderr, "unknown schedule %s\n", argv[1]);
    return 1;
}
EOF
if ! g++ -std=c++20 -O1 -I"$root/include" "$work/sizes.cpp" -o "$work/sizes" 2>"$work/sizes.log"; then
  cat "$work/sizes.log"
  exit 1
fi

# Best wall time (seconds) of compiling $2 with compiler $1; "limit" when constant evaluation
# hit the compiler's limit, "error" otherwise.
best_time() {
  local cxx=$1 src=$2 best="" t i
  for ((i = 0; i < repeats; ++i)); do
    local start end
    start=$(date +%s.%N)
    # shellcheck disable=SC2086
    if ! "$cxx" -std=c++20 -I"$root/include" $extra -c "$src" -o "$work/out.o" 2>"$work/err.log"; then
      if grep -qiE 'constexpr-(ops-limit|steps|loop-limit)|step limit|exceeds limit' \
          "$work/err.log"; then
        echo limit
      else
        echo error
        sed -n '1,20p' "$work/err.log" >&2
      fi
      return
    fi
    end=$(date +%s.%N)
    t=$(echo "$end - $start" | bc)
    if [[ -z $best ]] || (($(echo "$t < $best" | bc))); then best=$t; fi
  done
  printf '%.2f' "$best"
}

status=0
printf '%s\n\n' "Compile time: static_assert(validate(generate<S>(cfg))) vs a TU that only includes the headers (best of $repeats; load average $(cut -d' ' -f1-3 /proc/loadavg))."
echo "| compiler | schedule | ranks x stages/rank x microbatches | actions | TU (s) | headers only (s) | difference (s) |"
echo "|---|---|---|---|---|---|---|"
for cxx in $compilers; do
  version=$("$cxx" --version | head -n 1)
  printf '%s\n\nint main() {}\n' "$headers" >"$work/base.cpp"
  base=$(best_time "$cxx" "$work/base.cpp")
  for s in $schedules; do
    for n in $sizes; do
      read -r p v m actions < <("$work/sizes" "$s" "$n") || { status=1; continue; }
      cat >"$work/tu.cpp" <<EOF
$headers

static_assert(ppsched::validate(ppsched::generate<ppsched::$s>(
    ppsched::config{.ranks = $p, .stages_per_rank = $v, .microbatches = $m})));

int main() {}
EOF
      t=$(best_time "$cxx" "$work/tu.cpp")
      if [[ $t == error ]]; then
        status=1
        diff=error
      elif [[ $t == limit || $base == error ]]; then
        diff=-
      else
        diff=$(printf '%.2f' "$(echo "$t - $base" | bc)")
      fi
      echo "| $version | $s | $p x $v x $m | $actions | $t | $base | $diff |"
    done
  done
done
exit $status
