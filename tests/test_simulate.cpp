#include <ppsched/algorithms/add_send_recv.hpp>
#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/registry.hpp>
#include <ppsched/schedules.hpp>

#include <catch2/catch.hpp>

#include "support/rows_by_value.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <filesystem>
#include <iterator>
#include <optional>
#include <ranges>
#include <string>
#include <type_traits>
#include <vector>

using ppsched::action;
using ppsched::config;
using ppsched::cost_model;
using ppsched::order;
using ppsched::simulate;
using ppsched::simulation_status;
using ppsched::stream;

namespace fs = std::filesystem;

namespace {

// --- Small orders written out by hand; expected numbers derived in the comments -------------

// 1F1B on 2 ranks, 2 microbatches (stage r on rank r).
constexpr order two_rank_1f1b() {
    order o(config{.ranks = 2, .microbatches = 2});
    for (action a : {action::forward(0, 0), action::forward(0, 1), action::full_backward(0, 0),
                     action::full_backward(0, 1)})
        o.push(0, a);
    for (action a : {action::forward(1, 0), action::full_backward(1, 0), action::forward(1, 1),
                     action::full_backward(1, 1)})
        o.push(1, a);
    return o;
}

// The same with the sends and receives PyTorch's runtime would execute.
constexpr order two_rank_1f1b_lowered() {
    order o(config{.ranks = 2, .microbatches = 2});
    for (action a : {action::forward(0, 0), action::send_f(0, 0), action::forward(0, 1),
                     action::send_f(0, 1), action::recv_b(0, 0), action::full_backward(0, 0),
                     action::recv_b(0, 1), action::full_backward(0, 1)})
        o.push(0, a);
    for (action a : {action::recv_f(1, 0), action::forward(1, 0), action::full_backward(1, 0),
                     action::send_b(1, 0), action::recv_f(1, 1), action::forward(1, 1),
                     action::full_backward(1, 1), action::send_b(1, 1)})
        o.push(1, a);
    return o;
}

constexpr cost_model f1_b2 = cost_model::uniform_fb(1, 2);

constexpr cost_model with_latency(cost_model c, double latency) {
    c.p2p_latency = latency;
    return c;
}

bool near(double a, double b) { return std::abs(a - b) <= 1e-9 * (1 + std::abs(a) + std::abs(b)); }

// Every CSV of a conformance folder.
std::vector<fs::path> csv_files(const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".csv") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    return files;
}

} // namespace

// --- Hand-computed examples -------------------------------------------------------------------

TEST_CASE("a 2-rank 1F1B takes (m + p - 1)(F + B) with F = 1, B = 2, at compile time",
          "[simulate][constexpr]") {
    // rank 0: F0 [0,1] F1 [1,2]; rank 1: F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7];
    // rank 0: B0 waits for 1B0 -> [4,6], B1 waits for 1B1 -> [7,9]. Makespan 9 = 3 * 3.
    STATIC_REQUIRE(simulate(two_rank_1f1b(), f1_b2).makespan == 9);
    STATIC_REQUIRE(simulate(two_rank_1f1b(), f1_b2).timeline[3].start == 7);
    STATIC_REQUIRE(simulate(two_rank_1f1b_lowered(), f1_b2).makespan == 9);
    // With a latency of 0.5 on each of the 4 dependency hops on the critical path:
    // 1F0 [1.5,2.5] 1B0 [2.5,4.5] 1F1 [4.5,5.5] 1B1 [5.5,7.5] 0B1 [8,10].
    STATIC_REQUIRE(simulate(two_rank_1f1b(), with_latency(f1_b2, 0.5)).makespan == 10);
}

TEST_CASE("generated schedules simulate at compile time", "[simulate][constexpr]") {
    // (m + p - 1)(F + B) and m(F + B) + (p - 1)(F + B)/v, as in docs/simulation.md.
    STATIC_REQUIRE(
        simulate(ppsched::generate<ppsched::one_f_one_b>(config{.ranks = 4, .microbatches = 8}),
                 f1_b2)
            .makespan == 33);
    STATIC_REQUIRE(simulate(ppsched::generate<ppsched::interleaved_1f1b>(
                                config{.ranks = 4, .stages_per_rank = 2, .microbatches = 8}),
                            cost_model::uniform_fb(0.5, 1))
                       .makespan == 8 * 3 + 3 * 3 / 2.0);
    STATIC_REQUIRE(simulate(ppsched::lower(ppsched::generate<ppsched::one_f_one_b>(
                                config{.ranks = 2, .microbatches = 4})),
                            f1_b2)
                       .makespan == 15);
}

TEST_CASE("the 2-rank 1F1B timeline, busy, idle, bubble and memory are as derived by hand",
          "[simulate]") {
    const auto sim = simulate(two_rank_1f1b(), f1_b2);
    REQUIRE(sim);
    REQUIRE(sim.timeline.size() == 8);
    const double expected[8][2] = {{0, 1}, {1, 2}, {4, 6}, {7, 9},  // rank 0
                                   {1, 2}, {2, 4}, {4, 5}, {5, 7}}; // rank 1
    for (std::size_t i = 0; i < 8; ++i) {
        INFO(i);
        CHECK(sim.timeline[i].rank == (i < 4 ? 0 : 1));
        CHECK(sim.timeline[i].slot == static_cast<int>(i % 4));
        CHECK(sim.timeline[i].on == stream::compute);
        CHECK(sim.timeline[i].ran);
        CHECK(sim.timeline[i].start == expected[i][0]);
        CHECK(sim.timeline[i].end == expected[i][1]);
    }
    CHECK(sim.makespan == 9);
    CHECK(sim.total_compute == 12);
    CHECK(sim.ideal == 6);
    CHECK(sim.bubble_ratio == Approx(0.5));        // (9 - 6) / 6
    CHECK(sim.bubble_fraction == Approx(1 / 3.0)); // 6 idle of 18
    for (const auto& r : sim.ranks) {
        CHECK(r.busy == 6);
        CHECK(r.idle == 3);
        CHECK(r.bubble_fraction == Approx(1 / 3.0));
        CHECK(r.end == (r.rank == 0 ? 9 : 7));
    }
    // Rank 0 holds both microbatches from 0F1's start; rank 1 never more than one.
    CHECK(sim.ranks[0].peak_activations == 2);
    CHECK(sim.ranks[0].peak_activations_at == 1);
    CHECK(sim.ranks[1].peak_activations == 1);
    CHECK(sim.ranks[1].peak_activations_at == 1);
    CHECK_FALSE(sim.lowered);
}

