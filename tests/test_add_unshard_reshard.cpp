#include <ppsched/algorithms/add_unshard_reshard.hpp>
#include <ppsched/algorithms/detail/py_int_set.hpp>

#include <catch2/catch.hpp>

#include "support/order_literal.hpp"

#include <utility>
#include <vector>

using ppsched::config;
using ppsched_test::csv_rows;
using ppsched_test::order_of;

// Expected orders below were worked out by hand from PyTorch's rule: before each action the
// window is the next `prefetch` distinct stages (an overlapped pair counts both stages and may
// make it one longer); active stages outside it are resharded, window stages not active are
// unsharded (window order); what is active at the end is resharded.

TEST_CASE("add_unshard_reshard brackets a single stage with UNSHARD and RESHARD",
          "[add_unshard_reshard]") {
    const config cfg{.ranks = 1, .stages_per_rank = 1, .microbatches = 2};
    const auto lowered = ppsched::add_unshard_reshard(order_of(cfg, {"0F0,,0F1,0B0,,0B1"}));
    CHECK(csv_rows(lowered) ==
          std::vector<std::string>{"0UNSHARD,0F0,0F1,0B0,0B1,0RESHARD"}); // idle slots dropped
}

TEST_CASE("add_unshard_reshard prefetches the next three stages and evicts the one that leaves",
          "[add_unshard_reshard]") {
    const config cfg{.ranks = 1, .stages_per_rank = 4, .microbatches = 1};
    const auto in = order_of(cfg, {"0F0,1F0,2F0,3F0,3B0,2B0,1B0,0B0"});
    CHECK(csv_rows(ppsched::add_unshard_reshard(in)) ==
          std::vector<std::string>{
              "0UNSHARD,1UNSHARD,2UNSHARD,0F0,0RESHARD,3UNSHARD,1F0,2F0,3F0,3B0,3RESHARD,"
              "0UNSHARD,2B0,2RESHARD,1B0,1RESHARD,0B0,0RESHARD"});
    SECTION("a window as large as the rank's stages keeps them all until they are done") {
        const std::vector<std::string> all{
            "0UNSHARD,1UNSHARD,2UNSHARD,3UNSHARD,0F0,1F0,2F0,3F0,3B0,3RESHARD,2B0,2RESHARD,1B0,"
            "1RESHARD,0B0,0RESHARD"};
        CHECK(csv_rows(ppsched::add_unshard_reshard(in, 4)) == all);
        CHECK(csv_rows(ppsched::add_unshard_reshard(in, 1'000'000'000)) == all);
    }
    SECTION("a window of one stage unshards each stage just before it runs") {
        CHECK(csv_rows(ppsched::add_unshard_reshard(in, 1)) ==
              std::vector<std::string>{
                  "0UNSHARD,0F0,0RESHARD,1UNSHARD,1F0,1RESHARD,2UNSHARD,2F0,2RESHARD,3UNSHARD,"
                  "3F0,3B0,3RESHARD,2UNSHARD,2B0,2RESHARD,1UNSHARD,1B0,1RESHARD,0UNSHARD,0B0,"
                  "0RESHARD"});
    }
}

TEST_CASE("add_unshard_reshard counts both stages of an overlapped pair", "[add_unshard_reshard]") {
    const config cfg{.ranks = 1, .stages_per_rank = 4, .microbatches = 1};
    // With a window of 2 the pair (1, 2) completes the window of 0F0, which then holds 3 stages.
    const auto in = order_of(cfg, {"0F0,(1F0;2B0)OVERLAP_F_B,3F0"});
    CHECK(csv_rows(ppsched::add_unshard_reshard(in, 2)) ==
          std::vector<std::string>{"0UNSHARD,1UNSHARD,2UNSHARD,0F0,0RESHARD,(1F0;2B0)OVERLAP_F_B,"
                                   "1RESHARD,2RESHARD,3UNSHARD,3F0,3RESHARD"});
}

TEST_CASE("add_unshard_reshard reshards in CPython's set order, as PyTorch does",
          "[add_unshard_reshard]") {
    // Stages 2 and 9 leave the window together. CPython's 8-slot table holds 9 in slot 1 and 2
    // in slot 2, so PyTorch reshards 9 first (ascending order would say 2 first).
    const config cfg{.ranks = 1, .stages_per_rank = 10, .microbatches = 1};
    const auto in = order_of(cfg, {"(2F0;9B0)OVERLAP_F_B,3F0,4F0,5F0"});
    CHECK(csv_rows(ppsched::add_unshard_reshard(in)) ==
          std::vector<std::string>{"2UNSHARD,9UNSHARD,3UNSHARD,(2F0;9B0)OVERLAP_F_B,9RESHARD,"
                                   "2RESHARD,4UNSHARD,5UNSHARD,3F0,3RESHARD,4F0,4RESHARD,5F0,"
                                   "5RESHARD"});
}

TEST_CASE("add_unshard_reshard works on every rank independently", "[add_unshard_reshard]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    const auto lowered = ppsched::add_unshard_reshard(order_of(cfg, {"0F0,0B0", ",1F0,1B0"}));
    CHECK(csv_rows(lowered) ==
          std::vector<std::string>{"0UNSHARD,0F0,0B0,0RESHARD", "1UNSHARD,1F0,1B0,1RESHARD"});
    CHECK(lowered.cfg() == cfg);
}

TEST_CASE("add_unshard_reshard requires a positive window", "[add_unshard_reshard][errors]") {
    const config cfg{.ranks = 1, .stages_per_rank = 1, .microbatches = 1};
    CHECK_THROWS_WITH(ppsched::add_unshard_reshard(order_of(cfg, {"0F0,0B0"}), 0),
                      Catch::Contains("prefetch must be >= 1"));
}

TEST_CASE("add_unshard_reshard works in constant expressions", "[add_unshard_reshard][constexpr]") {
    constexpr config cfg{.ranks = 1, .stages_per_rank = 4, .microbatches = 1};
    STATIC_REQUIRE(
        ppsched::add_unshard_reshard(order_of(cfg, {"0F0,1F0,2F0,3F0,3B0,2B0,1B0,0B0"})) ==
        order_of(cfg, {"0UNSHARD,1UNSHARD,2UNSHARD,0F0,0RESHARD,3UNSHARD,1F0,2F0,3F0,3B0,"
                       "3RESHARD,0UNSHARD,2B0,2RESHARD,1B0,1RESHARD,0B0,0RESHARD"}));
}

namespace {
std::vector<int> iterate(const ppsched::detail::py_int_set& s) {
    std::vector<int> out;
    s.for_each([&](int k) { out.push_back(k); });
    return out;
}
} // namespace

TEST_CASE("py_int_set iterates in CPython's set order", "[add_unshard_reshard][detail]") {
    // Expected lists recorded from CPython 3.11 (`list(s)` after the same adds and removes).
    struct op {
        bool add;
        int key;
    };
    const std::vector<std::pair<std::vector<op>, std::vector<int>>> traces{
        {{{true, 2}, {true, 9}, {true, 3}}, {9, 2, 3}},
        {{{true, 2}, {true, 9}, {true, 3}, {false, 9}, {false, 2}, {true, 4}, {true, 5}},
         {3, 4, 5}},
        {{{true, 17}, {true, 1}, {true, 33}, {true, 9}}, {17, 9, 1, 33}},
        {{{true, 5},
          {true, 13},
          {true, 21},
          {false, 5},
          {true, 29},
          {false, 13},
          {true, 5},
          {true, 100}},
         {5, 21, 100, 29}},
        {{{true, 0},
          {true, 8},
          {true, 16},
          {true, 24},
          {true, 32},
          {false, 8},
          {false, 16},
          {true, 40},
          {true, 8}},
         {0, 32, 40, 8, 24}},
    };
    for (const auto& [ops, expected] : traces) {
        ppsched::detail::py_int_set s;
        for (const op& o : ops) {
            if (o.add)
                s.insert(o.key);
            else
                s.erase(o.key);
        }
        CHECK(iterate(s) == expected);
        CHECK(s.size() == expected.size());
        for (int k : expected) CHECK(s.contains(k));
    }
}
