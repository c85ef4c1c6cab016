#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/zb_h1.hpp>
#include <ppsched/schedules/zb_h2.hpp>

#include <catch2/catch.hpp>

#include "support/schedule_properties.hpp"
#include "support/zb_checks.hpp"
#include "support/zb_measures.hpp"

using ppsched::action_kind;
using ppsched::config;

namespace {

// ZB-H2: compact rows of m F, m I and m W per rank, each kind in microbatch order, and every
// rank peaks at exactly 2 * ranks - 1 live activations (rank r warms up 2 (p - 1 - r)
// forwards and holds back 2r W).
constexpr bool zb_h2_invariants(int p, int m) {
    const auto o = ppsched::generate<ppsched::zb_h2>(config{.ranks = p, .microbatches = m});
    if (!ppsched::validate(o)) return false;
    for (int r = 0; r < p; ++r) {
        if (ppsched_test::idle_count(o, r) != 0) return false;
        for (auto k :
             {action_kind::forward, action_kind::backward_input, action_kind::backward_weight})
            if (ppsched_test::count_kind(o, r, k) != m) return false;
        int next[3] = {0, 0, 0};
        for (const auto& s : o.rank(r)) {
            const int k = s->kind() == action_kind::forward          ? 0
                          : s->kind() == action_kind::backward_input ? 1
                                                                     : 2;
            if (s->microbatch() != next[k]++) return false;
        }
        if (ppsched_test::peak_activations(o, r) != 2 * p - 1) return false;
    }
    return true;
}

// The makespan of ZB-H2 under F = I = W = 1 (a constant expression).
constexpr double unit_makespan(int p, int m) {
    return ppsched::simulate(
               ppsched::generate<ppsched::zb_h2>(config{.ranks = p, .microbatches = m}),
               ppsched::cost_model::uniform_fiw(1, 1, 1))
        .makespan;
}

} // namespace

TEST_CASE("zb_h2 doubles the warm-up and peaks at 2 * ranks - 1 activations", "[zb_h2][schedule]") {
    STATIC_REQUIRE(zb_h2_invariants(1, 2));
    STATIC_REQUIRE(zb_h2_invariants(2, 4));
    STATIC_REQUIRE(zb_h2_invariants(3, 7));
    STATIC_REQUIRE(zb_h2_invariants(4, 8));
    STATIC_REQUIRE(zb_h2_invariants(5, 13));
    STATIC_REQUIRE(zb_h2_invariants(8, 16));
}

TEST_CASE("zb_h2 differs from zb_h1 only by its deeper warm-up", "[zb_h2][schedule]") {
    // The last rank has no warm-up in either; the first runs 2 (p - 1) forwards before I0.
    constexpr auto check = [] {
        constexpr config cfg{.ranks = 4, .microbatches = 8};
        const auto h1 = ppsched::generate<ppsched::zb_h1>(cfg);
        const auto h2 = ppsched::generate<ppsched::zb_h2>(cfg);
        return h1.rank(3) != h2.rank(3) && // rank 3 holds back 6 W in ZB-H2, 3 in ZB-H1
               *h2.rank(0)[5] == ppsched::action::forward(0, 5) &&
               *h2.rank(0)[6] == ppsched::action::forward(0, 6) &&
               *h2.rank(0)[7] == ppsched::action::backward_input(0, 0) &&
               *h2.rank(0)[8] == ppsched::action::backward_weight(0, 0) &&
               *h2.rank(3)[1] == ppsched::action::backward_input(3, 0) &&
               *h1.rank(0)[3] == ppsched::action::forward(0, 3) &&
               *h1.rank(0)[4] == ppsched::action::backward_input(0, 0);
    };
    STATIC_REQUIRE(check());
}

TEST_CASE("zb_h2 rejects fewer than 2 * ranks microbatches and several stages per rank",
          "[zb_h2][schedule][errors]") {
    CHECK_THROWS_WITH(ppsched::generate<ppsched::zb_h2>(config{.ranks = 3, .microbatches = 5}),
                      "zb_h2: microbatches (5) must be >= 2 * ranks (6)");
    CHECK_THROWS_WITH(ppsched::generate<ppsched::zb_h2>(
                          config{.ranks = 2, .stages_per_rank = 3, .microbatches = 8}),
                      "zb_h2: stages_per_rank (3) must be 1 (a single-stage schedule)");
}

TEST_CASE("zb_h2 has no bubble at all when F = I = W, in a constant expression",
          "[zb_h2][timing]") {
    // Every rank's span is its own work, 3m, and rank r starts r forwards later: the makespan
    // is 3m + (p - 1)F.
    STATIC_REQUIRE(unit_makespan(4, 8) == 3 * 8 + 3);
    STATIC_REQUIRE(unit_makespan(2, 4) == 3 * 4 + 1);
    STATIC_REQUIRE(unit_makespan(5, 11) == 3 * 11 + 4);
}

TEST_CASE("zb_h2's span bubble is (ranks - 1 - r) max(0, F + I - 2W) when W <= F, and its "
          "peak memory 2 * ranks - 1 activations, in the simulator",
          "[zb_h2][timing]") {
    struct costs {
        double f, i, w;
    };
    int checked = 0;
    for (const costs c : {costs{1, 1, 1}, costs{1, 1.25, 0.75}, costs{2, 1, 1}, costs{1, 2, 0.5},
                          costs{1.5, 0.5, 0.25}, costs{1, 1, 0.25}, costs{2, 0.5, 2}}) {
        for (int p = 1; p <= 8; ++p) {
            for (int m : {2 * p, 2 * p + 1, 3 * p, 4 * p + 3}) {
                INFO("p " << p << " m " << m << " F " << c.f << " I " << c.i << " W " << c.w);
                const auto o =
                    ppsched::generate<ppsched::zb_h2>(config{.ranks = p, .microbatches = m});
                const auto cm = ppsched_test::zb_costs(c.f, c.i, c.w, 0, 1);
                const auto sim = ppsched::simulate(o, cm);
                REQUIRE(sim);
                const auto bubble = ppsched_test::rank_span_bubbles(sim);
                const double unit = c.f + c.i - 2 * c.w > 0 ? c.f + c.i - 2 * c.w : 0;
                for (int r = 0; r < p; ++r)
                    CHECK(ppsched_test::near(bubble[static_cast<std::size_t>(r)],
                                             (p - 1 - r) * unit));
                CHECK(ppsched_test::near(ppsched_test::peak_activations(sim), 2 * p - 1));
                CHECK(ppsched_test::runs_everywhere(o, cm).empty());
                ++checked;
            }
        }
    }
    CHECK(checked == 7 * 8 * 4);
}