TEST_CASE("a receive posted late delays the transfer; with no latency lowering changes nothing",
          "[simulate][lowered]") {
    const auto zero = simulate(two_rank_1f1b_lowered(), f1_b2);
    REQUIRE(zero);
    CHECK(zero.lowered);
    CHECK(zero.makespan == simulate(two_rank_1f1b(), f1_b2).makespan);

    // Latency 0.5. Rank 1: RECV_F0 posted at 0, 0SEND_F0 at 1 -> F0 [1.5,2.5], B0 [2.5,4.5],
    // SEND_B0 at 4.5; RECV_F1 is posted only at 4.5 although 0SEND_F1 went at 2, so F1 starts
    // at 4.5 + 0.5 = 5 (the compute-only replay starts it at 4.5): F1 [5,6], B1 [6,8].
    // Rank 0: RECV_B0 posted at 2 -> B0 [5,7]; RECV_B1 posted at 7, send at 8 -> B1 [8.5,10.5].
    const auto late = simulate(two_rank_1f1b_lowered(), with_latency(f1_b2, 0.5));
    REQUIRE(late);
    CHECK(late.makespan == 10.5);
    const auto& t = late.timeline;
    CHECK(t[5].act == action::full_backward(0, 0));
    CHECK(t[5].start == 5);
    CHECK(t[12].act == action::recv_f(1, 1));
    CHECK(t[12].on == stream::p2p);
    CHECK(t[12].start == 4.5); // posted
    CHECK(t[12].end == 5);     // data arrived
    CHECK(t[13].start == 5);
    CHECK(t[7].start == 8.5);
    CHECK(t[1].act == action::send_f(0, 0));
    CHECK(t[1].start == 1);
    CHECK(t[1].end == 1); // a send completes at once
    CHECK(late.ranks[0].busy == 6);
}

TEST_CASE("the per-message transfer time adds to the latency", "[simulate]") {
    cost_model c = f1_b2;
    c.p2p_latency = 0.25;
    c.p2p_transfer = 0.25;
    CHECK(simulate(two_rank_1f1b(), c).makespan == 10);
}

TEST_CASE("a deadlock is reported with the waiting ranks and actions", "[simulate][deadlock]") {
    // Rank 0 runs 0B0 before 0F1, rank 1 starts with 1F1: each waits for the other.
    order o(config{.ranks = 2, .microbatches = 2});
    for (action a : {action::forward(0, 0), action::full_backward(0, 0), action::forward(0, 1),
                     action::full_backward(0, 1)})
        o.push(0, a);
    for (action a : {action::forward(1, 1), action::full_backward(1, 1), action::forward(1, 0),
                     action::full_backward(1, 0)})
        o.push(1, a);
    const auto sim = simulate(o);
    REQUIRE(sim.status == simulation_status::deadlock);
    CHECK_FALSE(sim);
    REQUIRE(sim.stuck.size() == 2);
    CHECK(sim.stuck[0].rank == 0);
    CHECK(sim.stuck[0].slot == 1);
    CHECK(sim.stuck[0].at == action::full_backward(0, 0));
    CHECK(sim.stuck[0].waiting_for == action::full_backward(1, 0));
    CHECK(sim.stuck[0].waiting_rank == 1);
    CHECK(sim.stuck[1].rank == 1);
    CHECK(sim.stuck[1].slot == 0);
    CHECK(sim.stuck[1].waiting_for == action::forward(0, 1));
    CHECK(sim.stuck[1].waiting_rank == 0);
    CHECK(sim.timeline[0].ran);
    CHECK_FALSE(sim.timeline[1].ran);
    CHECK(ppsched::describe_problem(sim) ==
          "deadlock: rank 0 waits at slot 1 (0B0) for 1B0 (or 1I0) on rank 1; rank 1 waits at "
          "slot 0 (1F1) for 0F1 on rank 0");
    STATIC_REQUIRE(simulate(order(config{.ranks = 1, .microbatches = 1},
                                  {{action::full_backward(0, 0), action::forward(0, 0)}}))
                       .status == simulation_status::deadlock);
}

TEST_CASE("a lowered order that never sends is reported as waiting for the SEND",
          "[simulate][deadlock]") {
    // Rank 0 forgets SEND_F of microbatch 1; rank 1 receives microbatch 0, then waits at 1F1.
    // With a latency of 0.5: 0F0 runs [0, 1], its SEND_F is issued at 1, so 1F0's data arrives
    // at 1.5 (the RECV_F's end) and 1F0 runs [1.5, 2.5]; rank 0's last forward ends at 3.
    const order o(config{.ranks = 2, .microbatches = 3},
                  {{action::forward(0, 0), action::send_f(0, 0), action::forward(0, 1),
                    action::forward(0, 2), action::send_f(0, 2)},
                   {action::recv_f(1, 0), action::forward(1, 0), action::recv_f(1, 1),
                    action::forward(1, 1), action::recv_f(1, 2), action::forward(1, 2)}});
    const auto sim = simulate(o, with_latency(f1_b2, 0.5));
    REQUIRE(sim.status == simulation_status::deadlock);
    REQUIRE(sim.stuck.size() == 1);
    CHECK(sim.stuck[0].rank == 1);
    CHECK(sim.stuck[0].slot == 3);
    CHECK(sim.stuck[0].at == action::forward(1, 1));
    CHECK(sim.stuck[0].waiting_for == action::send_f(0, 1));
    CHECK(sim.stuck[0].waiting_rank == 0);
    REQUIRE(sim.timeline.size() == 11);
    CHECK(sim.timeline[5].act == action::recv_f(1, 0));
    CHECK(sim.timeline[5].end == 1.5);
    CHECK(sim.timeline[6].start == 1.5);
    CHECK(sim.timeline[7].ran);       // RECV_F 1,1 is posted
    CHECK_FALSE(sim.timeline[8].ran); // 1F1 never runs
    CHECK(sim.ranks[1].end == 2.5);
    CHECK(sim.makespan == 3);
    STATIC_REQUIRE(
        simulate(order(config{.ranks = 2, .microbatches = 1},
                       {{action::forward(0, 0)}, {action::recv_f(1, 0), action::forward(1, 0)}}))
            .stuck[0]
            .waiting_for == action::send_f(0, 0));
}

