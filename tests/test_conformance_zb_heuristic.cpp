// The zero-bubble authors' heuristic schedules against the orders recorded from their own
// schedulers (../shared/conformance/zb): ZB-1P, ZB-2P (zb.py's greedy under a limit of p and 2p
// activations), ZB-V (zbv.py's V greedy, limit 2p chunk activations), V-Half and V-Min
// (zbv_greedy.py), through the registry by the case files' names, planned with the case's
// costs. The README accepts a different order when, with the same costs, its makespan is no
// larger and its peak memory stays within the limit; ppsched reproduces the authors' orders
// exactly (rows compared after dropping idle cells), which is checked, and so is that
// criterion. Each order replayed by ppsched::simulate with the case's costs gives the case's
// makespan, longest rank span and peak memory, and validates, lowers and simulates.

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

bool heuristic(const std::string& schedule) {
    return schedule == "ZB-1P" || schedule == "ZB-2P" || schedule == "ZB-V" ||
           schedule == "V-Half" || schedule == "V-Min";
}

} // namespace

TEST_CASE("the zero-bubble authors' heuristic schedules match their orders, times and memory",
          "[conformance][zb]") {
    std::map<std::string, int> exact, acceptable;
    const auto& reg = ppsched::builtin_schedules();
    for (const auto& c : ppsched_test::read_conformance_cases(dir + "/cases.json")) {
        const std::string name = c.get("schedule");
        if (!heuristic(name)) continue;
        const config cfg = config_of(c);
        INFO(name << " ranks " << cfg.ranks << " microbatches " << cfg.microbatches << " "
                  << c.get("compute"));
        REQUIRE(c.get("status") == "ok");
        const double f = number(c, "costs.F"), i = number(c, "costs.I"), w = number(c, "costs.W"),
                     comm = number(c, "costs.comm");
        CHECK(number(c, "memory_model.mem_f") == 1);
        CHECK(number(c, "memory_model.mem_b") == 0);
        CHECK(number(c, "memory_model.mem_w") == -1);

        // Plan with the case's costs: one activation per stage (a chunk for the V), the unit
        // of the case's memory_limit.
        ppsched::schedule_params params;
        if (name == "ZB-1P" || name == "ZB-2P" || name == "ZB-V") {
            ppsched::cost_model planning = ppsched::cost_model::uniform_fiw(f, i, w);
            planning.p2p_latency = comm;
            params.costs = planning;
        }
        double limit = 0; // in activations of a full rank, as the case measures memory
        if (name == "ZB-1P" || name == "ZB-2P") {
            CHECK(number(c, "memory_limit") == (name == "ZB-1P" ? 1 : 2) * cfg.ranks);
            limit = number(c, "memory_limit");
        } else if (name == "ZB-V") {
            params.memory_limit = number(c, "memory_limit"); // chunk activations (2p)
            limit = number(c, "memory_limit") / cfg.stages_per_rank;
        } else {
            CHECK(c.get("memory_limit") == "null");
            limit = name == "V-Half" ? (cfg.ranks + 2) / 2 : (cfg.ranks + 4) / 3;
        }
        ppsched::order got = reg.generate(name, cfg, params);

        // Measured as the authors do: an as-soon-as-possible replay (B = I + W), memory
        // F +1, I 0, W -1 per stage, in activations of a full rank.
        const auto costs = ppsched_test::zb_costs(f, i, w, comm, cfg.stages_per_rank);
        const auto sim = ppsched::simulate(got, costs);
        REQUIRE(sim);
        CHECK(ppsched_test::runs_everywhere(got, costs).empty());
        const bool within = sim.makespan <= number(c, "makespan") + 1e-9 &&
                            ppsched_test::peak_activations(sim) <= limit + 1e-9;
        CHECK(within);
        if (within) ++acceptable[name];

        const std::string path = dir + "/" + c.get("compute");
        auto want = ppsched::io::read_csv(ppsched::io::read_file(path), path);
        got.drop_idle();
        want.drop_idle();
        const bool same = ppsched::io::write_csv(got) == ppsched::io::write_csv(want);
        CHECK(same);
        if (!same) continue;
        ++exact[name];
        CHECK(ppsched_test::near(sim.makespan, number(c, "makespan")));
        CHECK(ppsched_test::near(ppsched_test::longest_rank_span(sim),
                                 number(c, "longest_rank_span")));
        CHECK(ppsched_test::near(ppsched_test::peak_activations(sim),
                                 number(c, "peak_memory_per_rank_measured")));
    }
    for (const char* name : {"ZB-1P", "ZB-2P", "ZB-V", "V-Half", "V-Min"}) {
        INFO(name);
        CHECK(exact[name] == 18);
        CHECK(acceptable[name] == 18);
    }
}

