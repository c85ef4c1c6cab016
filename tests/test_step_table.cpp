#include <ppsched/io/step_table.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/io/csv.hpp>

#include <catch2/catch.hpp>

#include <deque>
#include <filesystem>
#include <list>
#include <optional>
#include <string>
#include <vector>

#include "support/hand_orders.hpp"
#include "support/rows_by_value.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path torch_dir = fs::path(PPSCHED_CONFORMANCE_DIR) / "torch";

// Splits text into lines without their '\n'.
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        out.push_back(text.substr(pos, eol - pos));
        pos = eol + 1;
    }
    return out;
}

} // namespace

TEST_CASE("the step table reproduces PyTorch's format_compute and format_comms files",
          "[step_table][conformance]") {
    const fs::path misc = torch_dir / "misc";
    REQUIRE(fs::exists(misc));
    std::size_t compared = 0;
    for (const auto& entry : fs::directory_iterator(misc)) {
        const std::string name = entry.path().filename().string();
        for (const std::string kind : {"compute", "comms"}) {
            const std::string suffix = ".format_" + kind + ".txt";
            if (name.size() <= suffix.size() ||
                name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
                continue;
            const std::string base = name.substr(0, name.size() - suffix.size());
            const fs::path csv = torch_dir / kind / (base + ".csv");
            INFO(csv.string());
            REQUIRE(fs::exists(csv));
            const auto order = ppsched::io::read_csv_file(csv.string());
            const std::string expected = ppsched::io::read_file(entry.path().string());
            CHECK(ppsched::io::format_step_table(order) == expected);
            ++compared;
        }
    }
    // Five schedules, compute and comms each.
    CHECK(compared == 10);
}

TEST_CASE("the error marker is appended to exactly the named step", "[step_table]") {
    const auto order = ppsched::io::read_csv_file(
        (torch_dir / "compute" / "Interleaved1F1B_pp4_mb8_v2.csv").string());
    const auto plain = lines_of(ppsched::io::format_step_table(order));
    const std::size_t error_step = 7;
    const auto marked = lines_of(ppsched::io::format_step_table(order, error_step));
    REQUIRE(marked.size() == plain.size());
    for (std::size_t i = 0; i < plain.size(); ++i) {
        INFO("line " << i);
        // Line 0 is the header; step i is on line i + 1.
        if (i == error_step + 1)
            CHECK(marked[i] == plain[i] + " <-- ERROR HERE");
        else
            CHECK(marked[i] == plain[i]);
    }
}

TEST_CASE("an error step past the end marks nothing", "[step_table]") {
    const std::vector<std::vector<ppsched::action>> rows{{ppsched::action::forward(0, 0)}};
    CHECK(ppsched::io::format_step_table(rows, std::size_t{5}) ==
          ppsched::io::format_step_table(rows));
}

TEST_CASE("the step table accepts ranges of optional actions and ragged rows", "[step_table]") {
    using ppsched::action;
    // PyTorch's layout rules: margin = step label + 2, columns at least as wide as a step label
    // ("Step 0" = 6), ranks separated by one space, missing steps are empty cells.
    const std::vector<std::vector<std::optional<action>>> rows{
        {action::forward(0, 0), std::nullopt, action::full_backward(0, 0)},
        {action::forward(1, 0)},
    };
    const std::string expected = "        Rank 0 Rank 1\n"
                                 "Step 0: 0F0    1F0   \n"
                                 "Step 1:              \n"
                                 "Step 2: 0B0          \n";
    CHECK(ppsched::io::format_step_table(rows) == expected);
}

TEST_CASE("step labels are zero-padded to the digits of the last step", "[step_table]") {
    std::vector<std::vector<ppsched::action>> rows(1);
    for (int mb = 0; mb < 11; ++mb) rows[0].push_back(ppsched::action::forward(0, mb));
    const auto lines = lines_of(ppsched::io::format_step_table(rows));
    REQUIRE(lines.size() == 12);
    CHECK(lines[1].rfind("Step 00: 0F0 ", 0) == 0);
    CHECK(lines[11].rfind("Step 10: 0F10", 0) == 0);
}

TEST_CASE("an order with fewer steps than ranks still shows every rank", "[step_table]") {
    // PyTorch raises IndexError here; ppsched prints all columns.
    const std::vector<std::vector<ppsched::action>> rows{
        {ppsched::action::forward(0, 0)}, {}, {ppsched::action::forward(2, 0)}};
    const std::string expected = "        Rank 0 Rank 1 Rank 2\n"
                                 "Step 0: 0F0           2F0   \n";
    CHECK(ppsched::io::format_step_table(rows) == expected);
}

TEST_CASE("an empty order prints the header alone", "[step_table]") {
    const std::vector<std::vector<ppsched::action>> none;
    CHECK(ppsched::io::format_step_table(none) == "        \n");
    const std::vector<std::vector<ppsched::action>> two_empty(2);
    CHECK(ppsched::io::format_step_table(two_empty) == "        Rank 0 Rank 1\n");
}

TEST_CASE("the step table takes any forward range of rows, also rows made on the fly",
          "[step_table]") {
    using ppsched::action;
    const std::vector<std::vector<ppsched::slot>> reference{
        {action::forward(0, 0), ppsched::slot{}, action::full_backward(0, 0)},
        {action::forward(1, 0), action::full_backward(1, 0)}};
    const std::string expected = ppsched::io::format_step_table(reference);

    const std::list<std::deque<std::optional<action>>> linked{
        {action::forward(0, 0), std::nullopt, action::full_backward(0, 0)},
        {action::forward(1, 0), action::full_backward(1, 0)}};
    CHECK(ppsched::io::format_step_table(linked) == expected);

    // A range whose rows are prvalues: every row is built when dereferenced.
    const ppsched::order o(ppsched::config{.ranks = 2, .microbatches = 1}, reference);
    CHECK(ppsched::io::format_step_table(test_support::rows_by_value{&o}) == expected);
}

TEST_CASE("the report prints the step table with the failing step marked", "[step_table]") {
    ppsched::order o = ppsched_test::gpipe_2x2();
    std::swap(o.rank(1)[1], o.rank(1)[3]);
    const auto rep = validate(o);
    const std::string text = ppsched::format_report(o, rep);
    CHECK(text.find("rank 1, step 1: 1B1 runs before its forward 1F1 (rank 1, step 3) "
                    "[backward_before_forward]") != std::string::npos);
    CHECK(text.find("Step 1: 0F1    1B1    <-- ERROR HERE") != std::string::npos);
    CHECK(ppsched::format_report(ppsched_test::gpipe_2x2(), validate(ppsched_test::gpipe_2x2()))
              .rfind("valid\n", 0) == 0);
}