TEST_CASE("actions that cannot be simulated are reported, not run", "[simulate][errors]") {
    const config cfg{.ranks = 2, .microbatches = 1};
    // A lowered order whose consumer has no RECV posted before it.
    const order no_recv(cfg, {{action::forward(0, 0), action::send_f(0, 0)},
                              {action::forward(1, 0), action::recv_f(1, 0)}});
    auto sim = simulate(no_recv);
    REQUIRE(sim.status == simulation_status::invalid);
    CHECK(sim.problem.rank == 1);
    CHECK(sim.problem.at == action::forward(1, 0));
    CHECK(std::string(sim.problem.what).find("RECV_F") != std::string::npos);

    const order early_send(cfg, {{action::send_f(0, 0), action::forward(0, 0)},
                                 {action::recv_f(1, 0), action::forward(1, 0)}});
    CHECK(simulate(early_send).status == simulation_status::invalid);

    const order wrong_rank(cfg, {{action::forward(1, 0)}, {}});
    sim = simulate(wrong_rank);
    REQUIRE(sim.status == simulation_status::invalid);
    CHECK(ppsched::describe_problem(sim) ==
          "invalid: rank 0 slot 0 (1F0): action on a rank that does not hold its stage");

    CHECK(simulate(order(cfg, {{action::forward(0, 3)}, {}})).status == simulation_status::invalid);
    CHECK(simulate(order(cfg, {{action::forward(0, 0), action::forward(0, 0)}, {}})).status ==
          simulation_status::invalid);
    CHECK_THROWS_AS(simulate(two_rank_1f1b(), config{.ranks = 3, .microbatches = 2}),
                    ppsched::config_error);
}

TEST_CASE("idle slots carry no time", "[simulate]") {
    order o = two_rank_1f1b();
    o.rank(1).insert(o.rank(1).begin(), ppsched::slot{});
    o.push_idle(0);
    const auto sim = simulate(o, f1_b2);
    CHECK(sim.makespan == 9);
    CHECK(sim.timeline.size() == 8);
    CHECK(sim.timeline[4].slot == 1); // 1F0 is the second slot of rank 1
}

TEST_CASE("UNSHARD and REDUCE_GRAD run on the communication stream, overlapping compute",
          "[simulate][comm]") {
    // 1 rank, 2 stages. UNSHARD(0) [0,2], UNSHARD(1) [2,5] on the comm stream; 0F0 waits
    // for its unshard: [2,3]; 1F0 waits for UNSHARD(1): [5,6]; 1B0 [6,8]; 0B0 [8,10];
    // REDUCE_GRAD(1), issued after 1B0 at 8, [8,12]; REDUCE_GRAD(0) issued at 10, comm free at
    // 12: [12,16]. The iteration ends when the last reduction ends: 16.
    cost_model c = f1_b2;
    c.per_stage.resize(2);
    c.per_stage[0].unshard = 2;
    c.per_stage[1].unshard = 3;
    c.uniform.reduce_grad = 4;
    const order o(
        config{.ranks = 1, .stages_per_rank = 2, .microbatches = 1},
        {{action::unshard(0), action::unshard(1), action::forward(0, 0), action::forward(1, 0),
          action::full_backward(1, 0), action::reduce_grad(1), action::full_backward(0, 0),
          action::reduce_grad(0), action::reshard(0), action::reshard(1)}});
    const auto sim = simulate(o, c);
    REQUIRE(sim);
    const double expected[10][2] = {{0, 2},  {2, 5},  {2, 3},   {5, 6},   {6, 8},
                                    {8, 12}, {8, 10}, {12, 16}, {16, 16}, {16, 16}};
    for (std::size_t i = 0; i < 10; ++i) {
        INFO(i);
        CHECK(sim.timeline[i].start == expected[i][0]);
        CHECK(sim.timeline[i].end == expected[i][1]);
    }
    CHECK(sim.timeline[0].on == stream::comm);
    CHECK(sim.makespan == 16);
    CHECK(sim.ranks[0].busy == 6);
    CHECK(sim.ranks[0].comm_busy == 13);
    CHECK(sim.ranks[0].idle == 10);
}

TEST_CASE("I frees its part of the activations and W the rest; parameters add to the peak",
          "[simulate][memory]") {
    // One stage (the last): 0F0 0F1 0I0 0I1 0W0 0W1, activation 4, I frees a quarter:
    // 4, 8 (peak, at 0F1's start = 1), 7, 6, 3, 0.
    cost_model c = cost_model::uniform_fiw(1, 1, 1);
    c.uniform.activation = 4;
    c.uniform.parameters = 10;
    c.input_grad_frees = 0.25;
    const order o(config{.ranks = 1, .microbatches = 2},
                  {{action::forward(0, 0), action::forward(0, 1), action::backward_input(0, 0),
                    action::backward_input(0, 1), action::backward_weight(0, 0),
                    action::backward_weight(0, 1)}});
    const auto sim = simulate(o, c);
    REQUIRE(sim);
    CHECK(sim.ranks[0].peak_activations == 8);
    CHECK(sim.ranks[0].peak_activations_at == 1);
    CHECK(sim.ranks[0].parameters == 10);
    CHECK(sim.ranks[0].peak_memory == 18);
    CHECK(sim.makespan == 6);
    // The same order with I freeing everything: F0 4, F1 8, then only frees.
    c.input_grad_frees = 1;
    CHECK(simulate(o, c).ranks[0].peak_activations == 8);
}

