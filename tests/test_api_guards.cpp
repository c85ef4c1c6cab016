// The library's guards against misuse found by a review as a C++ user (29 November): each
// case once ended in a use after free, a buffer overflow, undefined behaviour or a silent
// wrong answer; now it works or throws `config_error`.
#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/cost_model.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/schedules.hpp>

#include <catch2/catch.hpp>

#include "support/rows_by_value.hpp"

#include <ranges>
#include <vector>

using ppsched::action;
using ppsched::action_kind;
using ppsched::config;
using ppsched::config_error;
using ppsched::order;
using ppsched::rank_slots;
using ppsched::slot;

TEST_CASE("validate reads rows a range makes on the fly (prvalues) by copying them",
          "[guards][validate]") {
    const order o = ppsched::generate<ppsched::one_f_one_b>(config{.ranks = 2, .microbatches = 4});
    const test_support::rows_by_value rows{&o};
    const auto report = ppsched::validate(rows, o.cfg());
    INFO(ppsched::to_string(report));
    CHECK(report.valid());
}

namespace {
// A row readable only through a non-const reference, as `views::filter` rows are (it caches
// its begin); the algorithms read rows through const references.
struct mutable_only_row {
    std::vector<slot> slots;
    slot* begin() { return slots.data(); }
    slot* end() { return slots.data() + slots.size(); }
};
} // namespace

TEST_CASE("order_range refuses rows that cannot be read through a const reference",
          "[guards][order]") {
    STATIC_REQUIRE(std::ranges::forward_range<mutable_only_row>);
    STATIC_REQUIRE_FALSE(ppsched::order_range<std::vector<mutable_only_row>>);
    STATIC_REQUIRE(ppsched::order_range<std::vector<std::vector<action>>>);
}

TEST_CASE("an action of an unknown kind is refused", "[guards][action]") {
    CHECK_THROWS_AS(action(0, static_cast<action_kind>(12), 0), config_error);
    CHECK_THROWS_AS(action(0, static_cast<action_kind>(255), 0), config_error);
}

TEST_CASE("an order of a negative rank count is refused", "[guards][order]") {
    CHECK_THROWS_AS(order(config{.ranks = -1}), config_error);
}

TEST_CASE("a B below the I or W it derives the other from is refused; all three are taken "
          "as given",
          "[guards][costs]") {
    ppsched::cost_model c;
    c.uniform.backward_input = 3;
    c.uniform.full_backward = 2; // W would be B - I = -1
    CHECK_THROWS_AS(c.at(0), config_error);
    c.uniform.backward_weight = 1; // a fused B is its own kernel: any cost
    CHECK(c.at(0).full_backward == 2);
    CHECK(c.at(0).backward_weight == 1);
}

TEST_CASE("generation refuses configurations of 2^31 slots or more", "[guards][generate]") {
    // Once a signed overflow (undefined behaviour) in the generators' index arithmetic.
    CHECK_THROWS_AS(ppsched::generate<ppsched::interleaved_1f1b>(
                        config{.ranks = 1, .stages_per_rank = 2, .microbatches = 1 << 30}),
                    config_error);
    CHECK_THROWS_AS(
        ppsched::generate<ppsched::gpipe>(config{.ranks = 1, .microbatches = 2147483647}),
        config_error);
}

TEST_CASE("lower refuses an order far smaller than its configuration's tables", "[guards][lower]") {
    // Two actions checked against 2^31 - 1 microbatches: once 2 GB of tables.
    order o(config{.ranks = 1, .microbatches = 2147483647});
    o.push(0, action::forward(0, 0));
    o.push(0, action::full_backward(0, 0));
    CHECK_THROWS_AS(ppsched::lower(o), config_error);
}
