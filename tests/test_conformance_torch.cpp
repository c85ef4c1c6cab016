// Every case of PyTorch's own schedule output (../shared/conformance/torch/cases.json):
// accepted configurations must produce PyTorch's compute order, rejected ones a config_error.

#include <ppsched/io/csv.hpp>
#include <ppsched/registry.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "support/torch_cases.hpp"

namespace {

const std::string torch_dir = std::string(PPSCHED_CONFORMANCE_DIR) + "/torch";

std::string rows_text(const ppsched::order& o) { return ppsched::io::write_csv(o); }

// PyTorch's GPipe and 1F1B orders are compared without idle slots (see the README).
bool compact_comparison(const std::string& schedule) {
    return schedule == "GPipe" || schedule == "1F1B";
}

} // namespace

TEST_CASE("every accepted PyTorch configuration generates PyTorch's compute order",
          "[conformance][torch]") {
    const auto cases = ppsched_test::read_torch_cases(torch_dir + "/cases.json");
    std::map<std::string, int> matched, total;
    for (const auto& c : cases) {
        if (c.status != "ok") continue;
        INFO(c.schedule << " ranks=" << c.ranks << " microbatches=" << c.microbatches
                        << " stages_per_rank=" << c.stages_per_rank);
        const ppsched::config cfg{
            .ranks = c.ranks, .stages_per_rank = c.stages_per_rank, .microbatches = c.microbatches};
        auto expected = ppsched::io::read_csv(ppsched::io::read_file(torch_dir + "/" + c.compute),
                                              torch_dir + "/" + c.compute);
        ppsched::order got = ppsched::builtin_schedules().generate(c.schedule, cfg);
        const ppsched::order exact = got;
        if (compact_comparison(c.schedule)) {
            expected.drop_idle();
            got.drop_idle();
        } else {
            expected.trim_trailing_idle();
            got.trim_trailing_idle();
        }
        ++total[c.schedule];
        CHECK(rows_text(got) == rows_text(expected));
        if (rows_text(got) == rows_text(expected)) ++matched[c.schedule];
        // Stronger than the rules ask: multi-stage rows match with their trailing idle slots.
        if (!compact_comparison(c.schedule)) {
            const auto raw =
                ppsched::io::read_csv(ppsched::io::read_file(torch_dir + "/" + c.compute));
            CHECK(rows_text(exact) == rows_text(raw));
        }
    }
    for (const auto& [name, n] : total) {
        INFO(name);
        CHECK(matched[name] == n);
    }
    // The grid: 20 GPipe, 14 1F1B, 80 each for the interleaved family, 20 ZBV, 11 DualPipeV.
    int all = 0;
    for (const auto& [name, n] : total) all += n;
    CHECK(all == 305);
}

TEST_CASE("every configuration PyTorch rejects is rejected with a config_error naming the "
          "schedule",
          "[conformance][torch]") {
    const auto cases = ppsched_test::read_torch_cases(torch_dir + "/cases.json");
    int rejected = 0;
    for (const auto& c : cases) {
        if (c.status != "rejected") continue;
        ++rejected;
        INFO(c.schedule << " ranks=" << c.ranks << " microbatches=" << c.microbatches
                        << " stages_per_rank=" << c.stages_per_rank << ": " << c.message);
        const ppsched::config cfg{
            .ranks = c.ranks, .stages_per_rank = c.stages_per_rank, .microbatches = c.microbatches};
        const auto& entry = ppsched::builtin_schedules().at(c.schedule);
        CHECK_THROWS_AS(ppsched::builtin_schedules().check(c.schedule, cfg), ppsched::config_error);
        CHECK_THROWS_WITH(ppsched::builtin_schedules().generate(c.schedule, cfg),
                          Catch::Matchers::StartsWith(entry.name + ": "));
    }
    CHECK(rejected == 136);
}
