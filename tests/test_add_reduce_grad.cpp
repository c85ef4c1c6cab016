#include <ppsched/algorithms/add_reduce_grad.hpp>

#include <catch2/catch.hpp>

#include "support/order_literal.hpp"

#include <string>
#include <vector>

using ppsched::config;
using ppsched_test::csv_rows;
using ppsched_test::order_of;

TEST_CASE("add_reduce_grad follows the last W of each stage, not its last I", "[add_reduce_grad]") {
    const config cfg{.ranks = 1, .stages_per_rank = 1, .microbatches = 2};
    const auto lowered = ppsched::add_reduce_grad(order_of(cfg, {"0F0,0F1,,0B0,0I1,0W1"}));
    CHECK(csv_rows(lowered) == std::vector<std::string>{"0F0,0F1,0B0,0I1,0W1,0REDUCE_GRAD"});
}

TEST_CASE("add_reduce_grad counts the backward inside an overlapped pair", "[add_reduce_grad]") {
    // One rank holds stages 0 and 1. Stage 0's first backward (microbatch 1) is inside the
    // pair, so its REDUCE_GRAD follows 0B0; stage 1's follows 1B0.
    const config cfg{.ranks = 1, .stages_per_rank = 2, .microbatches = 2};
    const auto in = order_of(cfg, {"0F0,0F1,1F1,1B1,(1F0;0B1)OVERLAP_F_B,1B0,0B0"});
    CHECK(csv_rows(ppsched::add_reduce_grad(in)) ==
          std::vector<std::string>{
              "0F0,0F1,1F1,1B1,(1F0;0B1)OVERLAP_F_B,1B0,1REDUCE_GRAD,0B0,0REDUCE_GRAD"});
}

TEST_CASE("add_reduce_grad leaves a stage with too few backwards alone", "[add_reduce_grad]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 2};
    const auto lowered = ppsched::add_reduce_grad(order_of(cfg, {"0F0,0B0", "1F0,1F1,1B0,1B1"}));
    CHECK(csv_rows(lowered) == std::vector<std::string>{"0F0,0B0", "1F0,1F1,1B0,1B1,1REDUCE_GRAD"});
}

TEST_CASE("add_reduce_grad works in constant expressions", "[add_reduce_grad][constexpr]") {
    constexpr config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    STATIC_REQUIRE(ppsched::add_reduce_grad(order_of(cfg, {"0F0,,0I0,0W0", "1F0,1B0"})) ==
                   order_of(cfg, {"0F0,0I0,0W0,0REDUCE_GRAD", "1F0,1B0,1REDUCE_GRAD"}));
}

TEST_CASE("add_reduce_grad counts only the microbatches of a stage's direction",
          "[add_reduce_grad][dual]") {
    // Two pipelines: stages 0-1 run microbatch 0, stages 2-3 (stage 2 on rank 1) microbatch 1.
    // Each stage's gradient is complete after its single backward.
    constexpr config cfg{.ranks = 2,
                         .stages_per_rank = 2,
                         .microbatches = 2,
                         .placement = ppsched::stage_placement::dual};
    STATIC_REQUIRE(
        ppsched::add_reduce_grad(order_of(cfg, {"0F0,3F1,3B1,0B0", "2F1,1F0,1B0,2B1"})) ==
        order_of(cfg, {"0F0,3F1,3B1,3REDUCE_GRAD,0B0,0REDUCE_GRAD",
                       "2F1,1F0,1B0,1REDUCE_GRAD,2B1,2REDUCE_GRAD"}));
}
