// zb_v: the zero-bubble authors' automatic ZB-V under a memory limit and a cost model. The
// orders are checked against the authors' own in test_conformance_zb_heuristic.cpp; here: it
// plans at compile time, depends on the costs, has the papers' zero bubble and 1F1B memory,
// keeps its limit, runs everywhere, and rejects what the authors' planner cannot serve.

#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/zb_v.hpp>

#include <catch2/catch.hpp>

#include <vector>

#include "support/zb_checks.hpp"
#include "support/zb_measures.hpp"

using ppsched::config;
using ppsched::zb_costs;

namespace {

constexpr config v_cfg(int p, int m) {
    return config{.ranks = p, .stages_per_rank = 2, .microbatches = m};
}

constexpr zb_costs skewed{.forward = 1, .backward_input = 1.25, .backward_weight = 0.75};

// Uniform cost sets (the planner times every chunk alike): the conformance data's two, F != 1,
// I-heavy, W-heavy, and with messages.
const std::vector<zb_costs> cost_sets{
    {},
    skewed,
    {.forward = 2, .backward_input = 1, .backward_weight = 1},
    {.forward = 1, .backward_input = 2, .backward_weight = 0.5},
    {.forward = 1, .backward_input = 0.5, .backward_weight = 2},
    {.forward = 1, .backward_input = 1, .backward_weight = 1, .comm = 0.5},
    {.forward = 0.5, .backward_input = 1.5, .backward_weight = 1, .comm = 1.5},
};

// The simulator's model of `c`, per chunk (activation in chunk units).
ppsched::cost_model chunk_model(const zb_costs& c) {
    ppsched::cost_model m =
        ppsched::cost_model::uniform_fiw(c.forward, c.backward_input, c.backward_weight);
    m.p2p_latency = c.comm;
    m.uniform.activation = c.activation;
    m.input_grad_frees = c.input_grad_frees;
    return m;
}

} // namespace

TEST_CASE("zb_v plans valid orders at compile time", "[zb_v]") {
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::zb_v>(v_cfg(4, 8))));
    STATIC_REQUIRE(
        ppsched::validate(ppsched::generate<ppsched::zb_v{.costs = skewed}>(v_cfg(3, 7))));
    STATIC_REQUIRE(ppsched::validate(
        ppsched::generate<ppsched::zb_v{.costs = {.comm = 0.5}, .memory_limit = 9}>(v_cfg(4, 5))));
    STATIC_REQUIRE(ppsched::generate<ppsched::zb_v>(v_cfg(1, 1)).action_count() == 6);
}

TEST_CASE("zb_v's order depends on the costs it plans with", "[zb_v]") {
    // Every ZB-V case of the conformance data differs between its uniform and skewed costs.
    for (int p : {2, 4, 8})
        for (int m : {2 * p, 4 * p}) {
            INFO("p=" << p << " m=" << m);
            CHECK(ppsched::generate(ppsched::zb_v{}, v_cfg(p, m)) !=
                  ppsched::generate(ppsched::zb_v{skewed}, v_cfg(p, m)));
        }
}

TEST_CASE("zb_v has no bubble inside any rank's span when F = I = W and microbatches >= 2 * "
          "ranks",
          "[zb_v]") {
    for (double unit : {1.0, 2.5})
        for (int p = 1; p <= 9; ++p)
            for (int m = 2 * p; m <= 4 * p + 2; ++m) {
                INFO("p=" << p << " m=" << m << " F=I=W=" << unit);
                const zb_costs c{.forward = unit, .backward_input = unit, .backward_weight = unit};
                const auto sim = ppsched::simulate(ppsched::generate(ppsched::zb_v{c}, v_cfg(p, m)),
                                                   ppsched_test::zb_costs(unit, unit, unit, 0, 2));
                REQUIRE(sim);
                for (double b : ppsched_test::rank_span_bubbles(sim)) CHECK(b == Approx(0));
                CHECK(ppsched_test::longest_rank_span(sim) == Approx(2 * m * 3 * unit));
            }
}

TEST_CASE("zb_v holds the activations of 1F1B: ranks full-rank activations (fewer with fewer "
          "microbatches)",
          "[zb_v]") {
    for (const zb_costs& c : cost_sets)
        for (int p = 1; p <= 8; ++p)
            for (int m = 1; m <= 3 * p + 2; ++m) {
                INFO("p=" << p << " m=" << m << " F=" << c.forward << " I=" << c.backward_input
                          << " W=" << c.backward_weight << " comm=" << c.comm);
                // Full-rank units: a chunk's activation is half a rank's.
                const auto sim =
                    ppsched::simulate(ppsched::generate(ppsched::zb_v{c}, v_cfg(p, m)),
                                      ppsched_test::zb_costs(c.forward, c.backward_input,
                                                             c.backward_weight, c.comm, 2));
                REQUIRE(sim);
                CHECK(ppsched_test::peak_activations(sim) == Approx(m < p ? m : p));
            }
}

