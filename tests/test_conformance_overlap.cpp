// Every case of the PP schedule visualizer's overlapped 1F1B strategies
// (../shared/conformance/overlap): the orders must be the visualizer's (rows compared after
// dropping idle cells), and with the case's costs (F = 1, B = 2, an overlapped pair 3, free
// messages) every rank idles (p - 1)(F + B).

#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/registry.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "support/conformance_cases.hpp"

namespace {

const std::string overlap_dir = std::string(PPSCHED_CONFORMANCE_DIR) + "/overlap";

std::string compact_text(ppsched::order o) {
    o.drop_idle();
    return ppsched::io::write_csv(o);
}

} // namespace

TEST_CASE("every overlapped 1F1B configuration of the visualizer generates its order",
          "[conformance][overlap]") {
    const auto cases = ppsched_test::read_conformance_cases(overlap_dir + "/cases.json");
    std::map<std::string, int> matched, total;
    int rejected = 0;
    for (const auto& c : cases) {
        const ppsched::config cfg{.ranks = c.integer("ranks"),
                                  .stages_per_rank = c.integer("stages_per_rank"),
                                  .microbatches = c.integer("microbatches")};
        const std::string name = c.get("schedule");
        INFO(name << " ranks=" << cfg.ranks << " stages_per_rank=" << cfg.stages_per_rank
                  << " microbatches=" << cfg.microbatches);
        if (c.get("status") == "rejected") {
            CHECK_THROWS_AS(ppsched::builtin_schedules().generate(name, cfg),
                            ppsched::config_error);
            ++rejected;
            continue;
        }
        const std::string path = overlap_dir + "/" + c.get("compute");
        const auto expected = ppsched::io::read_csv(ppsched::io::read_file(path), path);
        const auto got = ppsched::builtin_schedules().generate(name, cfg);
        ++total[name];
        CHECK(compact_text(got) == compact_text(expected));
        if (compact_text(got) == compact_text(expected)) ++matched[name];

        // The case's costs: each rank waits (p - 1)(F + B) for the pipeline to fill and drain.
        ppsched::cost_model costs = ppsched::cost_model::uniform_fb(std::stod(c.get("costs.F")),
                                                                    std::stod(c.get("costs.B")));
        costs.uniform.overlap_f_b = std::stod(c.get("costs.OVERLAP_F_B"));
        costs.p2p_latency = std::stod(c.get("costs.p2p"));
        const auto sim = ppsched::simulate(got, costs);
        REQUIRE(sim);
        for (const auto& rank : sim.ranks)
            CHECK(rank.idle ==
                  (cfg.ranks - 1) * (std::stod(c.get("costs.F")) + std::stod(c.get("costs.B"))));
    }
    CHECK(total["1f1b_overlap"] == 4);
    CHECK(total["1f1b_interleave_overlap"] == 4);
    CHECK(matched == total);
    CHECK(rejected == 0);
}

TEST_CASE("the overlapped schedules are found by every name they are known by",
          "[conformance][overlap][registry]") {
    const auto& reg = ppsched::builtin_schedules();
    for (const char* name : {"1f1b_overlap", "1F1BOverlap", "ONE_F_ONE_B_OVERLAP"}) {
        INFO(name);
        REQUIRE(reg.find(name) != nullptr);
        CHECK(reg.find(name)->name == "one_f_one_b_overlap");
    }
    for (const char* name :
         {"1f1b_interleave_overlap", "InterleavedOverlap", "interleaved_1f1b_overlap"}) {
        INFO(name);
        REQUIRE(reg.find(name) != nullptr);
        CHECK(reg.find(name)->name == "interleaved_1f1b_overlap");
    }
}
