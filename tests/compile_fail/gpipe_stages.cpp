// Must not compile: GPipe is a single-stage schedule.
// expect: gpipe: stages_per_rank \(
#include <ppsched/schedules.hpp>
constexpr auto o = ppsched::generate<ppsched::gpipe>(
    ppsched::config{.ranks = 4, .stages_per_rank = 2, .microbatches = 8});
