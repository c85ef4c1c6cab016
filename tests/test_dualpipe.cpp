// dualpipe: DeepSeek's DualPipe. Invariants at compile time, the mirror symmetry of its ranks,
// its errors, every generic algorithm over a sweep of sizes (the two directions are separate
// dependency chains), and the published bubble and activation memory measured by the timed
// simulator. The orders themselves are compared with DeepSeek's in test_conformance_dualpipe.

#include <ppsched/algorithms/add_spacing.hpp>
#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/simulate_steps.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/dualpipe.hpp>

#include <catch2/catch.hpp>

#include <array>
#include <cstddef>
#include <string>

#include "support/schedule_properties.hpp"

using ppsched::action;
using ppsched::action_kind;
using ppsched::config;

namespace {

constexpr ppsched::order dualpipe_order(int p, int m) {
    return ppsched::generate<ppsched::dualpipe>(
        config{.ranks = p, .stages_per_rank = 2, .microbatches = m});
}

/// Peak chunk activations in flight on `rank` as DeepSeek counts them: +1 at each forward, -1 at
/// each B or I (the input gradient frees the activation), an overlapped cell's forward first.
constexpr int peak_in_flight(const ppsched::order& o, int rank) {
    int live = 0, peak = 0;
    for (const auto& s : o.rank(rank)) {
        std::array<action, 2> parts;
        const int n = s->parts(parts);
        for (int i = 0; i < n; ++i) {
            const auto k = parts[static_cast<std::size_t>(i)].kind();
            if (k == action_kind::forward) live += 1;
            if (k == action_kind::full_backward || k == action_kind::backward_input) live -= 1;
            peak = live > peak ? live : peak;
        }
    }
    return peak;
}

// DualPipe on p ranks, m microbatches (R = p/2, n = m/2 per direction): the order validates
// under the dual placement; no idle slot; each rank runs m forwards (n per stage) and one
// backward per forward, as B or as I + W; rank r, q = min(r, p-1-r) steps from its edge, has
// 2n - 3R + q + 1 overlapped cells, one fewer on the two middle ranks (DeepSeek leaves their
// first pair plain); and every rank peaks at p + 1 chunk activations (DeepSeek's "PP + 1").
constexpr bool dualpipe_invariants(int p, int m) {
    const auto o = dualpipe_order(p, m);
    if (o.cfg().placement != ppsched::stage_placement::dual || !ppsched::validate(o)) return false;
    const int R = p / 2, n = m / 2;
    for (int r = 0; r < p; ++r) {
        const int q = r < p - 1 - r ? r : p - 1 - r;
        if (ppsched_test::idle_count(o, r) != 0) return false;
        if (ppsched_test::count_kind(o, r, action_kind::forward) != m) return false;
        const int inputs = ppsched_test::count_kind(o, r, action_kind::backward_input);
        if (ppsched_test::count_kind(o, r, action_kind::backward_weight) != inputs) return false;
        if (ppsched_test::count_kind(o, r, action_kind::full_backward) + inputs != m) return false;
        if (ppsched_test::overlap_count(o, r) != 2 * n - 3 * R + q + 1 - (q == R - 1 ? 1 : 0))
            return false;
        if (peak_in_flight(o, r) != p + 1) return false;
    }
    return true;
}

/// The image of an action under the symmetry that swaps the directions: stage s of one
/// direction becomes stage s +- p of the other (on rank p-1-r), microbatch k becomes k +- m/2.
constexpr action mirrored(const action& a, int p, int m) {
    auto map = [&](const action& x) {
        const int s = x.stage() < p ? x.stage() + p : x.stage() - p;
        const int k = x.microbatch() < m / 2 ? x.microbatch() + m / 2 : x.microbatch() - m / 2;
        switch (x.kind()) {
        case action_kind::forward:
            return action::forward(s, k);
        case action_kind::backward_input:
            return action::backward_input(s, k);
        case action_kind::backward_weight:
            return action::backward_weight(s, k);
        default:
            return action::full_backward(s, k);
        }
    };
    return a.is_overlap() ? action::overlap(map(a.forward_part()), map(a.backward_part())) : map(a);
}

/// Rank p-1-r runs rank r's order with the directions swapped.
constexpr bool ranks_mirror_each_other(int p, int m) {
    const auto o = dualpipe_order(p, m);
    for (int r = 0; r < p; ++r) {
        const auto& mine = o.rank(r);
        const auto& theirs = o.rank(p - 1 - r);
        if (mine.size() != theirs.size()) return false;
        for (std::size_t i = 0; i < mine.size(); ++i)
            if (mirrored(*mine[i], p, m) != *theirs[i]) return false;
    }
    return true;
}

} // namespace

