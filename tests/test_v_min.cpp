// v_min: the controllable-memory V schedule with about a third of 1F1B's activations. Its orders
// are checked against the authors' own in test_conformance_zb_heuristic.cpp; here: the fast
// construction equals a direct transcription of the authors' passes over a wide sweep, the
// memory is the paper's, the orders plan at compile time and run everywhere.

#include <ppsched/schedules/v_min.hpp>

#include <catch2/catch.hpp>

#include "support/v_schedule_checks.hpp"

namespace {

struct traits {
    using schedule = ppsched::v_min;
    static constexpr auto kind = ppsched::detail::v_greedy_kind::min;
    static constexpr bool reference_half = false;
    static constexpr int stated_peak(int p) { return (p + 4) / 3; }
};

} // namespace

TEST_CASE("v_min plans valid orders at compile time", "[v_min]") {
    STATIC_REQUIRE(ppsched_test::v_plans_at_compile_time<traits>());
}

TEST_CASE("v_min's fast construction equals the direct transcription of the authors' passes",
          "[v_min]") {
    ppsched_test::check_v_matches_reference<traits>();
}

TEST_CASE("v_min holds (ranks + 4) / 3 full-rank activations, fewer with fewer microbatches",
          "[v_min]") {
    ppsched_test::check_v_peak_memory<traits>();
}

TEST_CASE("v_min's orders validate, lower and simulate under any costs", "[v_min]") {
    ppsched_test::check_v_runs_everywhere<traits>();
}

TEST_CASE("v_min generates many microbatches in near-linear time", "[v_min]") {
    ppsched_test::check_v_many_microbatches<traits>();
}

TEST_CASE("v_min needs the V placement's two stages per rank", "[v_min]") {
    CHECK_THROWS_WITH(ppsched::generate<ppsched::v_min>(
                          ppsched::config{.ranks = 4, .stages_per_rank = 1, .microbatches = 8}),
                      Catch::Matchers::Contains("v_min: stages_per_rank (1) must be 2"));
}
