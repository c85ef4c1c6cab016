// simulate_steps(): PyTorch's unit-step simulation (misc/*.simulate_comms_compute.format.txt from
// misc/*.add_send_recv.format.txt), every lowered PyTorch order (with FSDP actions and
// OVERLAP_F_B, which PyTorch's cannot run), and deadlocks.

#include <ppsched/algorithms/add_spacing.hpp>
#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate_steps.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/io/step_table.hpp>
#include <ppsched/registry.hpp>
#include <ppsched/schedules.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "support/step_table_reader.hpp"
#include "support/hand_orders.hpp"
#include "support/torch_cases.hpp"
#include "support/torch_orders.hpp"

using ppsched::action;
using ppsched::config;
using ppsched::order;

using ppsched_test::case_config;
using ppsched_test::load;
using ppsched_test::torch_dir;

namespace {

constexpr int step_of(const order& timeline, int rank, const action& a) {
    const auto& row = timeline.rank(rank);
    for (std::size_t i = 0; i < row.size(); ++i)
        if (row[i] && *row[i] == a) return static_cast<int>(i);
    return -1;
}

} // namespace

TEST_CASE("a receive runs in the same step as its send, at compile time",
          "[simulate_steps][static]") {
    constexpr auto sim = [] { return ppsched::simulate_steps(ppsched_test::gpipe_2x2_lowered()); };
    STATIC_REQUIRE(sim().completed());
    STATIC_REQUIRE(step_of(sim().timeline, 0, action::send_f(0, 0)) == 1);
    STATIC_REQUIRE(step_of(sim().timeline, 1, action::recv_f(1, 0)) == 1);
    STATIC_REQUIRE(step_of(sim().timeline, 1, action::forward(1, 0)) == 2);
    // Rank 1 received 1RECV_F1 at step 3 (when 0SEND_F1 ran), so 1F1 runs at 4; its gradient
    // goes back at 1SEND_B0 (step 6) and rank 0 (lower) receives it in that same step.
    STATIC_REQUIRE(step_of(sim().timeline, 1, action::send_b(1, 0)) == 6);
    STATIC_REQUIRE(step_of(sim().timeline, 0, action::recv_b(0, 0)) == 6);
    STATIC_REQUIRE(sim().steps() == 10);
    // Rank 0 waits (idle) from step 4 to step 5.
    STATIC_REQUIRE(sim().timeline.rank(0)[4].is_idle());
}

TEST_CASE("generated schedules lower, validate and run through at compile time",
          "[simulate_steps][static]") {
    constexpr config cfg{.ranks = 4, .stages_per_rank = 2, .microbatches = 8};
    STATIC_REQUIRE(
        ppsched::validate(ppsched::lower(ppsched::generate<ppsched::zbv_zero_bubble>(cfg))));
    STATIC_REQUIRE(
        ppsched::simulate_steps(ppsched::lower(ppsched::generate<ppsched::dualpipe_v>(cfg)))
            .completed());
    STATIC_REQUIRE(
        ppsched::simulate_steps(ppsched::lower(ppsched::generate<ppsched::interleaved_1f1b>(cfg)))
            .completed());
}

TEST_CASE("simulate_steps reproduces PyTorch's _simulate_comms_compute",
          "[simulate_steps][conformance]") {
    const auto cases = ppsched_test::read_torch_cases(torch_dir + "/cases.json");
    int compared = 0;
    for (const char* schedule :
         {"Interleaved1F1B", "InterleavedZeroBubble", "LoopedBFS", "ZBVZeroBubble"}) {
        for (const auto& c : cases) {
            if (c.schedule != schedule || c.ranks != 4 || c.microbatches != 8 ||
                c.stages_per_rank != 2)
                continue;
            INFO(schedule);
            const std::string base = torch_dir + "/misc/" + schedule + "_pp4_mb8_v2";
            const order input(case_config(c), ppsched_test::read_step_table(ppsched::io::read_file(
                                                  base + ".add_send_recv.format.txt")));
            const auto sim = ppsched::simulate_steps(input);
            REQUIRE(sim.completed());
            CHECK(ppsched::io::format_step_table(sim.timeline) ==
                  ppsched::io::read_file(base + ".simulate_comms_compute.format.txt"));
            ++compared;
        }
    }
    CHECK(compared == 4);
}

