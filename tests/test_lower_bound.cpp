// Tests of the makespan lower bound (ppsched/tune/lower_bound.hpp): closed forms derived by hand,
// and soundness: no built-in schedule's simulated makespan is ever below it.

#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/registry.hpp>
#include <ppsched/tune/lower_bound.hpp>
#include <ppsched/tune/tune.hpp>

#include <catch2/catch.hpp>

#include "support/tune_suite.hpp"

#include <algorithm>

using ppsched::tune_problem;

TEST_CASE("lower_bound: uniform costs, no limit: the last rank starts after p - 1 forwards",
          "[lower_bound]") {
    for (int p : {1, 2, 3, 5, 8})
        for (int m : {p, 2 * p + 1}) {
            tune_problem prob;
            prob.ranks = p;
            prob.microbatches = m;
            INFO("p=" << p << " m=" << m);
            CHECK(ppsched::lower_bound(prob).value == 3.0 * m + p - 1);
        }
}

TEST_CASE("lower_bound: one microbatch: its round trip and its last W", "[lower_bound]") {
    for (int p : {1, 2, 5}) {
        tune_problem prob;
        prob.ranks = p;
        CHECK(ppsched::lower_bound(prob).value == 2.0 * p + 1);
    }
}

TEST_CASE("lower_bound: a message time delays every hop between ranks", "[lower_bound]") {
    // Fused backward, one microbatch: the only order is the round trip, 2 (p - 1) messages.
    tune_problem prob;
    prob.ranks = 4;
    prob.microbatches = 1;
    prob.backward = ppsched::backward_mode::fused;
    prob.costs.p2p_latency = 0.25;
    CHECK(ppsched::lower_bound(prob).value == Approx(4 * 1 + 4 * 2 + 6 * 0.25));
}

TEST_CASE("lower_bound: the memory-time part and the least memory per rank", "[lower_bound]") {
    tune_problem prob;
    prob.ranks = 2;
    prob.microbatches = 4;
    prob.memory_limit = 1;
    const auto b = ppsched::lower_bound(prob);
    // Rank 0 holds each microbatch's activation for F + F + I + I + W = 5 units, one at a time.
    CHECK(b.memory == 20);
    CHECK(b.memory_rank == 0);
    REQUIRE(b.least_memory.size() == 2);
    CHECK(b.least_memory[0] == 1);
    prob.stages_per_rank = 2;
    prob.costs.uniform.parameters = 0.5;
    prob.memory_limit = 10;
    CHECK(ppsched::lower_bound(prob).least_memory[1] == 3); // 2 x 0.5 + 2 activations
}

TEST_CASE("lower_bound: no built-in schedule beats it on the suite", "[lower_bound]") {
    namespace dt = ppsched::detail::tune;
    for (const auto& sp : ppsched_test::tune_suite()) {
        const auto bound = ppsched::lower_bound(sp.problem);
        for (const auto& e : ppsched::builtin_schedules().entries()) {
            if (e.placement != sp.problem.placement) continue;
            ppsched::order o;
            try {
                o = e.generate(sp.problem.cfg(), dt::candidate_params(e, sp.problem));
            } catch (const ppsched::config_error&) {
                continue;
            }
            const auto sim = ppsched::simulate(o, sp.problem.costs, {.timeline = false});
            if (!sim) continue;
            double peak = 0;
            for (const auto& r : sim.ranks) peak = std::max(peak, r.peak_memory);
            // The memory part holds only for orders within the limit.
            const double b = sp.problem.memory_limit && peak > *sp.problem.memory_limit
                                 ? bound.one_machine
                                 : bound.value;
            INFO(sp.name << " " << e.pytorch_name);
            CHECK(b <= sim.makespan * (1 + 1e-12));
        }
    }
}
