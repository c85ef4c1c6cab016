// infer_config: the configuration an order makes obvious, including the placement (loop, v,
// or dual when the stages split into two pipelines with half the microbatches each).

#include <ppsched/infer_config.hpp>

#include <catch2/catch.hpp>

#include "support/order_literal.hpp"

using ppsched::config;
using ppsched::stage_placement;
using ppsched_test::order_of;

namespace {
// The rows are what matters; the order's own configuration is a placeholder.
constexpr config any{.ranks = 2};
} // namespace

TEST_CASE("infer_config reads ranks, stages and microbatches off the actions",
          "[infer_config][static]") {
    STATIC_REQUIRE(ppsched::infer_config(order_of(any, {"0F0,0F1,,0B0,0B1", "1F0,1B0,1F1,1B1"})) ==
                   config{.ranks = 2, .stages_per_rank = 1, .microbatches = 2});
    // Stages 0 and 2 on rank 0: loop.
    STATIC_REQUIRE(
        ppsched::infer_config(order_of(any, {"0F0,2F0,2B0,0B0", "1F0,3F0,3B0,1B0"})).placement ==
        stage_placement::loop);
    // Stages 0 and 3 on rank 0, every stage runs every microbatch: v.
    STATIC_REQUIRE(ppsched::infer_config(order_of(any, {"0F0,0F1,3F0,3F1,3B0,3B1,0B0,0B1",
                                                        "1F0,1F1,2F0,2F1,2B0,2B1,1B0,1B1"}))
                       .placement == stage_placement::v);
}

TEST_CASE("infer_config recognises two pipelines in opposite directions",
          "[infer_config][static]") {
    // Stages 0-1 run microbatch 0 only, stages 2-3 (stage 2 on rank 1) microbatch 1 only.
    constexpr config dual{
        .ranks = 2, .stages_per_rank = 2, .microbatches = 2, .placement = stage_placement::dual};
    STATIC_REQUIRE(ppsched::infer_config(order_of(any, {"0F0,3F1,3B1,0B0", "2F1,1F0,1B0,2B1"})) ==
                   dual);
    // One microbatch in the wrong half: not two pipelines (the V placement still fits).
    STATIC_REQUIRE(ppsched::infer_config(order_of(any, {"0F0,0F1,3F1,3B1,0B0", "2F1,1F0,1B0,2B1"}))
                       .placement == stage_placement::v);
}

TEST_CASE("infer_config does not overflow on the largest microbatch index", "[infer_config]") {
    // `0F2147483647`: max_microbatch + 1 does not fit an int; the count saturates.
    const std::vector<std::vector<ppsched::action>> rows{
        {ppsched::action::forward(0, ppsched::max_microbatch)}};
    const ppsched::config cfg = ppsched::infer_config(rows);
    CHECK(cfg.microbatches == ppsched::max_microbatch);
    CHECK(cfg.ranks == 1);
}
