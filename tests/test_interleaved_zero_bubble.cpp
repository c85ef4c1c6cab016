#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/interleaved_zero_bubble.hpp>

#include <catch2/catch.hpp>

#include "support/schedule_properties.hpp"

using ppsched::action;
using ppsched::action_kind;
using ppsched::config;

namespace {
// Interleaved zero bubble: backwards split into m * v I and m * v W per rank, no full
// backward, each W after its I (validate), and rank r runs r + 1 I before its first W.
constexpr bool zero_bubble_invariants(int p, int v, int m) {
    const auto o = ppsched::generate<ppsched::interleaved_zero_bubble>(
        config{.ranks = p, .stages_per_rank = v, .microbatches = m});
    if (!ppsched::validate(o)) return false;
    for (int r = 0; r < p; ++r) {
        if (ppsched_test::count_kind(o, r, action_kind::forward) != m * v) return false;
        if (ppsched_test::count_kind(o, r, action_kind::backward_input) != m * v) return false;
        if (ppsched_test::count_kind(o, r, action_kind::backward_weight) != m * v) return false;
        if (ppsched_test::count_kind(o, r, action_kind::full_backward) != 0) return false;
        int inputs = 0;
        for (const auto& s : o.rank(r)) {
            if (!s) continue;
            if (s->kind() == action_kind::backward_input) ++inputs;
            if (s->kind() == action_kind::backward_weight) break;
        }
        const int delay = r + 1 < m * v ? r + 1 : m * v;
        if (inputs < delay) return false;
    }
    return true;
}

// A forward may not run in the same round as the forward it needs: the bubble pass delays it.
constexpr bool bubbles_delay_dependent_forwards() {
    const config cfg{.ranks = 2, .microbatches = 1};
    ppsched::order in(cfg);
    in.push(0, action::forward(0, 0));
    in.push(1, action::forward(1, 0));
    const auto out = ppsched::detail::add_dependency_bubbles(in);
    return out.rank(0).size() == 1 && out.rank(1).size() == 2 && out.rank(1)[0].is_idle() &&
           out.rank(1)[1] == action::forward(1, 0);
}

// A full backward waits for the next stage's; a rank whose actions are ready is unchanged.
constexpr bool bubbles_wait_for_the_next_backward() {
    const config cfg{.ranks = 2, .microbatches = 1};
    ppsched::order in(cfg);
    in.push(0, action::forward(0, 0));
    in.push(0, action::full_backward(0, 0));
    in.push_idle(1);
    in.push(1, action::forward(1, 0));
    in.push(1, action::full_backward(1, 0));
    // 0B0 needs 1B0, which rank 1 runs in round 2: rank 0 waits two rounds.
    const auto out = ppsched::detail::add_dependency_bubbles(in);
    return out.rank(1) == in.rank(1) && out.rank(0).size() == 4 && out.rank(0)[1].is_idle() &&
           out.rank(0)[2].is_idle() && out.rank(0)[3] == action::full_backward(0, 0);
}
} // namespace

TEST_CASE("interleaved_zero_bubble splits every backward and validates",
          "[interleaved_zero_bubble][schedule]") {
    STATIC_REQUIRE(zero_bubble_invariants(1, 1, 1));
    STATIC_REQUIRE(zero_bubble_invariants(2, 2, 2));
    STATIC_REQUIRE(zero_bubble_invariants(4, 2, 8));
    STATIC_REQUIRE(zero_bubble_invariants(4, 2, 1)); // the bubble pass inserts stalls
    STATIC_REQUIRE(zero_bubble_invariants(4, 3, 3));
    STATIC_REQUIRE(zero_bubble_invariants(3, 2, 9));
    STATIC_REQUIRE(zero_bubble_invariants(8, 2, 8));
}

TEST_CASE("the dependency-bubble pass delays only what is not ready",
          "[interleaved_zero_bubble][detail]") {
    STATIC_REQUIRE(bubbles_delay_dependent_forwards());
    STATIC_REQUIRE(bubbles_wait_for_the_next_backward());
}

TEST_CASE("the dependency-bubble pass reports an order that can never finish",
          "[interleaved_zero_bubble][detail][errors]") {
    ppsched::order in(config{.ranks = 2, .microbatches = 1});
    in.push(1, action::forward(1, 0)); // waits for 0F0, which never runs
    CHECK_THROWS_AS(ppsched::detail::add_dependency_bubbles(in), ppsched::config_error);
}

TEST_CASE("interleaved_zero_bubble rejects microbatches that do not divide into rounds",
          "[interleaved_zero_bubble][schedule][errors]") {
    CHECK_THROWS_WITH(
        ppsched::generate<ppsched::interleaved_zero_bubble>(
            config{.ranks = 4, .stages_per_rank = 2, .microbatches = 9}),
        "interleaved_zero_bubble: microbatches (9) must be divisible by the number of rounds "
        "(2); rounds = max(1, microbatches / ranks) with 4 ranks");
}