TEST_CASE("every lowered PyTorch order runs to the end, FSDP actions and overlaps included",
          "[simulate_steps][conformance]") {
    int n = 0;
    for (const auto& c : ppsched_test::read_torch_cases(torch_dir + "/cases.json")) {
        if (c.status != "ok") continue;
        INFO(c.comms);
        const order lowered = load(c.comms, case_config(c));
        const auto sim = ppsched::simulate_steps(lowered);
        CHECK(sim.completed());
        // The timeline is the order with idle steps inserted.
        order compact = sim.timeline;
        compact.drop_idle();
        CHECK(compact == lowered);
        ++n;
    }
    CHECK(n == 305);
}

TEST_CASE("a receive moved ahead of the sends it depends on deadlocks with the waits named",
          "[simulate_steps]") {
    // Rank 0 now waits for 1's gradient before it sends its first activation.
    order o = ppsched_test::gpipe_2x2_lowered();
    auto& row = o.rank(0);
    row.insert(row.begin(), action::recv_b(0, 0));
    row.erase(row.begin() + 5);
    const auto sim = ppsched::simulate_steps(o);
    REQUIRE_FALSE(sim);
    REQUIRE(sim.stuck.size() == 2);
    CHECK(sim.stuck[0] == ppsched::step_wait{0, 0, action::recv_b(0, 0), action::send_b(1, 0), 1});
    CHECK(sim.stuck[1] == ppsched::step_wait{1, 0, action::recv_f(1, 0), action::send_f(0, 0), 0});
    CHECK(sim.timeline.action_count() == 0);
    // validate() reports the same cycle.
    CHECK(ppsched::validate(o).count(ppsched::rule::deadlock) == 2);
}

TEST_CASE("a compute without its receive, or a receive never sent, is stuck for good",
          "[simulate_steps]") {
    order no_recv = ppsched_test::gpipe_2x2_lowered();
    no_recv.rank(1).erase(no_recv.rank(1).begin()); // drop 1RECV_F0
    const auto a = ppsched::simulate_steps(no_recv);
    REQUIRE(a.stuck.size() == 2);
    CHECK(a.stuck[1] == ppsched::step_wait{1, 0, action::forward(1, 0), action::recv_f(1, 0), -1});

    order no_send = ppsched_test::gpipe_2x2_lowered();
    no_send.rank(0).erase(no_send.rank(0).begin() + 1); // drop 0SEND_F0
    const auto b = ppsched::simulate_steps(no_send);
    REQUIRE_FALSE(b);
    CHECK(b.stuck.back() ==
          ppsched::step_wait{1, 0, action::recv_f(1, 0), action::send_f(0, 0), -1});
}

TEST_CASE("a compute-only order on several ranks is stuck at the first remote input",
          "[simulate_steps]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    order o(cfg);
    o.push(0, action::forward(0, 0));
    o.push(1, action::forward(1, 0));
    const auto sim = ppsched::simulate_steps(o);
    REQUIRE(sim.stuck.size() == 1);
    CHECK(sim.stuck[0].awaited == action::recv_f(1, 0));
    CHECK(ppsched::simulate_steps(std::vector<std::vector<action>>{{action::forward(0, 0),
                                                                    action::full_backward(0, 0)}},
                                  config{})
              .completed());
}

TEST_CASE("every generated order validates, lowers, validates lowered and simulates without "
          "deadlock",
          "[simulate_steps][validate][sweep]") {
    int generated = 0;
    for (const auto& entry : ppsched::builtin_schedules().entries()) {
        for (int p : {1, 2, 3, 4, 5, 8}) {
            for (int v : {1, 2, 3, 4}) {
                for (int m : {1, 2, 3, 4, 5, 7, 8, 12, 16, 24}) {
                    const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
                    order o;
                    try {
                        o = ppsched::builtin_schedules().generate(entry.name, cfg);
                    } catch (const ppsched::config_error&) {
                        continue; // a configuration the schedule does not serve
                    }
                    INFO(entry.name << " p=" << p << " v=" << v << " m=" << m);
                    const auto compute = ppsched::validate(o);
                    INFO(ppsched::to_string(compute));
                    REQUIRE(compute);
                    CHECK_NOTHROW(ppsched::add_spacing(o));
                    const order lowered = ppsched::lower(o);
                    const auto report = ppsched::validate(lowered);
                    INFO(ppsched::to_string(report));
                    CHECK(report);
                    const auto sim = ppsched::simulate_steps(lowered);
                    CHECK(sim.completed());
                    // The spaced timeline is still a valid lowered order.
                    CHECK(ppsched::validate(sim.timeline));
                    ++generated;
                }
            }
        }
    }
    CHECK(generated > 300);
}
