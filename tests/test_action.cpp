#include <ppsched/action.hpp>

#include <catch2/catch.hpp>

using ppsched::action;
using ppsched::action_kind;

namespace {
constexpr bool round_trips_at_compile_time(std::string_view text, action expected) {
    action a;
    return ppsched::detail::parse_action(text, a) && a == expected;
}
constexpr bool rejected_at_compile_time(std::string_view text) {
    action a;
    return !ppsched::detail::parse_action(text, a);
}
} // namespace

TEST_CASE("an action is a compact trivially copyable value", "[action]") {
    STATIC_REQUIRE(sizeof(action) == 16);
    STATIC_REQUIRE(std::is_trivially_copyable_v<action>);
    STATIC_REQUIRE(action::forward(2, 0) == action(2, action_kind::forward, 0));
    STATIC_REQUIRE(action::forward(1, 3) < action::full_backward(1, 0));
    STATIC_REQUIRE(action::forward(0, 9) < action::forward(1, 0));
}

TEST_CASE("actions parse at compile time", "[action][parse]") {
    STATIC_REQUIRE(round_trips_at_compile_time("2F0", action::forward(2, 0)));
    STATIC_REQUIRE(round_trips_at_compile_time("1UNSHARD", action::unshard(1)));
    STATIC_REQUIRE(round_trips_at_compile_time("3SEND_F1", action::send_f(3, 1)));
    STATIC_REQUIRE(round_trips_at_compile_time("0REDUCE_GRAD", action::reduce_grad(0)));
    STATIC_REQUIRE(round_trips_at_compile_time(
        "(0F3;3B1)OVERLAP_F_B",
        action::overlap(action::forward(0, 3), action::full_backward(3, 1))));
    STATIC_REQUIRE(rejected_at_compile_time("F0"));
    STATIC_REQUIRE(rejected_at_compile_time("2X0"));
    STATIC_REQUIRE(rejected_at_compile_time("(0F3;3B1"));
}

TEST_CASE("to_string writes PyTorch's form", "[action][format]") {
    CHECK(to_string(action::forward(2, 0)) == "2F0");
    CHECK(to_string(action::backward_input(1, 3)) == "1I3");
    CHECK(to_string(action::recv_b(2, 3)) == "2RECV_B3");
    CHECK(to_string(action::overlap(action::forward(0, 3), action::full_backward(3, 1))) ==
          "(0F3;3B1)OVERLAP_F_B");
}

TEST_CASE("overlapped actions expose their parts", "[action]") {
    constexpr auto o = action::overlap(action::forward(0, 7), action::full_backward(7, 3));
    STATIC_REQUIRE(o.is_overlap());
    STATIC_REQUIRE(o.forward_part() == action::forward(0, 7));
    STATIC_REQUIRE(o.backward_part() == action::full_backward(7, 3));
    STATIC_REQUIRE(o.stage() == 0);
}

TEST_CASE("malformed action strings are rejected with the column", "[action][parse]") {
    struct bad {
        const char* text;
        std::size_t column;
    };
    const bad cases[] = {{"", 1},
                         {"F0", 1},
                         {"2X0", 2},
                         {"-1F0", 1},
                         {"1F-2", 3},
                         {"99999999F0", 1},
                         {"1F99999999999", 3},
                         {"(0F3;3B1", 9},
                         {"(0F3;3B1)", 10},
                         {"0F3;3B1)OVERLAP_F_B", 4},
                         {"2F0x", 4},
                         {"1UNSHARD0", 9},
                         {"1SEND_F", 8},
                         {"(0B3;3F1)OVERLAP_F_B", 2},
                         {" 2F0", 1}};
    for (const auto& c : cases) {
        INFO(c.text);
        try {
            (void)ppsched::parse_action(c.text);
            FAIL("accepted");
        } catch (const ppsched::parse_error& e) {
            CHECK(e.column() == c.column);
            CHECK_THAT(e.what(), Catch::Matchers::Contains("expected"));
        }
    }
}

TEST_CASE("named constructors check their preconditions", "[action]") {
    CHECK_THROWS_AS(action(1, action_kind::unshard, 3), ppsched::config_error);
    CHECK_THROWS_AS(action(1, action_kind::forward), ppsched::config_error);
    CHECK_THROWS_AS(action(70000, action_kind::forward, 0), ppsched::config_error);
    CHECK_THROWS_AS(action::overlap(action::full_backward(0, 0), action::forward(1, 0)),
                    ppsched::config_error);
}
