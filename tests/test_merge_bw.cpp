#include <ppsched/algorithms/merge_bw.hpp>

#include <catch2/catch.hpp>

#include "support/order_literal.hpp"

#include <string>
#include <vector>

using ppsched::config;
using ppsched_test::csv_rows;
using ppsched_test::order_of;

TEST_CASE("merge_bw fuses an I directly followed by its W into a B", "[merge_bw]") {
    const config cfg{.ranks = 1, .stages_per_rank = 2, .microbatches = 3};
    // 0I0 and 0W0 are adjacent once the idle slot is dropped; 0I1 is followed by another
    // microbatch's W, and 1I2 by another stage's W, so neither merges.
    const auto in = order_of(cfg, {"0I0,,0W0,0I1,0W2,0W1,1I2,0W2,1W2"});
    CHECK(csv_rows(ppsched::merge_bw(in)) ==
          std::vector<std::string>{"0B0,0I1,0W2,0W1,1I2,0W2,1W2"});
}

TEST_CASE("merge_bw leaves forwards, full backwards and overlapped pairs alone", "[merge_bw]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 2};
    const auto in = order_of(cfg, {"0F0,0F1,0B0,0I1,0W1", "1F0,(1F1;1I0)OVERLAP_F_B,1W0,1I1,1W1"});
    CHECK(csv_rows(ppsched::merge_bw(in)) ==
          std::vector<std::string>{"0F0,0F1,0B0,0B1", "1F0,(1F1;1I0)OVERLAP_F_B,1W0,1B1"});
}

TEST_CASE("merge_bw works in constant expressions", "[merge_bw][constexpr]") {
    constexpr config cfg{.ranks = 1, .stages_per_rank = 1, .microbatches = 2};
    STATIC_REQUIRE(ppsched::merge_bw(order_of(cfg, {"0F0,0F1,0I0,0W0,0I1,,0W1"})) ==
                   order_of(cfg, {"0F0,0F1,0B0,0B1"}));
}
