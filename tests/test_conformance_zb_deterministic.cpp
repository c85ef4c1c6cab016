// The zero-bubble authors' deterministic schedules against the orders recorded from their own
// schedulers (../shared/conformance/zb; rows compared after dropping idle cells, as its README
// says): 1F1B (fused backwards), ZB-H1, ZB-H2, ZB-V-Hand and 1F1B-V, by the names of the case
// files, through the registry. Each accepted case must give the exact order and, replayed by
// ppsched::simulate with the case's costs, the case's makespan, longest rank span and peak
// memory; each rejected case must be rejected. The heuristic schedules (ZB-1P, ZB-2P, ZB-V,
// V-Half, V-Min) are checked elsewhere.

#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/registry.hpp>

#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "support/conformance_cases.hpp"
#include "support/zb_cases.hpp"
#include "support/zb_checks.hpp"
#include "support/zb_measures.hpp"

using ppsched::config;

using ppsched_test::config_of;
using ppsched_test::number;

namespace {

const std::string& dir = ppsched_test::zb_dir;

bool deterministic(const std::string& schedule) {
    return schedule == "1F1B" || schedule == "ZB-H1" || schedule == "ZB-H2" ||
           schedule == "ZB-V-Hand" || schedule == "1F1B-V";
}

} // namespace

TEST_CASE("the zero-bubble authors' deterministic schedules match their orders, times and "
          "memory",
          "[conformance][zb]") {
    std::map<std::string, int> exact, rejected;
    for (const auto& c : ppsched_test::read_conformance_cases(dir + "/cases.json")) {
        const std::string name = c.get("schedule");
        if (!deterministic(name)) continue;
        const config cfg = config_of(c);
        INFO(name << " ranks " << cfg.ranks << " microbatches " << cfg.microbatches << " "
                  << c.get("compute"));
        const auto& reg = ppsched::builtin_schedules();
        if (c.get("status") == "rejected") {
            // The authors assert m >= 2p ("assert _n >= 2 * _p"); ppsched says so in words.
            CHECK_THROWS_WITH(reg.generate(name, cfg),
                              Catch::Matchers::Contains("must be >= 2 * ranks"));
            ++rejected[name];
            continue;
        }
        ppsched::order got = reg.generate(name, cfg);
        const std::string path = dir + "/" + c.get("compute");
        auto want = ppsched::io::read_csv(ppsched::io::read_file(path), path);
        got.drop_idle();
        want.drop_idle();
        CHECK(ppsched::io::write_csv(got) == ppsched::io::write_csv(want));

        // The authors' measures: an as-soon-as-possible replay with the case's costs (B = I +
        // W), memory F +1, I 0, W or B -1 per stage, in activations of a full rank.
        const auto costs =
            ppsched_test::zb_costs(number(c, "costs.F"), number(c, "costs.I"), number(c, "costs.W"),
                                   number(c, "costs.comm"), cfg.stages_per_rank);
        CHECK(number(c, "memory_model.mem_f") == 1);
        CHECK(number(c, "memory_model.mem_b") == 0);
        CHECK(number(c, "memory_model.mem_w") == -1);
        const auto sim = ppsched::simulate(got, costs);
        REQUIRE(sim);
        CHECK(ppsched_test::near(sim.makespan, number(c, "makespan")));
        CHECK(ppsched_test::near(ppsched_test::longest_rank_span(sim),
                                 number(c, "longest_rank_span")));
        CHECK(ppsched_test::near(ppsched_test::peak_activations(sim),
                                 number(c, "peak_memory_per_rank_measured")));
        CHECK(ppsched_test::runs_everywhere(got, costs).empty());
        ++exact[name];
    }
    CHECK(exact["1F1B"] == 18);
    CHECK(exact["ZB-H1"] == 12);
    CHECK(exact["ZB-H2"] == 12);
    CHECK(exact["ZB-V-Hand"] == 18);
    CHECK(exact["1F1B-V"] == 18);
    CHECK(rejected["ZB-H1"] == 6);
    CHECK(rejected["ZB-H2"] == 6);
}

