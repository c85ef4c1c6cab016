#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/interleaved_1f1b_overlap.hpp>
#include <ppsched/schedules/megatron_interleaved.hpp>
#include <ppsched/schedules/one_f_one_b_overlap.hpp>

#include <catch2/catch.hpp>

#include <array>

#include "support/schedule_properties.hpp"

using ppsched::action_kind;
using ppsched::config;
using ppsched::interleaved_1f1b_overlap;

namespace {

// Interleaved 1F1B with overlapped steady state: no idle slot; m v forwards and full backwards
// per rank; one warm-up forward more than Megatron's interleaved 1F1B,
// w = 2 (p - 1 - r) + (v - 1) p + 1, so m v - w overlapped slots and w + 1 activations at most.
constexpr bool overlap_invariants(int p, int v, int m) {
    const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
    const auto o = ppsched::generate<interleaved_1f1b_overlap>(cfg);
    if (!ppsched::validate(o)) return false;
    for (int r = 0; r < p; ++r) {
        if (ppsched_test::idle_count(o, r) != 0) return false;
        if (ppsched_test::count_kind(o, r, action_kind::forward) != m * v) return false;
        if (ppsched_test::count_kind(o, r, action_kind::full_backward) != m * v) return false;
        const int warmup = 2 * (p - 1 - r) + (v - 1) * p + 1;
        if (ppsched_test::overlap_count(o, r) != m * v - warmup) return false;
        if (ppsched_test::peak_activations(o, r) != warmup + 1) return false;
        for (const auto& s : o.rank(r))
            if (s->stage() % p != r) return false;
    }
    return true;
}

// Splitting every overlapped slot into its forward then its backward gives Megatron's order with
// one more warm-up forward: the same forwards and backwards in the same sequence.
constexpr bool splits_into_megatron_sequence(int p, int v, int m) {
    const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
    const auto o = ppsched::generate<interleaved_1f1b_overlap>(cfg);
    const auto megatron = ppsched::generate<ppsched::megatron_interleaved>(cfg);
    for (int r = 0; r < p; ++r) {
        // Forwards in order, backwards in order: each matches Megatron's.
        std::size_t f = 0, b = 0;
        auto next_of = [&](action_kind k, std::size_t& i) -> const ppsched::action* {
            const auto& row = megatron.rank(r);
            while (i < row.size() && row[i]->kind() != k) ++i;
            return i < row.size() ? &*row[i++] : nullptr;
        };
        for (const auto& s : o.rank(r)) {
            std::array<ppsched::action, 2> parts;
            const int n = s->parts(parts);
            for (int i = 0; i < n; ++i) {
                const auto& part = parts[static_cast<std::size_t>(i)];
                const ppsched::action* expected = part.kind() == action_kind::forward
                                                      ? next_of(action_kind::forward, f)
                                                      : next_of(action_kind::full_backward, b);
                if (expected == nullptr || !(*expected == part)) return false;
            }
        }
    }
    return true;
}

// With one stage per rank it is one_f_one_b_overlap.
constexpr bool one_stage_is_one_f_one_b_overlap(int p, int m) {
    const config cfg{.ranks = p, .microbatches = m};
    return ppsched::generate<interleaved_1f1b_overlap>(cfg) ==
           ppsched::generate<ppsched::one_f_one_b_overlap>(cfg);
}

bool accepts(const config& cfg) {
    try {
        interleaved_1f1b_overlap{}.check(cfg);
        return true;
    } catch (const ppsched::config_error&) {
        return false;
    }
}

} // namespace

TEST_CASE("interleaved_1f1b_overlap overlaps every steady forward with a backward and validates",
          "[interleaved_1f1b_overlap][schedule]") {
    STATIC_REQUIRE(overlap_invariants(1, 3, 2));
    STATIC_REQUIRE(overlap_invariants(2, 2, 4));
    STATIC_REQUIRE(overlap_invariants(2, 3, 6));
    STATIC_REQUIRE(overlap_invariants(4, 2, 8));
    STATIC_REQUIRE(overlap_invariants(4, 3, 12));
    STATIC_REQUIRE(overlap_invariants(3, 4, 9));
    STATIC_REQUIRE(overlap_invariants(8, 2, 16));
    STATIC_REQUIRE(splits_into_megatron_sequence(4, 2, 8));
    STATIC_REQUIRE(splits_into_megatron_sequence(3, 3, 12));
    STATIC_REQUIRE(one_stage_is_one_f_one_b_overlap(4, 8));
    STATIC_REQUIRE(one_stage_is_one_f_one_b_overlap(3, 9));
}

