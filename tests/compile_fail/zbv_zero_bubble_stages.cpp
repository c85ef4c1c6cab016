// Must not compile: ZB-V needs exactly two stages per rank.
// expect: zbv_zero_bubble: stages_per_rank \(
#include <ppsched/schedules.hpp>
constexpr auto o = ppsched::generate<ppsched::zbv_zero_bubble>(
    ppsched::config{.ranks = 4, .stages_per_rank = 3, .microbatches = 8});
