#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/one_f_one_b.hpp>

#include <catch2/catch.hpp>

#include "support/schedule_properties.hpp"

using ppsched::action_kind;
using ppsched::config;

namespace {
// 1F1B: no idle slot, m forwards and m backwards per rank, forwards and backwards each in
// microbatch order, and rank r never holds more than ranks - r activations.
constexpr bool one_f_one_b_invariants(int p, int m) {
    const auto o = ppsched::generate<ppsched::one_f_one_b>(config{.ranks = p, .microbatches = m});
    if (!ppsched::validate(o)) return false;
    for (int r = 0; r < p; ++r) {
        if (ppsched_test::idle_count(o, r) != 0) return false;
        if (ppsched_test::count_kind(o, r, action_kind::forward) != m) return false;
        if (ppsched_test::count_kind(o, r, action_kind::full_backward) != m) return false;
        int next_f = 0, next_b = 0;
        for (const auto& s : o.rank(r)) {
            if (s->kind() == action_kind::forward && s->microbatch() != next_f++) return false;
            if (s->kind() == action_kind::full_backward && s->microbatch() != next_b++)
                return false;
        }
        const int bound = p - r < m ? p - r : m;
        if (ppsched_test::peak_activations(o, r) != bound) return false;
    }
    return true;
}
} // namespace

TEST_CASE("one_f_one_b bounds the activations of rank r by ranks - r and validates",
          "[one_f_one_b][schedule]") {
    STATIC_REQUIRE(one_f_one_b_invariants(1, 1));
    STATIC_REQUIRE(one_f_one_b_invariants(2, 2));
    STATIC_REQUIRE(one_f_one_b_invariants(4, 8));
    STATIC_REQUIRE(one_f_one_b_invariants(5, 13));
    STATIC_REQUIRE(one_f_one_b_invariants(8, 32));
}

TEST_CASE("one_f_one_b's last rank alternates forward and backward from microbatch 0",
          "[one_f_one_b][schedule]") {
    constexpr auto o = [] {
        const auto g =
            ppsched::generate<ppsched::one_f_one_b>(config{.ranks = 3, .microbatches = 4});
        return std::array{*g.rank(2)[0], *g.rank(2)[1], *g.rank(2)[2], *g.rank(2)[3]};
    }();
    STATIC_REQUIRE(o[0] == ppsched::action::forward(2, 0));
    STATIC_REQUIRE(o[1] == ppsched::action::full_backward(2, 0));
    STATIC_REQUIRE(o[2] == ppsched::action::forward(2, 1));
    STATIC_REQUIRE(o[3] == ppsched::action::full_backward(2, 1));
}

TEST_CASE("one_f_one_b rejects fewer microbatches than ranks and several stages per rank",
          "[one_f_one_b][schedule][errors]") {
    CHECK_THROWS_WITH(
        ppsched::generate<ppsched::one_f_one_b>(config{.ranks = 4, .microbatches = 2}),
        "one_f_one_b: microbatches (2) must be >= ranks (4)");
    CHECK_THROWS_AS(ppsched::generate<ppsched::one_f_one_b>(
                        config{.ranks = 4, .stages_per_rank = 2, .microbatches = 8}),
                    ppsched::config_error);
}