TEST_CASE("the authors' names of the heuristic schedules find ppsched's, ignoring case",
          "[conformance][zb]") {
    const auto& reg = ppsched::builtin_schedules();
    CHECK(reg.find("zb-1p") == reg.find("zb_1p"));
    CHECK(reg.find("ZB-2P") == reg.find("ZB_2P"));
    CHECK(reg.find("zb")->name == "zb_auto");
    CHECK(reg.find("zb-v")->name == "zb_v");
    CHECK(reg.find("ZB-V") != reg.find("ZB-V-Hand"));
    CHECK(reg.find("v-half")->name == "v_half");
    CHECK(reg.find("V-MIN")->name == "v_min");
    CHECK(reg.at("ZB-V").placement == ppsched::stage_placement::v);
    CHECK(reg.at("V-Half").default_stages_per_rank == 2);
    CHECK(reg.at("ZB-1P").default_stages_per_rank == 1);
}

TEST_CASE("the registry plans the cost-aware schedules with the given costs and limit",
          "[conformance][zb]") {
    const auto& reg = ppsched::builtin_schedules();
    const config cfg{.ranks = 4, .microbatches = 8};
    ppsched::cost_model skewed = ppsched::cost_model::uniform_fiw(1, 1.25, 0.75);
    CHECK(
        reg.generate("ZB-2P", cfg, {.costs = skewed}) ==
        ppsched::generate(ppsched::zb_2p{{.backward_input = 1.25, .backward_weight = 0.75}}, cfg));
    CHECK(reg.generate("ZB", cfg, {.costs = skewed, .memory_limit = 6}) ==
          ppsched::generate(ppsched::zb_auto{{.backward_input = 1.25, .backward_weight = 0.75}, 6},
                            cfg));
    CHECK(reg.generate("ZB", cfg) == ppsched::generate(ppsched::zb_auto{}, cfg));
    const config v{.ranks = 4, .stages_per_rank = 2, .microbatches = 8};
    CHECK(reg.generate("ZB-V", v, {.memory_limit = 10}) ==
          ppsched::generate(ppsched::zb_v{{}, 10}, v));
    // Per-stage costs of the model are planned with.
    skewed.per_stage.resize(4);
    skewed.per_stage[0].forward = 3;
    CHECK(reg.generate("ZB-1P", cfg, {.costs = skewed}) !=
          reg.generate("ZB-1P", cfg, {.costs = ppsched::cost_model::uniform_fiw(1, 1.25, 0.75)}));
    using Catch::Matchers::Contains;
    CHECK_THROWS_WITH(reg.generate("ZB-1P", cfg, {.memory_limit = 4}),
                      Contains("zb_1p: unknown parameter 'memory_limit' (it takes costs)"));
    CHECK_THROWS_WITH(reg.generate("V-Min", v, {.costs = skewed}),
                      Contains("v_min: unknown parameter 'costs' (it takes none)"));
    CHECK_THROWS_WITH(reg.check("ZB-V", v, {.memory_limit = 6}), Contains("zb_v: memory_limit (6"));
    CHECK_THROWS_WITH(reg.check("zb", cfg, {.memory_limit = 0.5}),
                      Contains("zb_auto: memory_limit (0.5"));
}
