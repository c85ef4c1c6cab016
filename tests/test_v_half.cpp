// v_half: the controllable-memory V schedule with about half of 1F1B's activations. Its orders
// are checked against the authors' own in test_conformance_zb_heuristic.cpp; here: the fast
// construction equals a direct transcription of the authors' passes over a wide sweep, the
// memory is the paper's, the orders plan at compile time and run everywhere.

#include <ppsched/schedules/v_half.hpp>

#include <catch2/catch.hpp>

#include "support/v_schedule_checks.hpp"

namespace {

struct traits {
    using schedule = ppsched::v_half;
    static constexpr auto kind = ppsched::detail::v_greedy_kind::half;
    static constexpr bool reference_half = true;
    static constexpr int stated_peak(int p) { return (p + 2) / 2; }
};

} // namespace

TEST_CASE("v_half plans valid orders at compile time", "[v_half]") {
    STATIC_REQUIRE(ppsched_test::v_plans_at_compile_time<traits>());
}

TEST_CASE("v_half's fast construction equals the direct transcription of the authors' passes",
          "[v_half]") {
    ppsched_test::check_v_matches_reference<traits>();
}

TEST_CASE("v_half holds (ranks + 2) / 2 full-rank activations, fewer with fewer microbatches",
          "[v_half]") {
    ppsched_test::check_v_peak_memory<traits>();
}

TEST_CASE("v_half's orders validate, lower and simulate under any costs", "[v_half]") {
    ppsched_test::check_v_runs_everywhere<traits>();
}

TEST_CASE("v_half generates many microbatches in near-linear time", "[v_half]") {
    ppsched_test::check_v_many_microbatches<traits>();
}

TEST_CASE("v_half needs the V placement's two stages per rank", "[v_half]") {
    CHECK_THROWS_WITH(ppsched::generate<ppsched::v_half>(
                          ppsched::config{.ranks = 4, .stages_per_rank = 1, .microbatches = 8}),
                      Catch::Matchers::Contains("v_half: stages_per_rank (1) must be 2"));
}
