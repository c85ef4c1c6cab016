#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/one_f_one_b.hpp>
#include <ppsched/schedules/one_f_one_b_overlap.hpp>

#include <catch2/catch.hpp>

#include "support/schedule_properties.hpp"

using ppsched::action_kind;
using ppsched::config;
using ppsched::one_f_one_b_overlap;

namespace {

// 1F1B with overlapped steady state: no idle slot; m forwards and m full backwards per rank;
// rank r warms up with w = 2 (p - 1 - r) + 1 forwards, so it overlaps m - w pairs, never of
// the same microbatch, and holds min(2 (p - r), m) activations at most (twice 1F1B's p - r
// when there are enough microbatches).
constexpr bool overlap_invariants(int p, int m) {
    const auto o = ppsched::generate<one_f_one_b_overlap>(config{.ranks = p, .microbatches = m});
    if (!ppsched::validate(o)) return false;
    for (int r = 0; r < p; ++r) {
        if (ppsched_test::idle_count(o, r) != 0) return false;
        if (ppsched_test::count_kind(o, r, action_kind::forward) != m) return false;
        if (ppsched_test::count_kind(o, r, action_kind::full_backward) != m) return false;
        const int warmup = 2 * (p - 1 - r) + 1;
        if (ppsched_test::overlap_count(o, r) != m - warmup) return false;
        for (const auto& s : o.rank(r)) {
            if (s->stage() != r) return false;
            if (s->is_overlap() &&
                s->forward_part().microbatch() == s->backward_part().microbatch())
                return false;
        }
        // The warm-up plus the forward of the first pair, or every microbatch if fewer.
        const int peak = warmup + 1 < m ? warmup + 1 : m;
        if (ppsched_test::peak_activations(o, r) != peak) return false;
    }
    return true;
}

bool accepts(const config& cfg) {
    try {
        one_f_one_b_overlap{}.check(cfg);
        return true;
    } catch (const ppsched::config_error&) {
        return false;
    }
}

} // namespace

TEST_CASE("one_f_one_b_overlap overlaps every steady forward with a backward and validates",
          "[one_f_one_b_overlap][schedule]") {
    STATIC_REQUIRE(overlap_invariants(1, 1));
    STATIC_REQUIRE(overlap_invariants(1, 5));
    STATIC_REQUIRE(overlap_invariants(2, 3));
    STATIC_REQUIRE(overlap_invariants(2, 8));
    STATIC_REQUIRE(overlap_invariants(4, 7));
    STATIC_REQUIRE(overlap_invariants(4, 16));
    STATIC_REQUIRE(overlap_invariants(5, 12));
}

TEST_CASE("one_f_one_b_overlap needs one stage per rank and 2 * ranks - 1 microbatches",
          "[one_f_one_b_overlap][schedule][errors]") {
    CHECK_THROWS_WITH(ppsched::generate<one_f_one_b_overlap>(config{.ranks = 4, .microbatches = 6}),
                      "one_f_one_b_overlap: microbatches (6) must be >= 2 * ranks - 1 (7): rank 0 "
                      "warms up with that many forwards before its first overlapped "
                      "forward+backward");
    CHECK_THROWS_WITH(
        ppsched::generate<one_f_one_b_overlap>(
            config{.ranks = 2, .stages_per_rank = 2, .microbatches = 8}),
        Catch::Matchers::StartsWith("one_f_one_b_overlap: stages_per_rank must be 1"));
    CHECK_NOTHROW(ppsched::generate<one_f_one_b_overlap>(config{.ranks = 4, .microbatches = 7}));
}

TEST_CASE("every accepted one_f_one_b_overlap order validates, lowers and simulates without "
          "deadlock",
          "[one_f_one_b_overlap][schedule][sweep]") {
    int accepted = 0;
    for (int p = 1; p <= 12; ++p)
        for (int v = 1; v <= 2; ++v)
            for (int m = 1; m <= 40; ++m) {
                const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
                INFO("ranks=" << p << " stages_per_rank=" << v << " microbatches=" << m);
                const bool ok = accepts(cfg);
                CHECK(ok == (v == 1 && m >= 2 * p - 1));
                if (!ok) continue;
                ++accepted;
                const auto o = ppsched::generate<one_f_one_b_overlap>(cfg);
                const auto report = ppsched::validate(o);
                if (!report) FAIL(ppsched::to_string(report));
                const auto sim = ppsched::simulate(o);
                if (!sim) FAIL(ppsched::describe_problem(sim));
                const auto lowered = ppsched::lower(o);
                const auto lowered_report = ppsched::validate(lowered);
                if (!lowered_report) FAIL(ppsched::to_string(lowered_report));
                const auto lowered_sim = ppsched::simulate(lowered);
                if (!lowered_sim) FAIL(ppsched::describe_problem(lowered_sim));
                CHECK(lowered_sim.makespan == sim.makespan);
            }
    CHECK(accepted > 300);
}

TEST_CASE("one_f_one_b_overlap idles like 1F1B, (p - 1)(F + B) per rank, when a pair costs F + B, "
          "and saves F + B - F&B per overlapped slot of the last rank otherwise",
          "[one_f_one_b_overlap][schedule][timing]") {
    int checked = 0;
    for (const auto& [f, b] : {std::pair{1.0, 2.0}, std::pair{2.0, 3.0}})
        for (int p = 1; p <= 6; ++p)
            for (int m = 2 * p - 1; m <= 3 * p + 1; ++m) {
                const config cfg{.ranks = p, .microbatches = m};
                INFO("ranks=" << p << " microbatches=" << m << " F=" << f << " B=" << b);
                const auto o = ppsched::generate<one_f_one_b_overlap>(cfg);
                // A pair costs the sum of its parts: exactly 1F1B's timing.
                const auto sum = ppsched::simulate(o, ppsched::cost_model::uniform_fb(f, b));
                REQUIRE(sum);
                CHECK(sum.makespan == (m + p - 1) * (f + b));
                for (const auto& rank : sum.ranks) CHECK(rank.idle == (p - 1) * (f + b));
                // A pair costs F&B < F + B (the overlap hides communication): the last rank, which
                // never waits once its first forward arrives, sets the pace, so the makespan is
                // its busy time plus the first forward's and the last backward's trip.
                auto costs = ppsched::cost_model::uniform_fb(f, b);
                costs.uniform.overlap_f_b = b + 0.5;
                const auto overlapped = ppsched::simulate(o, costs);
                REQUIRE(overlapped);
                const double last_busy =
                    m * (f + b) - ppsched_test::overlap_count(o, p - 1) * (f - 0.5);
                CHECK(overlapped.ranks[static_cast<std::size_t>(p - 1)].busy == last_busy);
                CHECK(overlapped.makespan == last_busy + (p - 1) * (f + b));
                ++checked;
            }
    CHECK(checked == 2 * (4 + 5 + 6 + 7 + 8 + 9)); // p + 3 microbatch counts per p
}
