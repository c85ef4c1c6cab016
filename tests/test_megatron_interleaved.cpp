#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/schedules/interleaved_1f1b.hpp>
#include <ppsched/schedules/megatron_interleaved.hpp>
#include <ppsched/schedules/one_f_one_b.hpp>

#include <catch2/catch.hpp>

#include <string>

#include "support/schedule_properties.hpp"

using ppsched::action_kind;
using ppsched::config;
using ppsched::megatron_interleaved;

namespace {

// Megatron's interleaved 1F1B with group size g (0: ranks): no idle slot; each rank runs m * v
// forwards and full backwards; a microbatch's forwards visit the rank's chunks in increasing
// order and its backwards in decreasing order; rank r holds at most min(w + 1, m * v) chunk
// activations, w = 2 (p - 1 - r) + (v - 1) g being its warm-up (the paper's analysis: the
// warm-up forwards plus the one the first steady step adds before its backward frees one).
constexpr bool megatron_invariants(int p, int v, int m, int g) {
    const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
    const auto o = ppsched::generate(megatron_interleaved{.microbatch_group_size = g}, cfg);
    if (!ppsched::validate(o)) return false;
    const int group = g == 0 ? p : g;
    for (int r = 0; r < p; ++r) {
        if (ppsched_test::idle_count(o, r) != 0) return false;
        if (ppsched_test::overlap_count(o, r) != 0) return false;
        if (ppsched_test::count_kind(o, r, action_kind::forward) != m * v) return false;
        if (ppsched_test::count_kind(o, r, action_kind::full_backward) != m * v) return false;
        const int warmup = 2 * (p - 1 - r) + (v - 1) * group;
        const int bound = warmup + 1 < m * v ? warmup + 1 : m * v;
        if (ppsched_test::peak_activations(o, r) != bound) return false;
        // Loop placement: every action of rank r runs one of its stages.
        for (const auto& s : o.rank(r))
            if (s->stage() % p != r) return false;
    }
    return true;
}

// The group size as a template argument: a configured policy is a structural constant.
constexpr bool template_argument_policy() {
    constexpr config cfg{.ranks = 2, .stages_per_rank = 2, .microbatches = 8};
    const auto by_value = ppsched::generate(megatron_interleaved{.microbatch_group_size = 4}, cfg);
    const auto by_template =
        ppsched::generate<megatron_interleaved{.microbatch_group_size = 4}>(cfg);
    const auto default_g = ppsched::generate<megatron_interleaved{}>(cfg);
    const auto g_is_ranks =
        ppsched::generate<megatron_interleaved{.microbatch_group_size = 2}>(cfg);
    return by_value == by_template && default_g == g_is_ranks && !(by_value == default_g);
}

// With g = ranks, Megatron's order is PyTorch's Interleaved1F1B without its idle slots (where
// both accept: microbatches a multiple of ranks).
constexpr bool equals_interleaved_1f1b(int p, int v, int m) {
    const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
    auto torch = ppsched::generate<ppsched::interleaved_1f1b>(cfg);
    torch.drop_idle();
    return ppsched::generate<megatron_interleaved>(cfg) == torch;
}

bool accepts(const config& cfg, int g) {
    try {
        megatron_interleaved{.microbatch_group_size = g}.check(cfg);
        return true;
    } catch (const ppsched::config_error&) {
        return false;
    }
}

// Megatron's rules, written from its source independently of `check`.
bool megatron_rules(int p, int m, int g) { return g >= p && g <= m && (m % g == 0 || m % g >= p); }

} // namespace

TEST_CASE("megatron_interleaved bounds activations by its warm-up and validates",
          "[megatron_interleaved][schedule]") {
    STATIC_REQUIRE(megatron_invariants(2, 2, 2, 0));
    STATIC_REQUIRE(megatron_invariants(2, 2, 8, 3)); // short last group of 2 = ranks
    STATIC_REQUIRE(megatron_invariants(4, 2, 8, 4));
    STATIC_REQUIRE(megatron_invariants(4, 2, 8, 8)); // g = m: breadth-first-like
    STATIC_REQUIRE(megatron_invariants(4, 3, 11, 6));
    STATIC_REQUIRE(megatron_invariants(3, 4, 9, 0));
    STATIC_REQUIRE(megatron_invariants(1, 3, 5, 2)); // one rank: documented extension
    STATIC_REQUIRE(megatron_invariants(8, 2, 16, 0));
}

