#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/interleaved_1f1b.hpp>

#include <catch2/catch.hpp>

#include "support/schedule_properties.hpp"

using ppsched::action_kind;
using ppsched::config;

namespace {
// Interleaved 1F1B (Megatron's analysis): rank r starts after r idle slots, runs m * v
// forwards and full backwards, and holds at most min(m * v, warm-up + 1) activations, with a
// warm-up of (v - 1) * (m / rounds) + 2 * (p - 1 - r) forwards.
constexpr bool interleaved_invariants(int p, int v, int m) {
    const auto o = ppsched::generate<ppsched::interleaved_1f1b>(
        config{.ranks = p, .stages_per_rank = v, .microbatches = m});
    if (!ppsched::validate(o)) return false;
    const int rounds = m / p > 1 ? m / p : 1;
    for (int r = 0; r < p; ++r) {
        if (ppsched_test::leading_idle(o, r) != r) return false;
        if (ppsched_test::count_kind(o, r, action_kind::forward) != m * v) return false;
        if (ppsched_test::count_kind(o, r, action_kind::full_backward) != m * v) return false;
        const int warmup = (v - 1) * (m / rounds) + 2 * (p - 1 - r);
        const int bound = warmup + 1 < m * v ? warmup + 1 : m * v;
        if (ppsched_test::peak_activations(o, r) != bound) return false;
    }
    return true;
}
} // namespace

TEST_CASE("interleaved_1f1b bounds activations by its warm-up and validates",
          "[interleaved_1f1b][schedule]") {
    STATIC_REQUIRE(interleaved_invariants(1, 1, 1));
    STATIC_REQUIRE(interleaved_invariants(2, 2, 2));
    STATIC_REQUIRE(interleaved_invariants(4, 2, 8));
    STATIC_REQUIRE(interleaved_invariants(4, 3, 6)); // rounds = 1, m not a multiple of ranks
    STATIC_REQUIRE(interleaved_invariants(3, 2, 12));
    STATIC_REQUIRE(interleaved_invariants(4, 4, 3)); // fewer microbatches than ranks
    STATIC_REQUIRE(interleaved_invariants(8, 2, 16));
}

TEST_CASE("interleaved_1f1b rejects microbatches that do not divide into rounds",
          "[interleaved_1f1b][schedule][errors]") {
    CHECK_THROWS_WITH(
        ppsched::generate<ppsched::interleaved_1f1b>(
            config{.ranks = 2, .stages_per_rank = 2, .microbatches = 7}),
        "interleaved_1f1b: microbatches (7) must be divisible by the number of rounds (3); "
        "rounds = max(1, microbatches / ranks) with 2 ranks");
    CHECK_THROWS_AS(ppsched::generate<ppsched::interleaved_1f1b>(
                        config{.ranks = 4, .stages_per_rank = 2, .microbatches = 9}),
                    ppsched::config_error);
    CHECK_NOTHROW(ppsched::generate<ppsched::interleaved_1f1b>(
        config{.ranks = 4, .stages_per_rank = 2, .microbatches = 10}));
}
