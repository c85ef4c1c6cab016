// Uses the optional ppsched::format part of the installed package.
#include <ppsched/format.hpp>

int main() {
    const ppsched::config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 4};
    return fmt::format("{} {}", ppsched::action::forward(1, 3), cfg) ==
                   "1F3 ranks=2 stages_per_rank=1 microbatches=4 placement=loop"
               ? 0
               : 1;
}