TEST_CASE("megatron_interleaved takes its group size as a template argument",
          "[megatron_interleaved][schedule]") {
    STATIC_REQUIRE(template_argument_policy());
    STATIC_REQUIRE(megatron_interleaved{}.group_size(config{.ranks = 4}) == 4);
    STATIC_REQUIRE(
        megatron_interleaved{.microbatch_group_size = 6}.group_size(config{.ranks = 4}) == 6);
}

TEST_CASE("megatron_interleaved with the default group size is PyTorch's Interleaved1F1B "
          "without idle slots",
          "[megatron_interleaved][schedule]") {
    STATIC_REQUIRE(equals_interleaved_1f1b(4, 2, 8));
    STATIC_REQUIRE(equals_interleaved_1f1b(2, 3, 6));
    int compared = 0;
    for (int p = 1; p <= 8; ++p)
        for (int v = 2; v <= 4; ++v)
            for (int m = p; m <= 4 * p; m += p) {
                INFO("ranks=" << p << " stages_per_rank=" << v << " microbatches=" << m);
                CHECK(equals_interleaved_1f1b(p, v, m));
                ++compared;
            }
    CHECK(compared == 96);
}

TEST_CASE("megatron_interleaved rejects what Megatron rejects, explaining the dependency bubble",
          "[megatron_interleaved][schedule][errors]") {
    const config cfg{.ranks = 4, .stages_per_rank = 2, .microbatches = 9};
    CHECK_THROWS_WITH(
        ppsched::generate(megatron_interleaved{.microbatch_group_size = 4}, cfg),
        "megatron_interleaved: microbatches % microbatch_group_size must be 0 or >= ranks (got 9 "
        "% 4 = 1 with 4 ranks): the last group would hold fewer microbatches than ranks, so each "
        "of its chunks waits for the previous chunk's output from the last rank (a dependency "
        "bubble that costs throughput)");
    CHECK_THROWS_WITH(
        ppsched::generate(megatron_interleaved{.microbatch_group_size = 3}, cfg),
        Catch::Matchers::StartsWith("megatron_interleaved: microbatch_group_size (default: ranks) "
                                    "must be in [ranks, microbatches] = [4, 9] (got 3): ") &&
            Catch::Matchers::Contains("dependency bubble"));
    CHECK_THROWS_WITH(ppsched::generate(megatron_interleaved{.microbatch_group_size = 10}, cfg),
                      Catch::Matchers::Contains("= [4, 9] (got 10)"));
    CHECK_THROWS_WITH(ppsched::generate<megatron_interleaved>(
                          config{.ranks = 4, .stages_per_rank = 2, .microbatches = 3}),
                      Catch::Matchers::Contains("= [4, 3] (got 4)"));
    CHECK_THROWS_WITH(ppsched::generate<megatron_interleaved>(
                          config{.ranks = 4, .stages_per_rank = 1, .microbatches = 8}),
                      "megatron_interleaved: stages_per_rank must be >= 2 (got 1); with one stage "
                      "per rank Megatron runs its non-interleaved 1F1B, which is one_f_one_b");
    CHECK_THROWS_AS(ppsched::generate(megatron_interleaved{.microbatch_group_size = -4}, cfg),
                    ppsched::config_error);
    // Remainder >= ranks is fine: 9 % 5 = 4 = ranks.
    CHECK_NOTHROW(ppsched::generate(megatron_interleaved{.microbatch_group_size = 5}, cfg));

    // The same decision as Megatron's rules everywhere (one stage per rank aside).
    int agreed = 0;
    for (int p = 1; p <= 8; ++p)
        for (int m = 1; m <= 24; ++m)
            for (int g = 1; g <= m + 1; ++g) {
                INFO("ranks=" << p << " microbatches=" << m << " g=" << g);
                CHECK(accepts(config{.ranks = p, .stages_per_rank = 2, .microbatches = m}, g) ==
                      megatron_rules(p, m, g));
                ++agreed;
            }
    CHECK(agreed == 8 * (24 * 25 / 2 + 24));
}