TEST_CASE("an overlapped F+B costs the sum of its parts unless given", "[simulate][overlap]") {
    // DualPipeV on one rank (stages 0 and 1), 2 microbatches, from PyTorch:
    // 0F0 1F0 0F1 1B0 (1F1;0B0) 1B1 0I1 0W1. With F = 1, B = 2 (I = W = 1): 1+1+1+2+3+2+1+1.
    const auto o = ppsched::io::read_csv_file(std::string(PPSCHED_CONFORMANCE_DIR) +
                                              "/torch/compute/DualPipeV_pp1_mb2_v2.csv");
    CHECK(simulate(o, f1_b2).makespan == 12);
    cost_model c = f1_b2;
    c.uniform.overlap_f_b = 2.5;
    CHECK(simulate(o, c).makespan == 11.5);
    // Activations: 0F0, 1F0, 0F1 -> 3; 1B0 frees one -> 2; the overlap allocates 1F1 at its
    // start before freeing 0B0 at its end -> 3 again.
    CHECK(simulate(o, c).ranks[0].peak_activations == 3);
    CHECK(simulate(o, c).ranks[0].peak_activations_at == 2);
}

TEST_CASE("per-stage costs override the uniform ones field by field", "[simulate][costs]") {
    // 2 ranks, 1 microbatch: 0F0 [0,1] 1F0 [1,4] (F = 3 on stage 1) 1B0 [4,6] 0B0 [6,8].
    order o(config{.ranks = 2, .microbatches = 1});
    o.push(0, action::forward(0, 0));
    o.push(0, action::full_backward(0, 0));
    o.push(1, action::forward(1, 0));
    o.push(1, action::full_backward(1, 0));
    cost_model c = f1_b2;
    c.per_stage.resize(2);
    c.per_stage[1].forward = 3;
    const auto sim = simulate(o, c);
    CHECK(sim.makespan == 8);
    CHECK(sim.ranks[1].busy == 5);
}

// --- Checks against the literature ------------------------------------------------------------

TEST_CASE("GPipe and 1F1B take (m + p - 1)(F + B) with uniform costs and no latency",
          "[simulate][formula]") {
    for (const auto& [f, b] : {std::pair{1.0, 2.0}, {1.0, 1.0}, {0.5, 1.75}, {3.0, 2.0}}) {
        for (int p : {1, 2, 3, 4, 8}) {
            for (int m : {1, 2, 3, 4, 5, 8, 16, 17}) {
                INFO("F=" << f << " B=" << b << " p=" << p << " m=" << m);
                const config cfg{.ranks = p, .microbatches = m};
                const double expected = (m + p - 1) * (f + b);
                const auto costs = cost_model::uniform_fb(f, b);
                CHECK(near(simulate(ppsched::generate<ppsched::gpipe>(cfg), costs).makespan,
                           expected));
                if (m >= p) {
                    const auto sim = simulate(ppsched::generate<ppsched::one_f_one_b>(cfg), costs);
                    CHECK(near(sim.makespan, expected));
                    for (const auto& r : sim.ranks) CHECK(near(r.idle, (p - 1) * (f + b)));
                }
            }
        }
    }
}

TEST_CASE("Interleaved1F1B takes m(F + B) + (p - 1)(F + B)/v when each stage does 1/v",
          "[simulate][formula]") {
    for (const auto& [f, b] : {std::pair{1.0, 2.0}, {1.0, 1.0}, {2.0, 3.0}}) {
        for (int p : {1, 2, 3, 4, 8}) {
            for (int v : {1, 2, 3, 4}) {
                for (int k : {1, 2, 3}) {
                    const int m = k * p;
                    INFO("F=" << f << " B=" << b << " p=" << p << " v=" << v << " m=" << m);
                    const auto o = ppsched::generate<ppsched::interleaved_1f1b>(
                        config{.ranks = p, .stages_per_rank = v, .microbatches = m});
                    const auto sim = simulate(o, cost_model::uniform_fb(f / v, b / v));
                    CHECK(near(sim.makespan, m * (f + b) + (p - 1) * (f + b) / v));
                    // bubble ratio = (p - 1) / (v m)
                    CHECK(near(sim.bubble_ratio, (p - 1) / (1.0 * v * m)));
                }
            }
        }
    }
}

TEST_CASE("1F1B rank r holds at most min(m, p - r) activations, GPipe holds m",
          "[simulate][formula][memory]") {
    for (int p : {1, 2, 3, 4, 8}) {
        for (int m : {1, 2, 4, 7, 8, 16}) {
            INFO("p=" << p << " m=" << m);
            const config cfg{.ranks = p, .microbatches = m};
            const auto g = simulate(ppsched::generate<ppsched::gpipe>(cfg));
            for (const auto& r : g.ranks) CHECK(r.peak_activations == m);
            if (m < p) continue;
            const auto s = simulate(ppsched::generate<ppsched::one_f_one_b>(cfg));
            for (const auto& r : s.ranks) CHECK(r.peak_activations == std::min(m, p - r.rank));
        }
    }
}

TEST_CASE("GPipe's bubble ratio is (p - 1) / m", "[simulate][formula]") {
    for (int p : {1, 2, 4, 8})
        for (int m : {1, 2, 3, 8, 16}) {
            INFO("p=" << p << " m=" << m);
            const auto sim = simulate(
                ppsched::generate<ppsched::gpipe>(config{.ranks = p, .microbatches = m}), f1_b2);
            CHECK(near(sim.bubble_ratio, (p - 1) / static_cast<double>(m)));
            CHECK(near(sim.bubble_fraction, (p - 1) / static_cast<double>(m + p - 1)));
        }
}

TEST_CASE("Interleaved1F1B rank r holds min(v m, (v - 1) p + 2 (p - 1 - r) + 1) stage activations",
          "[simulate][formula][memory]") {
    // PyTorch's warm-up runs (v - 1) p + 2 (p - 1 - r) forwards on rank r before its first
    // backward; the steady state then adds one more before each backward frees one.
    for (int p : {1, 2, 3, 4, 8})
        for (int v : {1, 2, 3, 4})
            for (int k : {1, 2, 3, 4}) {
                const int m = k * p;
                INFO("p=" << p << " v=" << v << " m=" << m);
                const auto sim = simulate(ppsched::generate<ppsched::interleaved_1f1b>(
                    config{.ranks = p, .stages_per_rank = v, .microbatches = m}));
                for (const auto& r : sim.ranks)
                    CHECK(r.peak_activations ==
                          std::min(v * m, (v - 1) * p + 2 * (p - 1 - r.rank) + 1));
            }
}

