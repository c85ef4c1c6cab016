// Must not compile: 1F1B needs at least as many microbatches as ranks.
// expect: one_f_one_b: microbatches \(
#include <ppsched/schedules.hpp>
constexpr auto o =
    ppsched::generate<ppsched::one_f_one_b>(ppsched::config{.ranks = 4, .microbatches = 2});
