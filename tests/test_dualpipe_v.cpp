#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/dualpipe_v.hpp>

#include <catch2/catch.hpp>

#include "support/schedule_properties.hpp"

using ppsched::action_kind;
using ppsched::config;

namespace {
// DualPipeV: no idle slot; 2m forwards per rank, each (stage, microbatch) backward once as B
// or as I + W; overlapped forward+backward pairs in the steady state (at least one per
// microbatch beyond the 2p that fill and drain the V); at most 2p + 1 chunk activations.
constexpr bool dualpipe_v_invariants(int p, int m) {
    const auto o = ppsched::generate<ppsched::dualpipe_v>(
        config{.ranks = p, .stages_per_rank = 2, .microbatches = m});
    if (!ppsched::validate(o)) return false;
    for (int r = 0; r < p; ++r) {
        if (ppsched_test::idle_count(o, r) != 0) return false;
        if (ppsched_test::count_kind(o, r, action_kind::forward) != 2 * m) return false;
        const int inputs = ppsched_test::count_kind(o, r, action_kind::backward_input);
        if (ppsched_test::count_kind(o, r, action_kind::backward_weight) != inputs) return false;
        if (ppsched_test::count_kind(o, r, action_kind::full_backward) + inputs != 2 * m)
            return false;
        if (ppsched_test::overlap_count(o, r) < m - 2 * p + 1) return false;
        if (ppsched_test::peak_activations(o, r) > 2 * p + 1) return false;
    }
    return true;
}

constexpr int overlapped_count(int p, int m) {
    const auto o = ppsched::generate<ppsched::dualpipe_v>(
        config{.ranks = p, .stages_per_rank = 2, .microbatches = m});
    int n = 0;
    for (const auto& row : o)
        for (const auto& s : row) n += s->is_overlap() ? 1 : 0;
    return n;
}
} // namespace

TEST_CASE("dualpipe_v overlaps forwards with backwards and validates", "[dualpipe_v][schedule]") {
    STATIC_REQUIRE(dualpipe_v_invariants(1, 2));
    STATIC_REQUIRE(dualpipe_v_invariants(2, 5));
    STATIC_REQUIRE(dualpipe_v_invariants(4, 8));
    STATIC_REQUIRE(dualpipe_v_invariants(4, 10));
    STATIC_REQUIRE(dualpipe_v_invariants(3, 13));
    STATIC_REQUIRE(dualpipe_v_invariants(8, 20));
    STATIC_REQUIRE(overlapped_count(4, 16) > 0);
}

TEST_CASE("dualpipe_v needs two stages per rank and at least as many microbatches as stages",
          "[dualpipe_v][schedule][errors]") {
    CHECK_THROWS_WITH(
        ppsched::generate<ppsched::dualpipe_v>(
            config{.ranks = 4, .stages_per_rank = 2, .microbatches = 7}),
        "dualpipe_v: microbatches (7) must be >= the number of stages (8 = 2 * ranks)");
    CHECK_THROWS_WITH(ppsched::generate<ppsched::dualpipe_v>(
                          config{.ranks = 4, .stages_per_rank = 1, .microbatches = 8}),
                      "dualpipe_v: stages_per_rank (1) must be 2 (the V placement holds two "
                      "stages per rank)");
}