TEST_CASE("LoopedBFS takes m(F + B) + (p - 1)(F + B)/v for m >= p and holds every activation",
          "[simulate][formula][memory]") {
    for (int p : {1, 2, 3, 4, 8})
        for (int v : {1, 2, 3, 4})
            for (int m : {p, p + 1, 2 * p, 3 * p + 1}) {
                INFO("p=" << p << " v=" << v << " m=" << m);
                const auto sim = simulate(ppsched::generate<ppsched::looped_bfs>(config{
                                              .ranks = p, .stages_per_rank = v, .microbatches = m}),
                                          cost_model::uniform_fb(1.0 / v, 2.0 / v));
                CHECK(near(sim.makespan, m * 3 + (p - 1) * 3.0 / v));
                // every stage keeps all m activations until the backward pass reaches it
                for (const auto& r : sim.ranks) CHECK(r.peak_activations == v * m);
            }
}

TEST_CASE("DualPipeV holds 2p + 1 chunk activations per rank, DeepSeek's PP + 1 for PP = 2p",
          "[simulate][formula][memory][dualpipe_v]") {
    // DeepSeek's table: DualPipe on PP ranks keeps PP + 1 activations (of one chunk, i.e. one
    // stage and microbatch); DualPipeV on p ranks is the folded half of DualPipe on 2p.
    for (int p : {1, 2, 3, 4, 8})
        for (int m : {2 * p, 2 * p + 1, 3 * p, 4 * p}) {
            INFO("p=" << p << " m=" << m);
            const auto sim = simulate(ppsched::generate<ppsched::dualpipe_v>(
                config{.ranks = p, .stages_per_rank = 2, .microbatches = m}));
            for (const auto& r : sim.ranks) CHECK(r.peak_activations == 2 * p + 1);
        }
}

// DeepSeek's table gives DualPipe's bubble as (PP/2 - 1)(F&B + B - 3W), with F, B (full
// backward), W and F&B (an overlapped pair) the times of one chunk; DualPipeV on p ranks is
// the half of DualPipe on 2p, so (p - 1)(F&B + B - 3W). What it measures, made precise here:
// the idle time (makespan - compute time) of the rank with the most overlapped pairs (the last
// rank; ranks with fewer pairs compute longer and idle less). It is exact in the regime the
// schedule's figure is drawn for: I = B - W = F (the input backward as long as the forward),
// W <= F, and B <= F&B <= F + B. Outside it the schedule's critical path changes and the
// formula is only an estimate (checked below in both directions).
TEST_CASE("DualPipeV's bubble is DeepSeek's (p - 1)(F&B + B - 3W) in the regime it is drawn for",
          "[simulate][formula][dualpipe_v]") {
    for (double f : {0.5, 1.0, 2.0}) {
        for (double w_over_f : {0.25, 0.5, 1.0}) {
            const double w = w_over_f * f, b = f + w;
            for (double fb : {b, (b + f + b) / 2, f + b}) {
                cost_model c;
                c.uniform.forward = f;
                c.uniform.full_backward = b;
                c.uniform.backward_weight = w;
                c.uniform.overlap_f_b = fb;
                for (int p : {1, 2, 3, 4, 8}) {
                    for (int m : {2 * p, 2 * p + 1, 3 * p, 4 * p}) {
                        INFO("F=" << f << " B=" << b << " W=" << w << " F&B=" << fb << " p=" << p
                                  << " m=" << m);
                        const auto sim =
                            simulate(ppsched::generate<ppsched::dualpipe_v>(config{
                                         .ranks = p, .stages_per_rank = 2, .microbatches = m}),
                                     c);
                        REQUIRE(sim);
                        double most_idle = 0;
                        for (const auto& r : sim.ranks) most_idle = std::max(most_idle, r.idle);
                        CHECK(near(most_idle, (p - 1) * (fb + b - 3 * w)));
                        CHECK(near(sim.ranks.back().idle, most_idle));
                    }
                }
            }
        }
    }
    // Outside the regime the formula is not a bound either way: with I = 0 (W = B) the last
    // rank idles longer than it says, with I > F shorter.
    const auto run = [](double f, double b, double w, double fb) {
        cost_model c;
        c.uniform.forward = f;
        c.uniform.full_backward = b;
        c.uniform.backward_weight = w;
        c.uniform.overlap_f_b = fb;
        return simulate(ppsched::generate<ppsched::dualpipe_v>(
                            config{.ranks = 4, .stages_per_rank = 2, .microbatches = 8}),
                        c)
            .ranks.back()
            .idle;
    };
    CHECK(run(1, 1, 1, 2) > 3 * (2 + 1 - 3));     // I = 0
    CHECK(run(1, 3, 0.5, 4) < 3 * (4 + 3 - 1.5)); // I > F
}

TEST_CASE("the simulator agrees with the zero-bubble authors' replay of their schedules",
          "[simulate][conformance][zb]") {
    // zb/cases.json: makespan and peak memory of each order under its costs (F, I, W; B = I +
    // W; one activation unit per microbatch on a rank, so 1/2 per chunk for V schedules).
    // Their values are read with a minimal scan to keep this test free of the JSON reader.
    const std::string text =
        ppsched::io::read_file(std::string(PPSCHED_CONFORMANCE_DIR) + "/zb/cases.json");
    auto number_after = [&](const std::string& key, std::size_t from) {
        const std::size_t at = text.find("\"" + key + "\"", from);
        REQUIRE(at != std::string::npos);
        return std::stod(text.substr(text.find(':', at) + 1, 32));
    };
    std::size_t pos = 0, checked = 0;
    while ((pos = text.find("\"compute\"", pos)) != std::string::npos) {
        const std::size_t entry = text.rfind("\"schedule\"", pos);
        const std::size_t q = text.find('"', text.find(':', pos) + 1);
        const std::string file = text.substr(q + 1, text.find('"', q + 1) - q - 1);
        pos = q;
        INFO(file);
        const std::size_t status = text.find("\"status\"", entry);
        if (text.compare(text.find('"', text.find(':', status) + 1), 4, "\"ok\"") != 0) continue;
        const auto o =
            ppsched::io::read_csv_file(std::string(PPSCHED_CONFORMANCE_DIR) + "/zb/" + file);
        cost_model c = cost_model::uniform_fiw(number_after("F", entry), number_after("I", entry),
                                               number_after("W", entry));
        c.uniform.activation = 1.0 / o.cfg().stages_per_rank;
        const auto sim = simulate(o, c);
        REQUIRE(sim);
        CHECK(near(sim.makespan, number_after("makespan", entry)));
        double peak = 0;
        for (const auto& r : sim.ranks) peak = std::max(peak, r.peak_activations);
        CHECK(near(peak, number_after("peak_memory_per_rank_measured", entry)));
        ++checked;
    }
    CHECK(checked >= 160);
}