TEST_CASE("the authors' names find ppsched's schedules, ignoring case", "[conformance][zb]") {
    const auto& reg = ppsched::builtin_schedules();
    // Their 1F1B (fused backwards, warm-up of ranks - 1 - r forwards, then F before B) is the
    // same order as PyTorch's, and their handcrafted ZB-V is PyTorch's ZBVZeroBubble.
    CHECK(reg.find("1F1B") == reg.find("one_f_one_b"));
    CHECK(reg.find("ZB-V-Hand") == reg.find("zbv_zero_bubble"));
    CHECK(reg.find("zb-v-hand") == reg.find("ZBVZeroBubble"));
    CHECK(reg.find("zb-h1") == reg.find("zb_h1"));
    CHECK(reg.find("ZB-H2")->name == "zb_h2");
    CHECK(reg.find("1f1b-v")->name == "one_f_one_b_v");
    CHECK(reg.at("ZB-H1").constraints == "stages_per_rank == 1; microbatches >= 2 * ranks");
    CHECK(reg.at("1F1B-V").placement == ppsched::stage_placement::v);
    CHECK(reg.at("1F1B-V").default_stages_per_rank == 2);
}

TEST_CASE("1F1B's span bubble is (ranks - 1 - r)(F + I + W) with a fused backward",
          "[zb][timing]") {
    struct costs {
        double f, i, w;
    };
    int checked = 0;
    for (const costs c : {costs{1, 1, 1}, costs{1, 1.25, 0.75}, costs{2, 1, 1}, costs{1, 2, 0.5},
                          costs{1, 0.5, 2}}) {
        for (int p = 1; p <= 8; ++p) {
            for (int m : {p, p + 1, 2 * p, 4 * p + 3}) {
                INFO("p " << p << " m " << m << " F " << c.f << " I " << c.i << " W " << c.w);
                const auto o = ppsched::builtin_schedules().generate(
                    "1F1B", config{.ranks = p, .microbatches = m});
                const auto cm = ppsched_test::zb_costs(c.f, c.i, c.w, 0, 1);
                const auto sim = ppsched::simulate(o, cm);
                REQUIRE(sim);
                const auto bubble = ppsched_test::rank_span_bubbles(sim);
                for (int r = 0; r < p; ++r)
                    CHECK(ppsched_test::near(bubble[static_cast<std::size_t>(r)],
                                             (p - 1 - r) * (c.f + c.i + c.w)));
                CHECK(ppsched_test::near(ppsched_test::peak_activations(sim), p));
                ++checked;
            }
        }
    }
    CHECK(checked == 5 * 8 * 4);
}

TEST_CASE("ZB-V-Hand has no span bubble when F = I = W and microbatches >= 2 * ranks, and "
          "holds ranks activations",
          "[zb][timing]") {
    int checked = 0;
    for (int p = 1; p <= 9; ++p) {
        for (int m : {1, p, 2 * p, 2 * p + 1, 3 * p + 2, 4 * p + 2}) {
            INFO("p " << p << " m " << m);
            const auto o = ppsched::builtin_schedules().generate(
                "ZB-V-Hand", config{.ranks = p, .stages_per_rank = 2, .microbatches = m});
            for (double unit : {1.0, 0.5, 2.0}) {
                const auto cm = ppsched_test::zb_costs(unit, unit, unit, 0, 2);
                const auto sim = ppsched::simulate(o, cm);
                REQUIRE(sim);
                if (m >= 2 * p) {
                    for (double b : ppsched_test::rank_span_bubbles(sim))
                        CHECK(ppsched_test::near(b, 0));
                    CHECK(
                        ppsched_test::near(ppsched_test::longest_rank_span(sim), 2 * m * 3 * unit));
                }
                CHECK(ppsched_test::near(ppsched_test::peak_activations(sim), m < p ? m : p));
            }
            CHECK(ppsched_test::runs_everywhere(o, ppsched_test::zb_costs(1, 1.25, 0.75, 0, 2))
                      .empty());
            ++checked;
        }
    }
    CHECK(checked == 9 * 6);
}
