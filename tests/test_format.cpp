#include <ppsched/format.hpp>

#include <catch2/catch.hpp>

// fmt's range support must not clash with the explicit order/slot formatters.
#include <fmt/ranges.h>

#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using ppsched::action;

TEST_CASE("actions format in PyTorch's string form", "[format]") {
    CHECK(fmt::format("{}", action::forward(2, 0)) == "2F0");
    CHECK(fmt::format("{}", action::unshard(1)) == "1UNSHARD");
    CHECK(fmt::format("{}", action::send_f(3, 1)) == "3SEND_F1");
    CHECK(fmt::format("{}", action::reduce_grad(0)) == "0REDUCE_GRAD");
    CHECK(fmt::format("{}", action::overlap(action::forward(0, 3), action::full_backward(3, 1))) ==
          "(0F3;3B1)OVERLAP_F_B");
}

TEST_CASE("every conformance action formats as its CSV cell", "[format][conformance]") {
    const fs::path file =
        fs::path(PPSCHED_CONFORMANCE_DIR) / "torch" / "comms" / "DualPipeV_pp4_mb8_v2.csv";
    const std::string text = ppsched::io::read_file(file.string());
    const auto rows = ppsched::io::read_csv_rows(text);
    std::string rebuilt;
    for (const auto& row : rows) rebuilt += fmt::format("{}\n", fmt::join(row, ","));
    CHECK(rebuilt == text);
}

TEST_CASE("actions and slots accept string width and alignment", "[format]") {
    CHECK(fmt::format("[{:<5}]", action::forward(1, 2)) == "[1F2  ]");
    CHECK(fmt::format("[{:>5}]", action::forward(1, 2)) == "[  1F2]");
    CHECK(fmt::format("[{:^5}]", ppsched::slot(action::full_backward(0, 0))) == "[ 0B0 ]");
    CHECK(fmt::format("[{:3}]", ppsched::slot{}) == "[   ]");
}

TEST_CASE("idle slots format as empty text", "[format]") {
    CHECK(fmt::format("{}", ppsched::slot{}).empty());
    CHECK(fmt::format("{}", ppsched::slot(action::backward_weight(4, 7))) == "4W7");
}

TEST_CASE("kinds and placements format as their codes", "[format]") {
    CHECK(fmt::format("{}", ppsched::action_kind::recv_b) == "RECV_B");
    CHECK(fmt::format("{}", ppsched::action_kind::overlap_f_b) == "OVERLAP_F_B");
    CHECK(fmt::format("{}", ppsched::stage_placement::v) == "v");
    CHECK(fmt::format("{:>5}", ppsched::stage_placement::loop) == " loop");
}

TEST_CASE("configs format as key=value pairs", "[format]") {
    const ppsched::config cfg{.ranks = 4, .stages_per_rank = 2, .microbatches = 8};
    CHECK(fmt::format("{}", cfg) == "ranks=4 stages_per_rank=2 microbatches=8 placement=loop");
    const ppsched::config v{.ranks = 2,
                            .stages_per_rank = 2,
                            .microbatches = 3,
                            .placement = ppsched::stage_placement::v};
    CHECK(fmt::format("{}", v) == "ranks=2 stages_per_rank=2 microbatches=3 placement=v");
}

TEST_CASE("orders format as CSV by default and as the step table with t", "[format]") {
    const fs::path torch = fs::path(PPSCHED_CONFORMANCE_DIR) / "torch";
    const std::string csv =
        ppsched::io::read_file((torch / "compute" / "Interleaved1F1B_pp4_mb8_v2.csv").string());
    const auto order = ppsched::io::read_csv(csv);
    CHECK(fmt::format("{}", order) == csv);
    CHECK(fmt::format("{:c}", order) == csv);
    CHECK(fmt::format("{:t}", order) ==
          ppsched::io::read_file(
              (torch / "misc" / "Interleaved1F1B_pp4_mb8_v2.format_compute.txt").string()));
}

TEST_CASE("an unknown order presentation is a format error", "[format][errors]") {
    const auto order = ppsched::io::read_csv("0F0\n");
    CHECK_THROWS_AS(fmt::format(fmt::runtime("{:x}"), order), fmt::format_error);
    CHECK_THROWS_AS(fmt::format(fmt::runtime("{:q}"), ppsched::config{}), fmt::format_error);
}
