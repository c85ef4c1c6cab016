// execute/handlers.hpp: the handler contract on its own (what execute does with it is tested in
// test_execute.cpp).

#include <ppsched/execute/handlers.hpp>

#include <catch2/catch.hpp>

#include <chrono>

using ppsched::action;
using ppsched::action_kind;
using ppsched::step_context;
using ppsched::wait_result;

namespace {

struct done_handle {
    wait_result wait() { return wait_result::ok(); }
};
struct int_receive {
    wait_result wait() { return wait_result::ok(); }
    int take() { return 7; }
};

// Forward and backward only, and a run-time refusal of B.
struct compute_only {
    using value_type = int;
    int forward(const step_context&, int x) { return x + 1; }
    int full_backward(const step_context&, int g) { return g; }
    bool provides(action_kind k) const { return k != action_kind::full_backward; }
};

// Everything a lowered program needs.
struct communicating {
    using value_type = int;
    int forward(const step_context&, int x) { return x; }
    int full_backward(const step_context&, int g) { return g; }
    done_handle send(const step_context&, int) { return {}; }
    int_receive recv(const step_context&) { return {}; }
};

} // namespace

TEST_CASE("handles are movable things with a wait, receives also have a take",
          "[execute_handlers]") {
    STATIC_REQUIRE(ppsched::async_handle<done_handle>);
    STATIC_REQUIRE(ppsched::receive_handle<int_receive, int>);
    STATIC_REQUIRE(!ppsched::receive_handle<done_handle, int>);
}

TEST_CASE("what a handler set handles is detected per kind", "[execute_handlers]") {
    STATIC_REQUIRE(ppsched::pipeline_handlers<compute_only>);
    STATIC_REQUIRE(ppsched::handles_forward<compute_only>);
    STATIC_REQUIRE(!ppsched::handles_send<compute_only>);
    STATIC_REQUIRE(ppsched::handles_send<communicating>);
    STATIC_REQUIRE(ppsched::handles_recv<communicating>);
    CHECK(ppsched::handles(compute_only{}, action_kind::forward));
    CHECK(!ppsched::handles(compute_only{}, action_kind::full_backward)); // declined
    CHECK(!ppsched::handles(compute_only{}, action_kind::send_f));
    CHECK(ppsched::handles(communicating{}, action_kind::recv_b));
}

TEST_CASE("a wait result says how an operation ended", "[execute_handlers]") {
    CHECK(wait_result::ok());
    CHECK(!wait_result::failure("peer 3 died"));
    CHECK(wait_result::timeout("30 s").status == ppsched::wait_status::timed_out);
}

TEST_CASE("action_timeline records each action it is told about", "[execute_handlers]") {
    ppsched::action_timeline t;
    const auto now = ppsched::execution_clock::now();
    t.on_action(step_context{.rank = 1, .step = 4, .act = action::forward(1, 0)}, now,
                now + std::chrono::milliseconds(2));
    REQUIRE(t.entries.size() == 1);
    CHECK(t.entries[0].step == 4);
    CHECK(t.entries[0].act == action::forward(1, 0));
    CHECK(t.entries[0].end - t.entries[0].start == std::chrono::milliseconds(2));
}
