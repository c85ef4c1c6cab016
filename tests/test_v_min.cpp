// v_min: the controllable-memory V schedule with about a third of 1F1B's activations. Its orders
// are checked against the authors' own in test_conformance_zb_heuristic.cpp; here: the fast
// construction equals a direct transcription of the authors' passes over a wide sweep, the
// memory is the paper's, the orders plan at compile time and run everywhere.

#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/v_min.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <vector>

#include "support/v_greedy_reference.hpp"
#include "support/zb_checks.hpp"
#include "support/zb_measures.hpp"

using ppsched::config;

namespace {

constexpr config v_cfg(int p, int m) {
    return config{.ranks = p, .stages_per_rank = 2, .microbatches = m};
}

constexpr auto kind = ppsched::detail::v_greedy_kind::min;
constexpr bool reference_half = false;

// The memory the paper states, in activations of a full rank.
constexpr int stated_peak(int p) { return (p + 4) / 3; }

// The direct construction's plan flattened as the fast one keeps it (type * m + mb).
std::vector<std::vector<int>> flat_reference(int p, int m) {
    std::vector<std::vector<int>> out;
    for (const auto& lists : ppsched_test::v_greedy_reference(p, m, reference_half)) {
        std::vector<int> row;
        for (const auto& l : lists) row.insert(row.end(), l.begin(), l.end());
        out.push_back(row);
    }
    return out;
}

std::vector<std::vector<int>> fast(int p, int m) {
    ppsched::detail::v_greedy g(p, m, kind);
    g.build();
    return g.slots();
}

} // namespace

TEST_CASE("v_min plans valid orders at compile time", "[v_min]") {
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::v_min>(v_cfg(4, 8))));
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::v_min>(v_cfg(3, 2))));
    STATIC_REQUIRE(ppsched::generate<ppsched::v_min>(v_cfg(5, 6)).action_count() == 6 * 5 * 6);
    STATIC_REQUIRE(ppsched::validate(ppsched::generate<ppsched::v_min>(v_cfg(1, 1))));
}

TEST_CASE("v_min's fast construction equals the direct transcription of the authors' passes",
          "[v_min]") {
    int compared = 0;
    for (int p = 1; p <= 10; ++p)
        for (int m = 1; m <= 3 * p + 4; ++m) {
            INFO("p=" << p << " m=" << m);
            CHECK(fast(p, m) == flat_reference(p, m));
            ++compared;
        }
    // Longer runs, and ranks beyond the grid.
    for (const auto& [p, m] : std::vector<std::pair<int, int>>{
             {1, 60}, {2, 61}, {3, 70}, {4, 64}, {5, 40}, {12, 13}, {12, 30}, {16, 17}, {16, 40}}) {
        INFO("p=" << p << " m=" << m);
        CHECK(fast(p, m) == flat_reference(p, m));
        ++compared;
    }
    CHECK(compared == 214);
}

TEST_CASE("v_min holds (ranks + 4) / 3 full-rank activations, fewer with fewer microbatches",
          "[v_min]") {
    for (int p = 1; p <= 12; ++p)
        for (int m = 1; m <= 3 * p + 2; ++m) {
            INFO("p=" << p << " m=" << m);
            const auto sim = ppsched::simulate(ppsched::generate<ppsched::v_min>(v_cfg(p, m)),
                                               ppsched_test::zb_costs(1, 1, 1, 0, 2));
            REQUIRE(sim);
            if (m >= p)
                CHECK(ppsched_test::peak_activations(sim) == Approx(stated_peak(p)));
            else
                CHECK(ppsched_test::peak_activations(sim) <= stated_peak(p) + 1e-12);
        }
}

TEST_CASE("v_min's orders validate, lower and simulate under any costs", "[v_min]") {
    const double sets[][4] = {{1, 1, 1, 0}, {1, 1.25, 0.75, 0}, {2, 1, 0.5, 0.5}, {0.5, 2, 1, 1.5}};
    for (int p = 1; p <= 8; ++p)
        for (int m = 1; m <= 3 * p + 2; ++m) {
            const ppsched::order o = ppsched::generate<ppsched::v_min>(v_cfg(p, m));
            for (const auto& c : sets) {
                INFO("p=" << p << " m=" << m << " F=" << c[0] << " I=" << c[1] << " W=" << c[2]
                          << " comm=" << c[3]);
                CHECK(ppsched_test::runs_everywhere(
                          o, ppsched_test::zb_costs(c[0], c[1], c[2], c[3], 2))
                          .empty());
            }
        }
}

TEST_CASE("v_min generates many microbatches in near-linear time", "[v_min]") {
    // 8 ranks x 20000 microbatches: about a million actions (the authors' passes would take
    // minutes; this is the time of a linear pass).
    const ppsched::order o = ppsched::generate<ppsched::v_min>(v_cfg(8, 20000));
    CHECK(o.action_count() == 6u * 8 * 20000);
    CHECK(ppsched::validate(o));
}

TEST_CASE("v_min needs the V placement's two stages per rank", "[v_min]") {
    CHECK_THROWS_WITH(ppsched::generate<ppsched::v_min>(
                          config{.ranks = 4, .stages_per_rank = 1, .microbatches = 8}),
                      Catch::Matchers::Contains("v_min: stages_per_rank (1) must be 2"));
}