// --- Every order finishes, lowered and not -----------------------------------------------------

TEST_CASE("every conformance order simulates without deadlock", "[simulate][conformance]") {
    const fs::path root = PPSCHED_CONFORMANCE_DIR;
    std::size_t files = 0;
    for (const char* dir : {"torch/compute", "torch/comms", "megatron/compute", "dualpipe/compute",
                            "zb/compute", "overlap/compute"}) {
        for (const auto& path : csv_files(root / dir)) {
            INFO(path.string());
            const auto sim = simulate(ppsched::io::read_csv_file(path.string()), f1_b2);
            INFO(ppsched::describe_problem(sim));
            CHECK(sim);
            CHECK(sim.makespan > 0);
            ++files;
        }
    }
    CHECK(files > 850); // DeepSeek's two-direction DualPipe included (the dual placement)
}

TEST_CASE("PyTorch's lowered orders take as long as their compute orders when messages are free",
          "[simulate][conformance][lowered]") {
    const fs::path root = PPSCHED_CONFORMANCE_DIR;
    cost_model skewed;
    skewed.uniform.forward = 1;
    skewed.uniform.backward_input = 1.25;
    skewed.uniform.backward_weight = 0.75;
    skewed.uniform.full_backward = 1.75;
    skewed.uniform.overlap_f_b = 2.5;
    skewed.per_stage.resize(4);
    skewed.per_stage[1].forward = 1.5;
    skewed.per_stage[3].full_backward = 2.5;
    std::size_t pairs = 0;
    for (const auto& path : csv_files(root / "torch/compute")) {
        INFO(path.filename().string());
        const auto compute = ppsched::io::read_csv_file(path.string());
        const auto lowered =
            ppsched::io::read_csv_file((root / "torch/comms" / path.filename()).string());
        for (const auto& costs : {f1_b2, skewed}) {
            const auto a = simulate(compute, costs), b = simulate(lowered, costs);
            REQUIRE(a);
            REQUIRE(b);
            CHECK(b.lowered == (compute.cfg().ranks > 1)); // one rank sends nothing
            CHECK(near(a.makespan, b.makespan));
            CHECK(near(a.total_compute, b.total_compute));
        }
        ++pairs;
    }
    CHECK(pairs == 305);
}

TEST_CASE("every built-in schedule's orders simulate, lowered and not, with equal makespans",
          "[simulate][schedules][lowered]") {
    const auto& registry = ppsched::builtin_schedules();
    std::size_t runs = 0;
    for (const auto& entry : registry.entries()) {
        for (int p : {1, 2, 3, 4}) {
            for (int v : {1, 2, 3}) {
                for (int m : {1, 2, 3, 4, 6, 8, 12}) {
                    const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
                    order o;
                    try {
                        o = registry.generate(entry.name, cfg);
                    } catch (const ppsched::config_error&) {
                        continue; // the schedule does not serve this configuration
                    }
                    INFO(entry.name << " p=" << p << " v=" << v << " m=" << m);
                    const auto a = simulate(o, f1_b2);
                    INFO(ppsched::describe_problem(a));
                    REQUIRE(a);
                    const auto b = simulate(ppsched::add_send_recv(o), f1_b2);
                    INFO(ppsched::describe_problem(b));
                    REQUIRE(b);
                    CHECK(near(a.makespan, b.makespan));
                    // PyTorch's whole lowering (FSDP UNSHARD/RESHARD, REDUCE_GRAD as well).
                    const auto full = simulate(ppsched::lower(o), f1_b2);
                    INFO(ppsched::describe_problem(full));
                    REQUIRE(full);
                    CHECK(near(a.makespan, full.makespan));
                    // With latency the lowered order can only be slower (receives post late).
                    const auto costs = with_latency(f1_b2, 0.25);
                    CHECK(simulate(ppsched::add_send_recv(o), costs).makespan >=
                          simulate(o, costs).makespan - 1e-9);
                    ++runs;
                }
            }
        }
    }
    CHECK(runs > 100);
}

TEST_CASE("simulation is linear: a large order simulates quickly", "[simulate][performance]") {
    // 64 ranks x 4 stages x 512 microbatches: 262144 compute actions (the size PyTorch's
    // lowering takes seconds on), and its lowering (about 790000). Checks completion and the
    // formula; the speed is reported in docs/performance.md.
    const auto o = ppsched::generate<ppsched::interleaved_1f1b>(
        config{.ranks = 64, .stages_per_rank = 4, .microbatches = 512});
    const auto sim = simulate(o, f1_b2);
    REQUIRE(sim);
    CHECK(sim.timeline.size() == o.action_count());
    // Per stage F = 1, B = 2, so per rank F + B = 12: m * 12 + (p - 1) * 12 / v.
    CHECK(near(sim.makespan, 512 * 12 + 63 * 3));
    const auto lowered = simulate(ppsched::lower(o), f1_b2);
    REQUIRE(lowered);
    CHECK(near(lowered.makespan, sim.makespan));
}

// --- Summary mode (simulate_options::timeline = false) ------------------------------------------

