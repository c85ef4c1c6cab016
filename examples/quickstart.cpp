// The README's example: generate a schedule (at compile time and at run time), validate it,
// lower it, read a CSV order and print it as PyTorch's step table.
#include <ppsched/ppsched.hpp>

#include <iostream>

int main() {
    // A configuration: 4 ranks, 2 stages per rank, 8 microbatches.
    constexpr ppsched::config cfg{.ranks = 4, .stages_per_rank = 2, .microbatches = 8};

    // Generation and validation are constexpr: a broken schedule would not compile.
    static_assert(ppsched::validate(ppsched::generate<ppsched::interleaved_1f1b>(cfg)));

    // The same at run time, then PyTorch's lowering (UNSHARD/RESHARD, REDUCE_GRAD, SEND/RECV).
    const ppsched::order order = ppsched::generate<ppsched::interleaved_1f1b>(cfg);
    const ppsched::order lowered = ppsched::lower(order);
    if (const auto report = ppsched::validate(lowered); !report) {
        std::cerr << ppsched::to_string(report) << '\n';
        return 1;
    }

    // Orders read from PyTorch's CSV files (bad text throws ppsched::parse_error with
    // line and column), printed as PyTorch's step table.
    const ppsched::order parsed = ppsched::io::read_csv("0F0,0F1,,0B0,0B1\n,1F0,1B0,1F1,1B1\n");
    std::cout << ppsched::io::format_step_table(parsed);
    std::cout << order.action_count() << " compute actions, " << lowered.action_count()
              << " after lowering\n";
    return ppsched::validate(parsed) ? 0 : 1;
}
