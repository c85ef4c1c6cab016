// Every case of DeepSeek's own DualPipe and DualPipeV (../shared/conformance/dualpipe, recorded
// from DualPipe.step() / DualPipeV.step()): accepted configurations generate DeepSeek's order
// cell for cell (the files have no idle cells), rejected ones are rejected. A file read without
// a configuration is recognised as what it is: the dual placement for DualPipe, the V for
// DualPipeV.

#include <ppsched/algorithms/validate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/registry.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "support/conformance_cases.hpp"
#include "support/order_literal.hpp"

namespace {
const std::string dualpipe_dir = std::string(PPSCHED_CONFORMANCE_DIR) + "/dualpipe";
} // namespace

TEST_CASE("dualpipe and dualpipe_v equal DeepSeek's DualPipe and DualPipeV on every case",
          "[conformance][dualpipe][dualpipe_v]") {
    std::map<std::string, int> compared, rejected;
    for (const auto& c : ppsched_test::read_conformance_cases(dualpipe_dir + "/cases.json")) {
        const std::string name = c.get("schedule");
        const ppsched::config cfg{.ranks = c.integer("ranks"),
                                  .stages_per_rank = c.integer("stages_per_rank"),
                                  .microbatches = c.integer("microbatches")};
        INFO(name << " ranks=" << cfg.ranks << " microbatches=" << cfg.microbatches << " "
                  << c.get("message"));
        const auto& entry = ppsched::builtin_schedules().at(name);
        if (c.get("status") == "rejected") {
            CHECK_THROWS_WITH(ppsched::builtin_schedules().generate(name, cfg),
                              Catch::StartsWith(entry.name + ": microbatches"));
            ++rejected[name];
            continue;
        }
        const std::string path = dualpipe_dir + "/" + c.get("compute");
        const auto expected = ppsched::io::read_csv(ppsched::io::read_file(path), path);
        const auto got = ppsched::builtin_schedules().generate(name, cfg);
        // Cell for cell, idle cells included (neither has any).
        const auto want = ppsched_test::csv_rows(expected), have = ppsched_test::csv_rows(got);
        REQUIRE(have.size() == want.size());
        for (std::size_t r = 0; r < want.size(); ++r) {
            INFO("rank " << r);
            CHECK(have[r] == want[r]);
        }
        // The file alone says which placement it is on, and is valid under it.
        CHECK(expected.cfg() == got.cfg());
        CHECK(expected.cfg().placement == entry.placement);
        const auto report = ppsched::validate(expected);
        if (!report) FAIL_CHECK(ppsched::to_string(report));
        ++compared[name];
    }
    CHECK(compared["DualPipe"] == 6);
    CHECK(rejected["DualPipe"] == 2);
    CHECK(compared["DualPipeV"] == 12);
    CHECK(rejected["DualPipeV"] == 1);
}

TEST_CASE("the registry knows DualPipe by DeepSeek's name, on the dual placement",
          "[conformance][dualpipe][registry]") {
    const auto& e = ppsched::builtin_schedules().at("dualpipe");
    CHECK(e.pytorch_name == "DualPipe");
    CHECK(e.placement == ppsched::stage_placement::dual);
    CHECK(e.default_stages_per_rank == 2);
    CHECK(ppsched::builtin_schedules().find("DUALPIPE") == &e);
    CHECK(ppsched::builtin_schedules().find("DualPipeV") != &e);
}
