#include <ppsched/algorithms/add_spacing.hpp>
#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate_steps.hpp>
#include <ppsched/algorithms/step_timeline.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules.hpp>

#include <catch2/catch.hpp>

#include <cstddef>

using ppsched::action;
using ppsched::config;
using ppsched::order;
using ppsched::simulation;
using ppsched::step_timeline;
using ppsched::stream;

namespace {

// Two ranks laid out by hand: rank 0 runs F0 at step 0 and B0 at step 3; rank 1 runs F0 at
// step 1 and B0 at step 2.
constexpr order hand_layout() {
    order o(config{.ranks = 2, .microbatches = 1});
    o.push(0, action::forward(0, 0));
    o.push_idle(0);
    o.push_idle(0);
    o.push(0, action::full_backward(0, 0));
    o.push_idle(1);
    o.push(1, action::forward(1, 0));
    o.push(1, action::full_backward(1, 0));
    return o;
}

} // namespace

TEST_CASE("a step layout reads as one time unit per step", "[step_timeline]") {
    const simulation sim = step_timeline(hand_layout());
    REQUIRE(sim.timeline.size() == 4);
    const double starts[] = {0, 3, 1, 2};
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(sim.timeline[i].start == starts[i]);
        CHECK(sim.timeline[i].end == starts[i] + 1);
        CHECK(sim.timeline[i].ran);
        CHECK(sim.timeline[i].on == stream::compute);
    }
    CHECK(sim.makespan == 4);
    CHECK(sim.ranks[0].busy == 2);
    CHECK(sim.ranks[1].idle == 2);
    CHECK(sim.ranks[1].end == 3);
    CHECK(sim.total_compute == 4);
    CHECK(sim.ideal == 2);
    CHECK(sim.bubble_ratio == 1);      // (4 - 2) / 2
    CHECK(sim.bubble_fraction == 0.5); // 4 idle of 8
    CHECK(sim.ranks[0].peak_activations == 1);
    CHECK(!sim.lowered);
}

TEST_CASE("step timelines are computed at compile time", "[step_timeline]") {
    STATIC_REQUIRE(step_timeline(hand_layout()).makespan == 4);
    // PyTorch's visualizer layout of Interleaved1F1B spans as many steps as add_spacing's rows.
    constexpr config cfg{.ranks = 2, .stages_per_rank = 2, .microbatches = 4};
    STATIC_REQUIRE(
        step_timeline(ppsched::add_spacing(ppsched::generate<ppsched::interleaved_1f1b>(cfg)))
            .timeline.size() == 2 * 2 * 4 * 2);
}

TEST_CASE("a unit-step run of a lowered order gives a lowered timeline", "[step_timeline]") {
    const order lowered = ppsched::lower(
        ppsched::generate<ppsched::one_f_one_b>(config{.ranks = 4, .microbatches = 8}));
    const auto run = ppsched::simulate_steps(lowered);
    REQUIRE(run);
    const simulation sim = step_timeline(run.timeline);
    CHECK(sim.lowered);
    CHECK(sim.timeline.size() == lowered.action_count());
    CHECK(sim.makespan == static_cast<double>(run.steps()));
    std::size_t p2p = 0;
    for (const auto& t : sim.timeline) p2p += t.on == stream::p2p;
    CHECK(p2p == 2 * 2 * 3 * 8); // a send and a receive per hand-over, 3 boundaries x 2 ways
}

TEST_CASE("an overlapped forward and backward both hold their activations in the step",
          "[step_timeline]") {
    // 0F0, then F of microbatch 1 with B of microbatch 0, then 0B1: as simulate counts it (a
    // forward allocates at its start, a backward frees at its end), two are held at step 1.
    order o(config{.ranks = 1, .microbatches = 2});
    o.push(0, action::forward(0, 0));
    o.push(0, action::overlap(action::forward(0, 1), action::full_backward(0, 0)));
    o.push(0, action::full_backward(0, 1));
    const simulation sim = step_timeline(o);
    CHECK(sim.ranks[0].peak_activations == 2);
    CHECK(sim.ranks[0].peak_activations_at == 1);
}