TEST_CASE("interleaved_1f1b_overlap rejects the microbatch counts that can deadlock",
          "[interleaved_1f1b_overlap][schedule][errors]") {
    CHECK_THROWS_WITH(ppsched::generate<interleaved_1f1b_overlap>(
                          config{.ranks = 4, .stages_per_rank = 2, .microbatches = 6}),
                      Catch::Matchers::StartsWith("interleaved_1f1b_overlap: microbatches (6) "
                                                  "must be a multiple of ranks (4): ") &&
                          Catch::Matchers::Contains("deadlock"));
    CHECK_THROWS_WITH(ppsched::generate<interleaved_1f1b_overlap>(
                          config{.ranks = 4, .stages_per_rank = 2, .microbatches = 4}),
                      Catch::Matchers::StartsWith("interleaved_1f1b_overlap: microbatches (4) "
                                                  "must be >= 2 * ranks (8): "));
    // The documented deadlock: what the visualizer would generate for 4 ranks, 2 stages per
    // rank and 6 microbatches (Megatron's table with group size 4, warm-up + 1, pairs fused).
    const config cfg{.ranks = 4, .stages_per_rank = 2, .microbatches = 6};
    const auto table = ppsched::detail::megatron_schedule_table(6, 2, 4);
    ppsched::order o(cfg);
    for (int r = 0; r < 4; ++r)
        ppsched::detail::append_megatron_rank(
            o.rank(r), cfg, r, table, ppsched::detail::megatron_warmup(cfg, r, 4) + 1, true);
    const auto sim = ppsched::simulate(o);
    CHECK(sim.status == ppsched::simulation_status::deadlock);
    CHECK_FALSE(ppsched::validate(o));
}

TEST_CASE("every accepted interleaved_1f1b_overlap order validates, lowers and simulates "
          "without deadlock",
          "[interleaved_1f1b_overlap][schedule][sweep]") {
    int accepted = 0, rejected = 0;
    for (int p = 1; p <= 8; ++p)
        for (int v = 1; v <= 4; ++v)
            for (int m = 1; m <= 40; ++m) {
                const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
                INFO("ranks=" << p << " stages_per_rank=" << v << " microbatches=" << m);
                const bool ok = accepts(cfg);
                CHECK(ok == (m % p == 0 && m >= 2 * p));
                if (!ok) {
                    ++rejected;
                    continue;
                }
                ++accepted;
                const auto o = ppsched::generate<interleaved_1f1b_overlap>(cfg);
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
    CHECK(accepted > 250);
    CHECK(rejected > 800);
}

TEST_CASE("interleaved_1f1b_overlap idles (p - 1)(F + B) per rank in chunk units when a pair "
          "costs F + B, and saves F + B - F&B per overlapped slot of the last rank otherwise",
          "[interleaved_1f1b_overlap][schedule][timing]") {
    int checked = 0;
    for (const auto& [f, b] : {std::pair{1.0, 2.0}, std::pair{2.0, 3.0}})
        for (int p = 1; p <= 6; ++p)
            for (int v = 1; v <= 4; ++v)
                for (int m = 2 * p; m <= 4 * p; m += p) {
                    const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
                    INFO("ranks=" << p << " stages_per_rank=" << v << " microbatches=" << m
                                  << " F=" << f << " B=" << b);
                    const auto o = ppsched::generate<interleaved_1f1b_overlap>(cfg);
                    const auto sum = ppsched::simulate(o, ppsched::cost_model::uniform_fb(f, b));
                    REQUIRE(sum);
                    CHECK(sum.makespan == (m * v + p - 1) * (f + b));
                    for (const auto& rank : sum.ranks) CHECK(rank.idle == (p - 1) * (f + b));
                    // Overlapping hides F + B - F&B per pair; the last rank sets the pace.
                    auto costs = ppsched::cost_model::uniform_fb(f, b);
                    costs.uniform.overlap_f_b = b + 0.5;
                    const auto overlapped = ppsched::simulate(o, costs);
                    REQUIRE(overlapped);
                    const double last_busy =
                        m * v * (f + b) - ppsched_test::overlap_count(o, p - 1) * (f - 0.5);
                    CHECK(overlapped.ranks[static_cast<std::size_t>(p - 1)].busy == last_busy);
                    CHECK(overlapped.makespan == last_busy + (p - 1) * (f + b));
                    ++checked;
                }
    CHECK(checked == 2 * 6 * 4 * 3);
}