TEST_CASE("every accepted megatron_interleaved order validates, lowers and simulates without "
          "deadlock",
          "[megatron_interleaved][schedule][sweep]") {
    int accepted = 0, rejected = 0;
    for (int p : {1, 2, 3, 4, 5, 8})
        for (int v = 1; v <= 4; ++v)
            for (int m = 1; m <= 20; ++m)
                for (int g = 1; g <= m; ++g) {
                    const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
                    INFO("ranks=" << p << " stages_per_rank=" << v << " microbatches=" << m
                                  << " g=" << g);
                    const bool ok = accepts(cfg, g);
                    CHECK(ok == (v >= 2 && megatron_rules(p, m, g)));
                    if (!ok) {
                        ++rejected;
                        continue;
                    }
                    ++accepted;
                    const auto o =
                        ppsched::generate(megatron_interleaved{.microbatch_group_size = g}, cfg);
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
    CHECK(accepted > 1000);
    CHECK(rejected > 1000);
}

TEST_CASE("every rank of megatron_interleaved idles (p - 1)(F + B) in chunk units, whatever the "
          "group size",
          "[megatron_interleaved][schedule][timing]") {
    // Megatron's analysis: the interleaved bubble is (p - 1)(F + B) with per-chunk costs, i.e.
    // (p - 1)(F + B) / v of a rank's whole-model costs; the rank waits for the first forward to
    // reach it and the last backward to leave it, nothing in between.
    int checked = 0;
    for (const auto& [f, b] : {std::pair{1.0, 2.0}, std::pair{3.0, 5.0}, std::pair{2.0, 2.0}})
        for (int p : {1, 2, 3, 4, 6})
            for (int v = 2; v <= 4; ++v)
                for (int m = p; m <= 3 * p + 2; ++m)
                    for (int g = p; g <= m; ++g) {
                        const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
                        if (!accepts(cfg, g)) continue;
                        INFO("ranks=" << p << " stages_per_rank=" << v << " microbatches=" << m
                                      << " g=" << g << " F=" << f << " B=" << b);
                        const auto sim = ppsched::simulate(
                            ppsched::generate(megatron_interleaved{.microbatch_group_size = g},
                                              cfg),
                            ppsched::cost_model::uniform_fb(f, b));
                        REQUIRE(sim);
                        for (const auto& rank : sim.ranks) {
                            CHECK(rank.busy == m * v * (f + b));
                            CHECK(rank.idle == (p - 1) * (f + b));
                        }
                        ++checked;
                    }
    CHECK(checked > 500);
}

TEST_CASE("megatron_interleaved holds 1 + (p - 1)/(p v) times 1F1B's activations on rank 0",
          "[megatron_interleaved][schedule][timing][memory]") {
    // Narayanan et al. (SC 2021): with v chunks per rank the first rank stores
    // (1 + (p - 1)/(p v)) times the activations of 1F1B. A chunk holds 1/v of the rank's layers:
    // a chunk's forward keeps 1 unit, a whole-rank (1F1B) stage's keeps v units.
    int checked = 0;
    for (int p = 2; p <= 8; ++p)
        for (int v = 2; v <= 4; ++v)
            for (int m = 2 * p; m <= 4 * p; m += p) {
                INFO("ranks=" << p << " stages_per_rank=" << v << " microbatches=" << m);
                ppsched::cost_model chunk;
                chunk.uniform.activation = 1;
                ppsched::cost_model whole;
                whole.uniform.activation = v;
                const auto interleaved =
                    ppsched::simulate(ppsched::generate<megatron_interleaved>(config{
                                          .ranks = p, .stages_per_rank = v, .microbatches = m}),
                                      chunk);
                const auto one_f_one_b = ppsched::simulate(
                    ppsched::generate<ppsched::one_f_one_b>(config{.ranks = p, .microbatches = m}),
                    whole);
                REQUIRE(interleaved);
                REQUIRE(one_f_one_b);
                const double ratio =
                    interleaved.ranks[0].peak_activations / one_f_one_b.ranks[0].peak_activations;
                CHECK(ratio == Approx(1.0 + (p - 1.0) / (p * v)));
                // Exactly: p v + p - 1 chunk activations against 1F1B's p whole-rank ones.
                CHECK(interleaved.ranks[0].peak_activations == p * v + p - 1);
                CHECK(one_f_one_b.ranks[0].peak_activations == p * v);
                // A larger group size g holds (v - 1)(g - p) more: 2p - 1 + (v - 1) g in all.
                for (int g = p + 1; g <= m; ++g) {
                    const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
                    if (!accepts(cfg, g)) continue;
                    const auto grouped = ppsched::simulate(
                        ppsched::generate(megatron_interleaved{.microbatch_group_size = g}, cfg),
                        chunk);
                    const int expected = 2 * p - 1 + (v - 1) * g;
                    CHECK(grouped.ranks[0].peak_activations ==
                          (expected < m * v ? expected : m * v));
                }
                ++checked;
            }
    CHECK(checked == 63);
}
