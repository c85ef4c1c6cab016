#include <ppsched/algorithms/memory_timeline.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/registry.hpp>
#include <ppsched/schedules.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

using ppsched::config;
using ppsched::cost_model;
using ppsched::memory_point;
using ppsched::memory_timeline;
using ppsched::simulate;

namespace {

constexpr double gpipe_2x2_peak() {
    const auto o = ppsched::generate<ppsched::gpipe>(config{.ranks = 2, .microbatches = 2});
    const auto curves = memory_timeline(simulate(o), cost_model{});
    double peak = 0;
    for (const auto& p : curves[0]) peak = peak < p.activations ? p.activations : peak;
    return peak;
}

} // namespace

TEST_CASE("memory_timeline works at compile time", "[memory_timeline]") {
    STATIC_REQUIRE(gpipe_2x2_peak() == 2);
}

TEST_CASE("memory_timeline of GPipe 2x2 matches the curves worked out by hand",
          "[memory_timeline]") {
    // F = 1, B = 2, activation 1. Rank 0: F0 [0,1], F1 [1,2], B0 [5,7], B1 [7,9];
    // rank 1: F0 [1,2], F1 [2,3], B0 [3,5], B1 [5,7]. A forward allocates at its start, a
    // backward frees at its end.
    const auto o = ppsched::generate<ppsched::gpipe>(config{.ranks = 2, .microbatches = 2});
    const auto curves = memory_timeline(simulate(o), cost_model{});
    REQUIRE(curves.size() == 2);
    CHECK(curves[0] == std::vector<memory_point>{{0, 0}, {0, 1}, {1, 2}, {7, 1}, {9, 0}});
    CHECK(curves[1] == std::vector<memory_point>{{0, 0}, {1, 1}, {2, 2}, {5, 1}, {7, 0}});
}

TEST_CASE("memory_timeline's maximum is the simulation's peak on every rank of every schedule",
          "[memory_timeline]") {
    cost_model costs;
    costs.uniform.forward = 1.5;
    costs.uniform.backward_input = 1;
    costs.uniform.backward_weight = 0.75;
    costs.uniform.activation = 0.3; // not exact in binary: the sums must still agree exactly
    costs.input_grad_frees = 0.4;
    std::size_t checked = 0;
    for (const auto& entry : ppsched::builtin_schedules().entries()) {
        for (const int ranks : {2, 4}) {
            config cfg;
            cfg.ranks = ranks;
            cfg.microbatches = 2 * ranks;
            cfg.stages_per_rank = entry.default_stages_per_rank;
            ppsched::order o;
            try {
                o = ppsched::builtin_schedules().generate(entry.name, cfg, {});
            } catch (const ppsched::config_error&) {
                continue; // a configuration this schedule does not support
            }
            const auto sim = simulate(o, costs);
            if (!sim) continue;
            const auto curves = memory_timeline(sim, costs);
            INFO(entry.name << " with " << ranks << " ranks");
            REQUIRE(curves.size() == sim.ranks.size());
            for (std::size_t r = 0; r < curves.size(); ++r) {
                double peak = 0;
                for (std::size_t i = 0; i < curves[r].size(); ++i) {
                    peak = std::max(peak, curves[r][i].activations);
                    if (i > 0) CHECK(curves[r][i - 1].time <= curves[r][i].time);
                }
                CHECK(peak == sim.ranks[r].peak_activations);
                // Everything allocated is freed by the end of the step.
                CHECK(curves[r].back().activations == Approx(0).margin(1e-9));
            }
            ++checked;
        }
    }
    CHECK(checked > 10);
}
