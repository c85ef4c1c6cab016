// Uses ppsched through find_package(ppsched CONFIG): only the umbrella header, checked at compile
// time and once more at run time.
#include <ppsched/schedules.hpp>

namespace {
constexpr ppsched::config cfg{.ranks = 4, .stages_per_rank = 2, .microbatches = 8};
}

// PyTorch's Interleaved1F1B for 4 ranks x 2 stages x 8 microbatches is valid, and runs one
// forward and one full backward per stage and microbatch.
static_assert(ppsched::validate(ppsched::generate<ppsched::interleaved_1f1b>(cfg)));
static_assert(ppsched::generate<ppsched::interleaved_1f1b>(cfg).action_count() == 2 * 4 * 2 * 8);
static_assert(ppsched::schedule<ppsched::interleaved_1f1b>);

int main() {
    const auto order = ppsched::generate<ppsched::gpipe>(
        ppsched::config{.ranks = 3, .stages_per_rank = 1, .microbatches = 5});
    return ppsched::validate(order) && order.action_count() == 2 * 3 * 5 ? 0 : 1;
}
