#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/zbv_zero_bubble.hpp>

#include <catch2/catch.hpp>

#include "support/schedule_properties.hpp"

using ppsched::action_kind;
using ppsched::config;

namespace {
// ZB-V: V placement (validate checks every stage is on its rank), 2m forwards, I and W per
// rank and no full backward; peak activation memory of 2p chunks, i.e. 1F1B's p microbatches.
constexpr bool zbv_invariants(int p, int m) {
    const auto o = ppsched::generate<ppsched::zbv_zero_bubble>(
        config{.ranks = p, .stages_per_rank = 2, .microbatches = m});
    if (o.cfg().placement != ppsched::stage_placement::v) return false;
    if (!ppsched::validate(o)) return false;
    for (int r = 0; r < p; ++r) {
        if (ppsched_test::count_kind(o, r, action_kind::forward) != 2 * m) return false;
        if (ppsched_test::count_kind(o, r, action_kind::backward_input) != 2 * m) return false;
        if (ppsched_test::count_kind(o, r, action_kind::backward_weight) != 2 * m) return false;
        if (ppsched_test::count_kind(o, r, action_kind::full_backward) != 0) return false;
        if (ppsched_test::peak_activations(o, r) > 2 * p) return false;
        if (ppsched_test::leading_idle(o, r) < r) return false;
    }
    // The first and the last stage share rank 0.
    return o.rank(0)[0]->stage() == 0 && o.cfg().stage_to_rank(2 * p - 1) == 0;
}
} // namespace

TEST_CASE("zbv_zero_bubble keeps 1F1B's memory on the V placement and validates",
          "[zbv_zero_bubble][schedule]") {
    STATIC_REQUIRE(zbv_invariants(1, 1));
    STATIC_REQUIRE(zbv_invariants(2, 3));
    STATIC_REQUIRE(zbv_invariants(4, 2)); // fewer microbatches than the V needs: idle slots
    STATIC_REQUIRE(zbv_invariants(4, 8));
    STATIC_REQUIRE(zbv_invariants(5, 11));
    STATIC_REQUIRE(zbv_invariants(8, 16));
}

TEST_CASE("zbv_zero_bubble needs exactly two stages per rank",
          "[zbv_zero_bubble][schedule][errors]") {
    CHECK_THROWS_WITH(ppsched::generate<ppsched::zbv_zero_bubble>(
                          config{.ranks = 4, .stages_per_rank = 3, .microbatches = 8}),
                      "zbv_zero_bubble: stages_per_rank (3) must be 2 (the V placement holds "
                      "two stages per rank)");
}
