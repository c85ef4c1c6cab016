#pragma once
// The checks shared by the controllable-memory V schedules (v_half, v_min): they differ only in
// the planner's kind, which of the authors' passes is their reference, and the memory the paper
// states. Each test file instantiates these with its schedule's traits.

#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules/detail/v_greedy.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <utility>
#include <vector>

#include "support/v_greedy_reference.hpp"
#include "support/zb_checks.hpp"
#include "support/zb_measures.hpp"

namespace ppsched_test {

constexpr ppsched::config v_cfg(int p, int m) {
    return ppsched::config{.ranks = p, .stages_per_rank = 2, .microbatches = m};
}

/// `Traits`: `schedule` (the policy type), `kind` (its v_greedy_kind), `reference_half` (which
/// of the authors' passes it transcribes) and `stated_peak(p)` (the paper's memory, in
/// activations of a full rank).
template <class Traits>
constexpr bool v_plans_at_compile_time() {
    using S = typename Traits::schedule;
    return ppsched::validate(ppsched::generate<S>(v_cfg(4, 8))) &&
           ppsched::validate(ppsched::generate<S>(v_cfg(3, 2))) &&
           ppsched::generate<S>(v_cfg(5, 6)).action_count() == 6 * 5 * 6 &&
           ppsched::validate(ppsched::generate<S>(v_cfg(1, 1)));
}

/// The fast construction equals the direct transcription of the authors' passes over a grid
/// and some longer runs.
template <class Traits>
void check_v_matches_reference() {
    auto flat_reference = [](int p, int m) { // the reference plan as the fast one keeps it
        std::vector<std::vector<int>> out;
        for (const auto& lists : v_greedy_reference(p, m, Traits::reference_half)) {
            std::vector<int> row;
            for (const auto& l : lists) row.insert(row.end(), l.begin(), l.end());
            out.push_back(row);
        }
        return out;
    };
    auto fast = [](int p, int m) {
        ppsched::detail::v_greedy g(p, m, Traits::kind);
        g.build();
        return g.slots();
    };
    int compared = 0;
    for (int p = 1; p <= 10; ++p)
        for (int m = 1; m <= 3 * p + 4; ++m) {
            INFO("p=" << p << " m=" << m);
            CHECK(fast(p, m) == flat_reference(p, m));
            ++compared;
        }
    // Longer runs, and ranks beyond the grid.
    for (const auto& [p, m] : std::vector<std::pair<int, int>>{
             {1, 60}, {2, 61}, {3, 70}, {4, 64}, {5, 40}, {12, 13}, {12, 30}, {16, 17}, {16, 40}}) {
        INFO("p=" << p << " m=" << m);
        CHECK(fast(p, m) == flat_reference(p, m));
        ++compared;
    }
    CHECK(compared == 214);
}

/// The peak activation memory is the paper's once there are as many microbatches as ranks,
/// and never above it.
template <class Traits>
void check_v_peak_memory() {
    for (int p = 1; p <= 12; ++p)
        for (int m = 1; m <= 3 * p + 2; ++m) {
            INFO("p=" << p << " m=" << m);
            const auto sim = ppsched::simulate(
                ppsched::generate<typename Traits::schedule>(v_cfg(p, m)), zb_costs(1, 1, 1, 0, 2));
            REQUIRE(sim);
            if (m >= p)
                CHECK(peak_activations(sim) == Approx(Traits::stated_peak(p)));
            else
                CHECK(peak_activations(sim) <= Traits::stated_peak(p) + 1e-12);
        }
}

/// Every order validates, lowers and simulates under several cost sets.
template <class Traits>
void check_v_runs_everywhere() {
    const double sets[][4] = {{1, 1, 1, 0}, {1, 1.25, 0.75, 0}, {2, 1, 0.5, 0.5}, {0.5, 2, 1, 1.5}};
    for (int p = 1; p <= 8; ++p)
        for (int m = 1; m <= 3 * p + 2; ++m) {
            const ppsched::order o = ppsched::generate<typename Traits::schedule>(v_cfg(p, m));
            for (const auto& c : sets) {
                INFO("p=" << p << " m=" << m << " F=" << c[0] << " I=" << c[1] << " W=" << c[2]
                          << " comm=" << c[3]);
                CHECK(runs_everywhere(o, zb_costs(c[0], c[1], c[2], c[3], 2)).empty());
            }
        }
}

/// 8 ranks x 20000 microbatches: about a million actions (the authors' passes would take
/// minutes; this is a linear pass).
template <class Traits>
void check_v_many_microbatches() {
    const ppsched::order o = ppsched::generate<typename Traits::schedule>(v_cfg(8, 20000));
    CHECK(o.action_count() == 6u * 8 * 20000);
    CHECK(ppsched::validate(o));
}

} // namespace ppsched_test