TEST_CASE("dualpipe runs two opposite pipelines, overlapping forwards with backwards",
          "[dualpipe][schedule]") {
    STATIC_REQUIRE(dualpipe_invariants(2, 4));
    STATIC_REQUIRE(dualpipe_invariants(2, 10));
    STATIC_REQUIRE(dualpipe_invariants(4, 8));
    STATIC_REQUIRE(dualpipe_invariants(4, 14));
    STATIC_REQUIRE(dualpipe_invariants(6, 12));
    STATIC_REQUIRE(dualpipe_invariants(8, 20));
    STATIC_REQUIRE(ranks_mirror_each_other(4, 8));
    STATIC_REQUIRE(ranks_mirror_each_other(6, 18));
    // The steady state of DeepSeek's example (p = 4, m = 8), rank 0: (0F3;7B5), (7F6;0B0).
    STATIC_REQUIRE(*dualpipe_order(4, 8).rank(0)[7] ==
                   action::overlap(action::forward(0, 3), action::full_backward(7, 5)));
}

TEST_CASE("dualpipe beyond the conformance sizes: invariants and mirror symmetry",
          "[dualpipe][schedule][sweep]") {
    int checked = 0;
    for (int p : {2, 4, 6, 8, 10, 16}) {
        for (int m = 2 * p; m <= 6 * p + 2; m += 2) {
            INFO("ranks=" << p << " microbatches=" << m);
            CHECK(dualpipe_invariants(p, m));
            CHECK(ranks_mirror_each_other(p, m));
            ++checked;
        }
    }
    CHECK(checked > 80);
}

TEST_CASE("dualpipe needs two stages per rank, even ranks and even microbatches >= 2 * ranks",
          "[dualpipe][schedule][errors]") {
    auto gen = [](int p, int v, int m) {
        return ppsched::generate<ppsched::dualpipe>(
            config{.ranks = p, .stages_per_rank = v, .microbatches = m});
    };
    CHECK_THROWS_WITH(gen(4, 1, 8), "dualpipe: stages_per_rank (1) must be 2 (each rank holds "
                                    "one stage of each direction)");
    // The schedule's message comes before the dual placement's (odd stages per rank).
    CHECK_THROWS_WITH(gen(4, 3, 8), Catch::StartsWith("dualpipe: stages_per_rank (3) must be 2"));
    CHECK_THROWS_WITH(gen(3, 2, 8), Catch::StartsWith("dualpipe: ranks (3) must be even"));
    CHECK_THROWS_WITH(gen(4, 2, 6), "dualpipe: microbatches (6) must be even and >= 2 * ranks "
                                    "(8): each direction takes half and needs at least one per "
                                    "stage");
    CHECK_THROWS_WITH(gen(2, 2, 5), Catch::StartsWith("dualpipe: microbatches (5) must be even"));
    CHECK_THROWS_AS(gen(0, 2, 8), ppsched::config_error);
}

