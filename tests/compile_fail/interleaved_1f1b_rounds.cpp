// Must not compile: 7 microbatches on 2 ranks make 3 rounds, and 7 is not a multiple of 3.
// expect: interleaved_1f1b: microbatches \(
#include <ppsched/schedules.hpp>
constexpr auto o = ppsched::generate<ppsched::interleaved_1f1b>(
    ppsched::config{.ranks = 2, .stages_per_rank = 2, .microbatches = 7});
