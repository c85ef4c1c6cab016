// Must not compile: 9 microbatches on 4 ranks make 2 rounds.
// expect: interleaved_zero_bubble: microbatches \(
#include <ppsched/schedules.hpp>
constexpr auto o = ppsched::generate<ppsched::interleaved_zero_bubble>(
    ppsched::config{.ranks = 4, .stages_per_rank = 2, .microbatches = 9});
