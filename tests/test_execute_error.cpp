// execute/error.hpp: how execute ends, on its own (when it throws is tested in test_execute.cpp).

#include <ppsched/execute/error.hpp>

#include <catch2/catch.hpp>

#include <string>

using ppsched::action;
using ppsched::execution_error;
using ppsched::execution_failure;

TEST_CASE("every failure has a short name", "[execute_error]") {
    STATIC_REQUIRE(to_string_view(execution_failure::missing_handler) == "missing_handler");
    STATIC_REQUIRE(to_string_view(execution_failure::missing_input) == "missing_input");
    STATIC_REQUIRE(to_string_view(execution_failure::leftover) == "leftover");
}

TEST_CASE("an execution error carries the rank, step and action", "[execute_error]") {
    const execution_error e(execution_failure::duplicate, 1, 4, action::forward(1, 0),
                            "ppsched::execute: rank 1, step 4 (1F0): runs twice [duplicate]");
    CHECK(e.reason() == execution_failure::duplicate);
    CHECK(e.rank() == 1);
    CHECK(e.step() == 4);
    CHECK(e.subject() == action::forward(1, 0));
    CHECK(std::string(e.what()).find("[duplicate]") != std::string::npos);
    CHECK(ppsched::execution_stats{}.actions == 0);
}