TEST_CASE("every generic algorithm treats DualPipe's directions as separate pipelines",
          "[dualpipe][algorithms][sweep]") {
    int orders = 0;
    for (int p : {2, 4, 6, 8}) {
        for (int m : {2 * p, 2 * p + 2, 4 * p, 6 * p + 2}) {
            INFO("ranks=" << p << " microbatches=" << m);
            const auto o = dualpipe_order(p, m);
            const config& cfg = o.cfg();
            REQUIRE(ppsched::validate(o));

            // Lowering: one REDUCE_GRAD per stage (after its direction's last backward), one
            // SEND and one RECV per dependency between ranks, none between stage p-1 and p.
            const auto lowered = ppsched::lower(o);
            const auto report = ppsched::validate(lowered);
            if (!report) FAIL_CHECK(ppsched::to_string(report));
            CHECK(ppsched_test::count_kind(lowered, action_kind::reduce_grad) == 2 * p);
            CHECK(ppsched_test::count_kind(lowered, action_kind::send_f) == 2 * (p - 1) * (m / 2));
            CHECK(ppsched_test::count_kind(lowered, action_kind::recv_b) == 2 * (p - 1) * (m / 2));
            for (const auto& row : lowered)
                for (const auto& s : row)
                    if (ppsched::is_p2p(s->kind()))
                        CHECK(cfg.stage_runs_microbatch(s->stage(), s->microbatch()));
            for (const bool fsdp : {false, true}) {
                const auto plain = ppsched::lower(o, {.unshard_reshard = fsdp});
                CHECK(ppsched::validate(plain));
            }

            // Unit-step simulation of the lowered order, and the visualizer's spacing.
            const auto steps = ppsched::simulate_steps(lowered);
            CHECK(steps.completed());
            CHECK(ppsched::validate(steps.timeline));
            const auto spaced = ppsched::add_spacing(o, cfg);
            CHECK(ppsched::validate(spaced));

            // Timed simulation, compute-only and lowered, with and without message costs.
            ppsched::cost_model costs;
            costs.p2p_latency = 0.25;
            const auto timed = ppsched::simulate(o, costs);
            INFO(ppsched::describe_problem(timed));
            CHECK(timed);
            const auto timed_lowered = ppsched::simulate(lowered, costs);
            INFO(ppsched::describe_problem(timed_lowered));
            CHECK(timed_lowered);
            ++orders;
        }
    }
    CHECK(orders == 16);
}

TEST_CASE("DualPipe's bubble is DeepSeek's (PP/2 - 1)(F&B + B - 3W)", "[dualpipe][timing]") {
    // DeepSeek-V3 report, table 2: bubble (PP/2 - 1)(F&B + B - 3W) with PP = ranks, in chunk
    // costs: F forward, B full backward, W weight backward, F&B one overlapped pair. What it
    // measures (checked against an independent replay in the research notes): the largest
    // idle time of a rank, makespan minus the rank's busy time from time 0, with no
    // communication cost, F = I (forward and input backward cost the same), W <= F, B = I + W and
    // B <= F&B <= F + B; it is attained on the two middle ranks. With K = 2n - 2R - 1 overlapped
    // cells there (R = PP/2, n = m/2), the makespan is 2n(F + B) - K(F + B - F&B) + bubble.
    struct costs_case {
        double f, w, fb;
    };
    int checked = 0;
    for (int p : {2, 4, 6, 8}) {
        for (int m : {2 * p, 2 * p + 2, 3 * p, 4 * p, 6 * p}) {
            const auto o = dualpipe_order(p, m);
            const double R = p / 2, n = m / 2, K = 2 * n - 2 * R - 1;
            for (const costs_case c :
                 {costs_case{2, 1, 3}, costs_case{2, 1, 4}, costs_case{2, 1, 5},
                  costs_case{1, 1, 2}, costs_case{4, 0.5, 4.5}, costs_case{4, 0.5, 6},
                  costs_case{1.5, 0.25, 2}, costs_case{3, 0, 4.5}}) {
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
                const double published = (R - 1) * (c.fb + b - 3 * c.w);
                CHECK(bubble == published);
                CHECK(sim.ranks[static_cast<std::size_t>(p / 2)].idle == published);
                CHECK(sim.makespan == 2 * n * (c.f + b) - K * (c.f + b - c.fb) + published);
                // Lowering adds no time when messages are free.
                CHECK(ppsched::simulate(ppsched::lower(o), costs).makespan == sim.makespan);
                ++checked;
            }
        }
    }
    CHECK(checked == 160);
}

TEST_CASE("DualPipe holds PP + 1 chunk activations per rank", "[dualpipe][timing][memory]") {
    // DeepSeek: activation memory PP + 1 (chunks; PP = ranks). The simulator's peak with each
    // forward holding one unit until its input backward (I or B) frees it.
    for (int p : {2, 4, 6, 8}) {
        for (int m : {2 * p, 2 * p + 2, 4 * p, 6 * p}) {
            INFO("ranks=" << p << " microbatches=" << m);
            ppsched::cost_model costs;
            costs.input_grad_frees = 1;
            const auto sim = ppsched::simulate(dualpipe_order(p, m), costs);
            REQUIRE(sim);
            for (const auto& r : sim.ranks) CHECK(r.peak_activations == p + 1);
        }
    }
}