namespace {

constexpr ppsched::simulate_options summary_only{.timeline = false};

// Every field but the timeline, compared exactly: both modes run the same arithmetic in the
// same order, so equal inputs give bit-identical results.
void require_same_summary(const ppsched::simulation& with, const ppsched::simulation& without) {
    CHECK(without.timeline.empty());
    REQUIRE(with.status == without.status);
    CHECK(with.makespan == without.makespan);
    CHECK(with.total_compute == without.total_compute);
    CHECK(with.ideal == without.ideal);
    CHECK(with.bubble_fraction == without.bubble_fraction);
    CHECK(with.bubble_ratio == without.bubble_ratio);
    CHECK(with.lowered == without.lowered);
    REQUIRE(with.ranks.size() == without.ranks.size());
    for (std::size_t r = 0; r < with.ranks.size(); ++r) {
        const auto& a = with.ranks[r];
        const auto& b = without.ranks[r];
        INFO("rank " << r);
        CHECK(a.rank == b.rank);
        CHECK(a.busy == b.busy);
        CHECK(a.idle == b.idle);
        CHECK(a.bubble_fraction == b.bubble_fraction);
        CHECK(a.comm_busy == b.comm_busy);
        CHECK(a.end == b.end);
        CHECK(a.peak_activations == b.peak_activations);
        CHECK(a.peak_activations_at == b.peak_activations_at);
        CHECK(a.parameters == b.parameters);
        CHECK(a.peak_memory == b.peak_memory);
    }
    REQUIRE(with.stuck.size() == without.stuck.size());
    for (std::size_t i = 0; i < with.stuck.size(); ++i) {
        CHECK(with.stuck[i].rank == without.stuck[i].rank);
        CHECK(with.stuck[i].slot == without.stuck[i].slot);
        CHECK(with.stuck[i].at == without.stuck[i].at);
        CHECK(with.stuck[i].waiting_for == without.stuck[i].waiting_for);
        CHECK(with.stuck[i].waiting_rank == without.stuck[i].waiting_rank);
    }
    CHECK(with.problem.rank == without.problem.rank);
    CHECK(with.problem.slot == without.problem.slot);
    CHECK(with.problem.at == without.problem.at);
    CHECK(std::string(with.problem.what) == without.problem.what);
    CHECK(ppsched::describe_problem(with) == ppsched::describe_problem(without));
}

// Both modes on an order and on the same rows as a generic range of optional actions.
void require_same_summary(const order& o, const cost_model& costs) {
    require_same_summary(simulate(o, costs), simulate(o, costs, summary_only));
    std::vector<std::vector<std::optional<action>>> rows;
    for (const auto& row : o) {
        auto& out = rows.emplace_back();
        for (const auto& s : row)
            out.push_back(s.is_idle() ? std::nullopt : std::optional(*s.get()));
    }
    require_same_summary(simulate(rows, o.cfg(), costs),
                         simulate(rows, o.cfg(), costs, summary_only));
}

// Uneven costs: every stage different, I and W split, comm stream and memory, latency.
cost_model uneven_costs(int stages) {
    cost_model c = cost_model::uniform_fiw(1.25, 1.5, 0.75);
    c.uniform.unshard = 0.5;
    c.uniform.reduce_grad = 0.375;
    c.uniform.activation = 3;
    c.uniform.parameters = 7;
    c.input_grad_frees = 0.5;
    c.p2p_latency = 0.3;
    c.p2p_transfer = 0.05;
    c.per_stage.resize(static_cast<std::size_t>(stages));
    for (int s = 0; s < stages; ++s) {
        auto& st = c.per_stage[static_cast<std::size_t>(s)];
        st.forward = 1 + 0.1 * (s % 5);
        st.backward_input = 1.1 + 0.07 * (s % 3);
        st.activation = 1 + s % 4;
    }
    return c;
}

} // namespace

TEST_CASE("without a timeline every summary field is the same, for every built-in schedule",
          "[simulate][summary][schedules]") {
    const auto& registry = ppsched::builtin_schedules();
    std::size_t runs = 0;
    for (const auto& entry : registry.entries()) {
        for (int p : {1, 2, 4}) {
            for (int v : {1, 2}) {
                for (int m : {1, 3, 4, 8}) {
                    const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
                    order o;
                    try {
                        o = registry.generate(entry.name, cfg);
                    } catch (const ppsched::config_error&) {
                        continue; // the schedule does not serve this configuration
                    }
                    INFO(entry.name << " p=" << p << " v=" << v << " m=" << m);
                    const order lowered = ppsched::lower(o);
                    for (const cost_model& c : {cost_model{}, with_latency(f1_b2, 0.25),
                                                uneven_costs(cfg.num_stages())}) {
                        require_same_summary(o, c);
                        require_same_summary(lowered, c);
                    }
                    ++runs;
                }
            }
        }
    }
    CHECK(runs > 50);
}

TEST_CASE("without a timeline deadlocks and invalid actions are reported the same",
          "[simulate][summary][deadlock][errors]") {
    const cost_model c = with_latency(f1_b2, 0.5);
    // Each rank waits for the other (with idle slots before the stuck actions).
    order crossed(config{.ranks = 2, .microbatches = 2});
    for (action a : {action::forward(0, 0), action::full_backward(0, 0), action::forward(0, 1),
                     action::full_backward(0, 1)}) {
        crossed.push_idle(0);
        crossed.push(0, a);
    }
    crossed.push_idle(1);
    for (action a : {action::forward(1, 1), action::full_backward(1, 1), action::forward(1, 0),
                     action::full_backward(1, 0)})
        crossed.push(1, a);
    REQUIRE(simulate(crossed).status == simulation_status::deadlock);
    require_same_summary(crossed, c);
    // A lowered order missing a SEND: the RECV's end still counts in the rank's end.
    const order no_send(config{.ranks = 2, .microbatches = 3},
                        {{action::forward(0, 0), action::send_f(0, 0), action::forward(0, 1),
                          action::forward(0, 2), action::send_f(0, 2)},
                         {action::recv_f(1, 0), action::forward(1, 0), action::recv_f(1, 1),
                          action::forward(1, 1), action::recv_f(1, 2), action::forward(1, 2)}});
    REQUIRE(simulate(no_send).status == simulation_status::deadlock);
    require_same_summary(no_send, c);
    // Invalid actions, found before or while running.
    const config cfg{.ranks = 2, .microbatches = 1};
    for (const order& bad :
         {order(cfg, {{action::forward(0, 0), action::send_f(0, 0)},
                      {action::forward(1, 0), action::recv_f(1, 0)}}),
          order(cfg, {{action::send_f(0, 0), action::forward(0, 0)},
                      {action::recv_f(1, 0), action::forward(1, 0)}}),
          order(cfg, {{action::forward(1, 0)}, {}}), order(cfg, {{action::forward(0, 3)}, {}}),
          order(cfg, {{action::forward(0, 0), action::forward(0, 0)}, {}}),
          order(cfg, {{action::forward(0, 0), action::send_f(0, 0), action::send_f(0, 0)},
                      {action::recv_f(1, 0), action::recv_f(1, 0), action::forward(1, 0)}})}) {
        INFO(ppsched::describe_problem(simulate(bad)));
        REQUIRE(simulate(bad).status == simulation_status::invalid);
        require_same_summary(bad, c);
    }
    CHECK_THROWS_AS(
        simulate(two_rank_1f1b(), config{.ranks = 3, .microbatches = 2}, {}, summary_only),
        ppsched::config_error);
}

