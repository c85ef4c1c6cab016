#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/zb_h1.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <cstddef>

#include "support/schedule_properties.hpp"
#include "support/zb_checks.hpp"
#include "support/zb_measures.hpp"

using ppsched::action_kind;
using ppsched::config;

namespace {

// ZB-H1: compact rows of m F, m I and m W per rank, each kind in microbatch order, no fused
// backward, and every rank peaks at exactly `ranks` live activations (the W that frees one is
// held back by r on rank r, while rank r warms up r forwards fewer than rank 0).
constexpr bool zb_h1_invariants(int p, int m) {
    const auto o = ppsched::generate<ppsched::zb_h1>(config{.ranks = p, .microbatches = m});
    if (!ppsched::validate(o)) return false;
    for (int r = 0; r < p; ++r) {
        if (ppsched_test::idle_count(o, r) != 0) return false;
        for (auto k :
             {action_kind::forward, action_kind::backward_input, action_kind::backward_weight})
            if (ppsched_test::count_kind(o, r, k) != m) return false;
        if (ppsched_test::count_kind(o, r, action_kind::full_backward) != 0) return false;
        int next[3] = {0, 0, 0};
        for (const auto& s : o.rank(r)) {
            const int k = s->kind() == action_kind::forward          ? 0
                          : s->kind() == action_kind::backward_input ? 1
                                                                     : 2;
            if (s->microbatch() != next[k]++) return false;
        }
        if (ppsched_test::peak_activations(o, r) != p) return false;
    }
    return true;
}

// Rank r's idle time between its first and last action under F, I, W (B unused), computed by
// the simulator in a constant expression.
constexpr double span_bubble(int p, int m, int r, double f, double i, double w) {
    const auto o = ppsched::generate<ppsched::zb_h1>(config{.ranks = p, .microbatches = m});
    const auto sim = ppsched::simulate(o, ppsched::cost_model::uniform_fiw(f, i, w));
    double first = -1, last = 0;
    for (const auto& t : sim.timeline) {
        if (t.rank != r) continue;
        if (first < 0) first = t.start;
        last = t.end;
    }
    return last - first - sim.ranks[static_cast<std::size_t>(r)].busy;
}

// The first N actions of `rank` (a constant: an order itself cannot be a constexpr variable).
template <std::size_t N>
constexpr std::array<ppsched::action, N> head(int p, int m, int rank) {
    const auto o = ppsched::generate<ppsched::zb_h1>(config{.ranks = p, .microbatches = m});
    std::array<ppsched::action, N> out{};
    for (std::size_t i = 0; i < N; ++i) out[i] = *o.rank(rank)[i];
    return out;
}

} // namespace

TEST_CASE("zb_h1 splits every backward and holds 1F1B's peak of ranks activations",
          "[zb_h1][schedule]") {
    STATIC_REQUIRE(zb_h1_invariants(1, 2));
    STATIC_REQUIRE(zb_h1_invariants(2, 4));
    STATIC_REQUIRE(zb_h1_invariants(3, 7));
    STATIC_REQUIRE(zb_h1_invariants(4, 8));
    STATIC_REQUIRE(zb_h1_invariants(5, 13));
    STATIC_REQUIRE(zb_h1_invariants(8, 16));
}

TEST_CASE("zb_h1's first rank runs a W right after each I once its warm-up is over",
          "[zb_h1][schedule]") {
    // Rank 0 of 3: warm-up F0 F1, then F2 I0 W0, F3 I1 W1, ...; rank 2 holds back 2 W.
    constexpr auto r0 = head<5>(3, 6, 0);
    constexpr auto r2 = head<7>(3, 6, 2);
    STATIC_REQUIRE(r0[2] == ppsched::action::forward(0, 2));
    STATIC_REQUIRE(r0[3] == ppsched::action::backward_input(0, 0));
    STATIC_REQUIRE(r0[4] == ppsched::action::backward_weight(0, 0));
    STATIC_REQUIRE(r2[0] == ppsched::action::forward(2, 0));
    STATIC_REQUIRE(r2[1] == ppsched::action::backward_input(2, 0));
    STATIC_REQUIRE(r2[2] == ppsched::action::forward(2, 1));
    STATIC_REQUIRE(r2[3] == ppsched::action::backward_input(2, 1));
    STATIC_REQUIRE(r2[4] == ppsched::action::forward(2, 2));
    STATIC_REQUIRE(r2[6] == ppsched::action::backward_weight(2, 0));
}