TEST_CASE("zb_v keeps a larger memory limit and runs everywhere", "[zb_v]") {
    int checked = 0;
    for (const zb_costs& c : cost_sets)
        for (int p = 1; p <= 7; ++p)
            for (int m = 1; m <= 3 * p + 2; ++m)
                for (double limit : {2.0 * p, 2.0 * p + 1, 3.0 * p, 4.0 * p}) {
                    INFO("p=" << p << " m=" << m << " limit=" << limit << " F=" << c.forward
                              << " I=" << c.backward_input << " W=" << c.backward_weight
                              << " comm=" << c.comm);
                    const ppsched::order o =
                        ppsched::generate(ppsched::zb_v{c, limit}, v_cfg(p, m));
                    const ppsched::cost_model model = chunk_model(c);
                    CHECK(ppsched_test::runs_everywhere(o, model).empty());
                    CHECK(ppsched_test::peak_activations(ppsched::simulate(o, model)) <= limit);
                    ++checked;
                }
    CHECK(checked > 2000);
}

TEST_CASE("zb_v keeps the limit when I frees part of the activation", "[zb_v]") {
    for (double frees : {0.25, 0.5, 1.0})
        for (int p = 1; p <= 6; ++p)
            for (int m = 1; m <= 3 * p; ++m)
                for (double limit : {2.0 * p, 3.0 * p}) {
                    INFO("p=" << p << " m=" << m << " limit=" << limit << " frees=" << frees);
                    const zb_costs c{
                        .backward_input = 1.25, .backward_weight = 0.75, .input_grad_frees = frees};
                    const ppsched::order o =
                        ppsched::generate(ppsched::zb_v{c, limit}, v_cfg(p, m));
                    const ppsched::cost_model model = chunk_model(c);
                    CHECK(ppsched_test::runs_everywhere(o, model).empty());
                    CHECK(ppsched_test::peak_activations(ppsched::simulate(o, model)) <=
                          limit + 1e-12);
                }
}

TEST_CASE("zb_v rejects what the authors' planner cannot serve, with the reason", "[zb_v]") {
    using Catch::Matchers::Contains;
    CHECK_THROWS_WITH(ppsched::generate(ppsched::zb_v{{}, 7.5}, v_cfg(4, 8)),
                      Contains("zb_v: memory_limit (7.5") && Contains("must be >= 2 * ranks (4)"));
    CHECK_THROWS_WITH(ppsched::generate(ppsched::zb_v{{.activation = 0.5}, 3}, v_cfg(4, 8)),
                      Contains("zb_v: memory_limit (3"));
    CHECK_NOTHROW(ppsched::generate(ppsched::zb_v{{.activation = 0.5}, 4}, v_cfg(4, 8)));
    CHECK_THROWS_WITH(ppsched::generate(ppsched::zb_v{{}, -1}, v_cfg(4, 8)),
                      Contains("zb_v: memory_limit (-1"));
    CHECK_THROWS_WITH(
        ppsched::generate(ppsched::zb_v{},
                          config{.ranks = 4, .stages_per_rank = 3, .microbatches = 8}),
        Contains("zb_v: stages_per_rank (3) must be 2"));
    CHECK_THROWS_WITH(ppsched::generate(ppsched::zb_v{{.comm = -0.5}}, v_cfg(2, 4)),
                      Contains("zb_v: costs.forward, backward_input, backward_weight and comm"));
    std::vector<ppsched::stage_costs> stages(8);
    stages[5].backward_weight = 2;
    CHECK_THROWS_WITH(ppsched::generate(ppsched::zb_v{{.per_stage = stages.data(),
                                                       .per_stage_count = stages.size()}},
                                        v_cfg(4, 8)),
                      Contains("zb_v: per-stage costs must be equal across stages (stage 5"));
    // Per-stage entries that agree with each other are fine.
    for (auto& s : stages) s.backward_weight = 2;
    CHECK(ppsched::generate(
              ppsched::zb_v{{.per_stage = stages.data(), .per_stage_count = stages.size()}},
              v_cfg(4, 8)) ==
          ppsched::generate(ppsched::zb_v{{.backward_weight = 2}}, v_cfg(4, 8)));
}
