// Uses ppsched from its source tree through add_subdirectory: only the umbrella header.
#include <ppsched/schedules.hpp>

namespace {
constexpr ppsched::config cfg{.ranks = 2, .stages_per_rank = 2, .microbatches = 4};
}

// The V-shaped zero-bubble schedule places stages in a V and splits every backward into I + W:
// one F, one I and one W per stage and microbatch.
static_assert(ppsched::validate(ppsched::generate<ppsched::zbv_zero_bubble>(cfg)));
static_assert(ppsched::generate<ppsched::zbv_zero_bubble>(cfg).action_count() == 3 * 4 * 4);
static_assert(ppsched::generate<ppsched::zbv_zero_bubble>(cfg).cfg().placement ==
              ppsched::stage_placement::v);

int main() {
    const auto order = ppsched::generate<ppsched::one_f_one_b>(
        ppsched::config{.ranks = 4, .stages_per_rank = 1, .microbatches = 8});
    return ppsched::validate(order) ? 0 : 1;
}