using test_support::rows_by_value;

TEST_CASE("without a timeline rows made on the fly give the same summary", "[simulate][summary]") {
    const auto o = ppsched::generate<ppsched::zbv_zero_bubble>(
        config{.ranks = 4,
               .stages_per_rank = 2,
               .microbatches = 8,
               .placement = ppsched::stage_placement::v});
    const cost_model c = uneven_costs(o.cfg().num_stages());
    for (const order& in : {o, ppsched::lower(o)}) {
        const rows_by_value rows{&in};
        require_same_summary(simulate(in, c), simulate(rows, in.cfg(), c, summary_only));
    }
    order stuck = o;
    std::swap(stuck[0].front(), stuck[0].back()); // its last backward first: it waits forever
    REQUIRE(simulate(stuck, c).status == simulation_status::deadlock);
    const rows_by_value rows{&stuck};
    require_same_summary(simulate(stuck, c), simulate(rows, stuck.cfg(), c, summary_only));
}

TEST_CASE("without a timeline a large order gives the same summary", "[simulate][summary]") {
    const auto o = ppsched::generate<ppsched::interleaved_1f1b>(
        config{.ranks = 16, .stages_per_rank = 4, .microbatches = 64});
    const cost_model c = uneven_costs(o.cfg().num_stages());
    require_same_summary(o, c);
    require_same_summary(ppsched::lower(o), c);
}

TEST_CASE("a simulation without a timeline runs at compile time",
          "[simulate][summary][constexpr]") {
    STATIC_REQUIRE(simulate(two_rank_1f1b(), f1_b2, summary_only).makespan == 9);
    STATIC_REQUIRE(simulate(two_rank_1f1b(), f1_b2, summary_only).timeline.empty());
    STATIC_REQUIRE(
        simulate(two_rank_1f1b_lowered(), with_latency(f1_b2, 0.5), summary_only).makespan ==
        simulate(two_rank_1f1b_lowered(), with_latency(f1_b2, 0.5)).makespan);
    STATIC_REQUIRE(
        simulate(ppsched::generate<ppsched::one_f_one_b>(config{.ranks = 4, .microbatches = 8}),
                 f1_b2, summary_only)
            .ranks[3]
            .busy == 24);
    STATIC_REQUIRE(
        simulate(order(config{.ranks = 2, .microbatches = 1},
                       {{action::forward(0, 0)}, {action::recv_f(1, 0), action::forward(1, 0)}}),
                 {}, summary_only)
            .stuck[0]
            .waiting_for == action::send_f(0, 0));
}

TEST_CASE("simulate rejects a repeated W as it rejects a repeated F", "[simulate][bounded]") {
    for (const char* text : {"0F0,0I0,0W0,0W0", "0F0,0F0,0B0"}) {
        INFO(text);
        const ppsched::order o = ppsched::io::read_csv(text);
        for (const bool timeline : {true, false}) {
            const ppsched::simulation sim = ppsched::simulate(o, {}, {.timeline = timeline});
            CHECK(sim.status == ppsched::simulation_status::invalid);
            CHECK(std::string(sim.problem.what).find("twice") != std::string::npos);
        }
    }
    // One W per (stage, microbatch) is still fine, on every microbatch.
    CHECK(ppsched::simulate(ppsched::io::read_csv("0F0,0F1,0I0,0I1,0W1,0W0")).status ==
          ppsched::simulation_status::ok);
}

TEST_CASE("simulate sizes no table by a configuration far larger than the order",
          "[simulate][bounded]") {
    // read_csv would refuse the index at the door (no inferred configuration can hold it), so
    // the configuration is given, as a program holding its own order would.
    const ppsched::order o =
        ppsched::io::read_csv("0F0,0B2147483646", config{.ranks = 1, .microbatches = 2147483647});
    for (const bool timeline : {true, false}) {
        const ppsched::simulation sim = ppsched::simulate(o, {}, {.timeline = timeline});
        CHECK(sim.status == ppsched::simulation_status::invalid);
        CHECK(sim.problem.slot == 1);
        CHECK(sim.ranks.size() == 1);
    }
}

TEST_CASE("finite times whose sum overflows leave no nan in the summary", "[simulate][bounded]") {
    // Found by fuzz_cost_json ({"p2p_transfer": 1e307}): the makespan (1e308) is finite but
    // ranks x makespan is not, and the bubble fraction came out as inf / inf.
    const order o = ppsched::generate<ppsched::interleaved_1f1b>(
        config{.ranks = 2, .stages_per_rank = 2, .microbatches = 4});
    cost_model costs;
    // That cost is now refused at the door (the one overflow rule: every cost times the
    // order's actions stays below 1e308); the largest one it accepts gives a finite summary.
    costs.p2p_transfer = 1e307;
    CHECK_THROWS_AS(simulate(o, costs), ppsched::config_error);
    costs.p2p_transfer = 1e305;
    const ppsched::simulation sim = simulate(o, costs);
    REQUIRE(sim.status == simulation_status::ok);
    REQUIRE(std::isfinite(sim.makespan));
    CHECK(std::isfinite(sim.ideal));
    CHECK(sim.bubble_fraction >= 0);
    CHECK(sim.bubble_fraction <= 1);
    CHECK(std::isfinite(sim.bubble_ratio));
    for (const auto& r : sim.ranks) CHECK(std::isfinite(r.bubble_fraction));
}
