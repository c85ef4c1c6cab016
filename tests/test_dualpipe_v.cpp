#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
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

TEST_CASE("DualPipeV's bubble is DeepSeek's (PP/2 - 1)(F&B + B - 3W) with PP = 2 * ranks",
          "[dualpipe_v][timing]") {
    // DeepSeek's formula with PP = 2p stages: (p - 1)(F&B + B - 3W), in chunk costs. As for
    // DualPipe (see test_dualpipe.cpp): the largest idle time of a rank from time 0, free
    // messages, F = I, W <= F, B = I + W, B <= F&B <= F + B; attained on the last rank, where
    // K = 2m - 2p - 1 cells overlap and the makespan is 2m(F + B) - K(F + B - F&B) + bubble.
    struct costs_case {
        double f, w, fb;
    };
    int checked = 0;
    for (int p : {1, 2, 3, 4, 5, 8}) {
        for (int m : {2 * p, 2 * p + 1, 3 * p + 1, 4 * p, 6 * p}) {
            const auto o = ppsched::generate<ppsched::dualpipe_v>(
                config{.ranks = p, .stages_per_rank = 2, .microbatches = m});
            const double K = 2 * m - 2 * p - 1;
            for (const costs_case c :
                 {costs_case{2, 1, 3}, costs_case{2, 1, 5}, costs_case{1, 1, 2},
                  costs_case{4, 0.5, 4.5}, costs_case{1.5, 0.25, 2}, costs_case{3, 0, 4.5}}) {
                INFO("ranks=" << p << " microbatches=" << m << " F=I=" << c.f << " W=" << c.w
                              << " F&B=" << c.fb);
                ppsched::cost_model costs;
                costs.uniform.forward = c.f;
                costs.uniform.backward_input = c.f;
                costs.uniform.backward_weight = c.w;
                costs.uniform.overlap_f_b = c.fb;
                const double b = c.f + c.w;
                const auto sim = ppsched::simulate(o, costs);
                REQUIRE(sim);
                double bubble = 0;
                for (const auto& r : sim.ranks) bubble = r.idle > bubble ? r.idle : bubble;
                const double published = (p - 1) * (c.fb + b - 3 * c.w);
                CHECK(bubble == published);
                CHECK(sim.ranks.back().idle == published);
                CHECK(sim.makespan == 2 * m * (c.f + b) - K * (c.f + b - c.fb) + published);
                CHECK(ppsched::simulate(ppsched::lower(o), costs).makespan == sim.makespan);
                ++checked;
            }
        }
    }
    CHECK(checked == 180);
}

TEST_CASE("DualPipeV holds PP + 1 = 2 * ranks + 1 chunk activations per rank",
          "[dualpipe_v][timing][memory]") {
    for (int p : {1, 2, 3, 4, 6, 8}) {
        for (int m : {2 * p, 2 * p + 1, 4 * p, 6 * p}) {
            INFO("ranks=" << p << " microbatches=" << m);
            ppsched::cost_model costs;
            costs.input_grad_frees = 1; // a forward's activation lives until its I or B
            const auto sim =
                ppsched::simulate(ppsched::generate<ppsched::dualpipe_v>(
                                      config{.ranks = p, .stages_per_rank = 2, .microbatches = m}),
                                  costs);
            REQUIRE(sim);
            for (const auto& r : sim.ranks) CHECK(r.peak_activations == 2 * p + 1);
        }
    }
}
