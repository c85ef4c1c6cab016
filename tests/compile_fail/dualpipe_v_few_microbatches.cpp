// Must not compile: DualPipeV needs at least 2 * ranks microbatches.
// expect: dualpipe_v: microbatches \(
#include <ppsched/schedules.hpp>
constexpr auto o = ppsched::generate<ppsched::dualpipe_v>(
    ppsched::config{.ranks = 4, .stages_per_rank = 2, .microbatches = 7});
