#include <ppsched/algorithms/add_send_recv.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/io/step_table.hpp>

#include <catch2/catch.hpp>

#include "support/order_literal.hpp"

#include <filesystem>
#include <string>

namespace fs = std::filesystem;
using ppsched::config;
using ppsched::stage_placement;
using ppsched_test::csv_rows;
using ppsched_test::order_of;

// Expected results below were worked out by hand, round by round, following PyTorch's rules:
// ranks are swept in ascending order once per round; a rank places its next item if ready; a
// SEND's RECV goes to the end of the peer's output at once (the peer can use it in the same
// round when its rank is higher, next round otherwise).

TEST_CASE("add_send_recv adds a send after each forward and backward that feeds another rank",
          "[add_send_recv]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 2};
    const auto in = order_of(cfg, {"0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"});
    const auto expected = order_of(cfg, {"0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1",
                                         "1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1"});
    CHECK(csv_rows(ppsched::add_send_recv(in)) == csv_rows(expected));
}

TEST_CASE("add_send_recv needs no communication between adjacent stages on one rank",
          "[add_send_recv]") {
    SECTION("a single rank holding every stage") {
        const config cfg{
            .ranks = 1, .stages_per_rank = 2, .microbatches = 1, .placement = stage_placement::v};
        const auto in = order_of(cfg, {"0F0,1F0,1B0,0B0"});
        CHECK(csv_rows(ppsched::add_send_recv(in)) == csv_rows(in));
    }
    SECTION("the turn of a V placement") {
        // Rank 0 holds stages 0 and 3, rank 1 holds 1 and 2: 1 -> 2 stays on rank 1.
        const config cfg{
            .ranks = 2, .stages_per_rank = 2, .microbatches = 1, .placement = stage_placement::v};
        const auto in = order_of(cfg, {"0F0,3F0,3B0,0B0", "1F0,2F0,2B0,1B0"});
        const auto expected =
            order_of(cfg, {"0F0,0SEND_F0,3RECV_F0,3F0,3B0,3SEND_B0,0RECV_B0,0B0",
                           "1RECV_F0,1F0,2F0,2SEND_F0,2RECV_B0,2B0,1B0,1SEND_B0"});
        CHECK(csv_rows(ppsched::add_send_recv(in)) == csv_rows(expected));
    }
}

TEST_CASE("add_send_recv sends SEND_B after I and nothing after W", "[add_send_recv]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    const auto in = order_of(cfg, {"0F0,0I0,0W0", "1F0,1I0,1W0"});
    const auto expected =
        order_of(cfg, {"0F0,0SEND_F0,0RECV_B0,0I0,0W0", "1RECV_F0,1F0,1I0,1SEND_B0,1W0"});
    CHECK(csv_rows(ppsched::add_send_recv(in)) == csv_rows(expected));
}

TEST_CASE("add_send_recv places an overlapped pair when both parts are ready and sends for each",
          "[add_send_recv]") {
    const config cfg{.ranks = 3, .stages_per_rank = 1, .microbatches = 2};
    const auto in =
        order_of(cfg, {"0F0,0F1,0B0,0B1", "1F0,(1F1;1B0)OVERLAP_F_B,1B1", "2F0,2B0,2F1,2B1"});
    const auto expected = order_of(
        cfg, {"0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1",
              "1RECV_F0,1F0,1SEND_F0,1RECV_F1,1RECV_B0,(1F1;1B0)OVERLAP_F_B,1SEND_F1,1SEND_B0,"
              "1RECV_B1,1B1,1SEND_B1",
              "2RECV_F0,2F0,2B0,2SEND_B0,2RECV_F1,2F1,2B1,2SEND_B1"});
    CHECK(csv_rows(ppsched::add_send_recv(in)) == csv_rows(expected));
}

TEST_CASE("add_send_recv spends a round on each idle slot, as PyTorch does", "[add_send_recv]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 2};
    // Without the idle slot rank 1 receives each forward just before running it; with it,
    // rank 0 gets one round ahead and both receives come first.
    const auto compact = order_of(cfg, {"0F0,0F1,0B0,0B1", "1F0,1F1,1B0,1B1"});
    const auto spaced = order_of(cfg, {"0F0,0F1,0B0,0B1", ",1F0,1F1,1B0,1B1"});
    CHECK(csv_rows(ppsched::add_send_recv(compact))[1] ==
          "1RECV_F0,1F0,1RECV_F1,1F1,1B0,1SEND_B0,1B1,1SEND_B1");
    CHECK(csv_rows(ppsched::add_send_recv(spaced))[1] ==
          "1RECV_F0,1RECV_F1,1F0,1F1,1B0,1SEND_B0,1B1,1SEND_B1");
}