TEST_CASE("zb_h1 rejects fewer than 2 * ranks microbatches and several stages per rank",
          "[zb_h1][schedule][errors]") {
    CHECK_THROWS_WITH(ppsched::generate<ppsched::zb_h1>(config{.ranks = 4, .microbatches = 7}),
                      "zb_h1: microbatches (7) must be >= 2 * ranks (8)");
    CHECK_THROWS_WITH(ppsched::generate<ppsched::zb_h1>(
                          config{.ranks = 2, .stages_per_rank = 2, .microbatches = 8}),
                      "zb_h1: stages_per_rank (2) must be 1 (a single-stage schedule)");
    CHECK_NOTHROW(ppsched::generate<ppsched::zb_h1>(config{.ranks = 4, .microbatches = 8}));
}

TEST_CASE("zb_h1's bubble is a third of 1F1B's in a constant expression", "[zb_h1][timing]") {
    // F = I = W = 1: rank r idles (p - 1 - r)(F + I - W) = p - 1 - r inside its span, where
    // 1F1B idles 3 (p - 1 - r).
    STATIC_REQUIRE(span_bubble(4, 8, 0, 1, 1, 1) == 3);
    STATIC_REQUIRE(span_bubble(4, 8, 2, 1, 1, 1) == 1);
    STATIC_REQUIRE(span_bubble(4, 8, 3, 1, 1, 1) == 0);
    STATIC_REQUIRE(span_bubble(3, 6, 0, 1, 1.25, 0.75) == 2 * 1.5);
}

TEST_CASE("zb_h1's span bubble is (ranks - 1 - r)(F + I - W) when W <= F, and its peak "
          "memory ranks activations, in the simulator",
          "[zb_h1][timing]") {
    // The paper's formula assumes W <= F (a held-back W fits in the slot a forward leaves);
    // with W > F only F of it hides: (ranks - 1 - r)(F + I - min(F, W)).
    struct costs {
        double f, i, w;
    };
    int checked = 0;
    for (const costs c : {costs{1, 1, 1}, costs{1, 1.25, 0.75}, costs{2, 1, 1}, costs{1, 2, 0.5},
                          costs{1.5, 0.5, 0.25}, costs{1, 0.5, 1.5}, costs{1, 1, 2}}) {
        for (int p = 1; p <= 8; ++p) {
            for (int m : {2 * p, 2 * p + 1, 3 * p, 4 * p + 3}) {
                INFO("p " << p << " m " << m << " F " << c.f << " I " << c.i << " W " << c.w);
                const auto o =
                    ppsched::generate<ppsched::zb_h1>(config{.ranks = p, .microbatches = m});
                const auto cm = ppsched_test::zb_costs(c.f, c.i, c.w, 0, 1);
                const auto sim = ppsched::simulate(o, cm);
                REQUIRE(sim);
                const auto bubble = ppsched_test::rank_span_bubbles(sim);
                const double hidden = c.w <= c.f ? c.w : c.f;
                for (int r = 0; r < p; ++r)
                    CHECK(ppsched_test::near(bubble[static_cast<std::size_t>(r)],
                                             (p - 1 - r) * (c.f + c.i - hidden)));
                CHECK(ppsched_test::near(ppsched_test::peak_activations(sim), p));
                CHECK(ppsched_test::runs_everywhere(o, cm).empty());
                ++checked;
            }
        }
    }
    CHECK(checked == 7 * 8 * 4);
}