TEST_CASE("add_send_recv keeps FSDP actions in place, one round each", "[add_send_recv]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    const auto in = order_of(
        cfg, {"0UNSHARD,0F0,0B0,0REDUCE_GRAD,0RESHARD", "1UNSHARD,1F0,1B0,1REDUCE_GRAD,1RESHARD"});
    // Round 1: both UNSHARD. Round 2: 0F0 sends; rank 1 receives and runs 1F0 at once.
    // Round 3: 0B0 waits; 1B0 sends back. Round 4: 0B0 runs; rank 1 reduces...
    const auto expected =
        order_of(cfg, {"0UNSHARD,0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD,0RESHARD",
                       "1UNSHARD,1RECV_F0,1F0,1B0,1SEND_B0,1REDUCE_GRAD,1RESHARD"});
    CHECK(csv_rows(ppsched::add_send_recv(in)) == csv_rows(expected));
}

TEST_CASE("add_send_recv reports an order whose ranks wait on each other",
          "[add_send_recv][errors]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    // Rank 0 wants a gradient before it sends its activation; rank 1 waits for that activation.
    const auto in = order_of(cfg, {"0B0,0F0", "1F0,1B0"});
    CHECK_THROWS_AS(ppsched::add_send_recv(in), ppsched::config_error);
    CHECK_THROWS_WITH(ppsched::add_send_recv(in), Catch::Contains("rank 0 waits forever"));
}

TEST_CASE("add_send_recv rejects an order that is lowered already or misplaces a stage",
          "[add_send_recv][errors]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    CHECK_THROWS_WITH(ppsched::add_send_recv(order_of(cfg, {"0F0,0SEND_F0", "1RECV_F0,1F0"})),
                      Catch::Contains("already has SEND_F"));
    CHECK_THROWS_WITH(ppsched::add_send_recv(order_of(cfg, {"0F0,1F0", "1B0"})),
                      Catch::Contains("stage 1 appears on rank 0 and on rank 1"));
    CHECK_THROWS_WITH(ppsched::add_send_recv(order_of(cfg, {"0F0,2F0", "1F0"})),
                      Catch::Contains("stage 2 on rank 0 is out of range"));
    const std::vector<std::vector<ppsched::action>> one_row{{ppsched::action::forward(0, 0)}};
    CHECK_THROWS_WITH(ppsched::add_send_recv(one_row, cfg),
                      Catch::Contains("1 rows but the configuration has 2 ranks"));
}

TEST_CASE("add_send_recv takes any range of rows of actions", "[add_send_recv]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    using ppsched::action;
    const std::vector<std::vector<action>> rows{
        {action::forward(0, 0), action::full_backward(0, 0)},
        {action::forward(1, 0), action::full_backward(1, 0)}};
    const auto lowered = ppsched::add_send_recv(rows, cfg);
    CHECK(csv_rows(lowered) ==
          std::vector<std::string>{"0F0,0SEND_F0,0RECV_B0,0B0", "1RECV_F0,1F0,1B0,1SEND_B0"});
}

TEST_CASE("add_send_recv works in constant expressions", "[add_send_recv][constexpr]") {
    constexpr config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 2};
    STATIC_REQUIRE(ppsched::add_send_recv(order_of(cfg, {"0F0,0F1,0B0,0B1", "1F0,1B0,1F1,1B1"})) ==
                   order_of(cfg, {"0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1",
                                  "1RECV_F0,1F0,1RECV_F1,1B0,1SEND_B0,1F1,1B1,1SEND_B1"}));
}

TEST_CASE("add_send_recv reproduces PyTorch's send/receive pass on the misc golden files",
          "[add_send_recv][conformance]") {
    // misc/<case>.add_send_recv.format.txt is PyTorch's step table of _add_send_recv run alone
    // on the compute order (idle slots included, no FSDP actions).
    const fs::path misc = fs::path(PPSCHED_CONFORMANCE_DIR) / "torch" / "misc";
    const fs::path compute = fs::path(PPSCHED_CONFORMANCE_DIR) / "torch" / "compute";
    const std::string suffix = ".add_send_recv.format.txt";
    int files = 0;
    for (const auto& entry : fs::directory_iterator(misc)) {
        const std::string name = entry.path().filename().string();
        if (name.size() <= suffix.size() || name.substr(name.size() - suffix.size()) != suffix)
            continue;
        const std::string stem = name.substr(0, name.size() - suffix.size());
        INFO(stem);
        // These cases are all 4 ranks x 8 microbatches x 2 stages per rank (README).
        const bool v = stem.rfind("ZBVZeroBubble", 0) == 0 || stem.rfind("DualPipeV", 0) == 0;
        const config cfg{.ranks = 4,
                         .stages_per_rank = 2,
                         .microbatches = 8,
                         .placement = v ? stage_placement::v : stage_placement::loop};
        const auto in = ppsched::io::read_csv(
            ppsched::io::read_file((compute / (stem + ".csv")).string()), cfg);
        const std::string expected = ppsched::io::read_file(entry.path().string());
        CHECK(ppsched::io::format_step_table(ppsched::add_send_recv(in)) == expected);
        ++files;
    }
    CHECK(files == 5);
}
