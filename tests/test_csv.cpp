#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/registry.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {
std::string without_cr(std::string s) {
    std::string out;
    for (char c : s)
        if (c != '\r') out += c;
    return out;
}
} // namespace

TEST_CASE("every conformance CSV reads and writes back identically", "[csv][conformance]") {
    const fs::path root = PPSCHED_CONFORMANCE_DIR;
    REQUIRE(fs::exists(root));
    std::size_t files = 0, cells = 0;
    for (const auto& entry : fs::recursive_directory_iterator(root)) {
        if (entry.path().extension() != ".csv") continue;
        const std::string text = ppsched::io::read_file(entry.path().string());
        INFO(entry.path().string());
        const auto rows = ppsched::io::read_csv_rows(text, entry.path().string());
        std::string expected = without_cr(text);
        if (!expected.empty() && expected.back() != '\n') expected += '\n';
        CHECK(ppsched::io::write_csv(rows) == expected);
        for (const auto& row : rows)
            for (const auto& s : row)
                if (s) {
                    // Each action string prints back to itself.
                    CHECK(ppsched::parse_action(ppsched::to_string(*s)) == *s);
                    ++cells;
                }
        ++files;
    }
    CHECK(files > 400);
    CHECK(cells > 10000);
}

TEST_CASE("CRLF and LF read the same", "[csv]") {
    const auto lf = ppsched::io::read_csv("0F0,,0B0\n1F0,1B0\n");
    const auto crlf = ppsched::io::read_csv("0F0,,0B0\r\n1F0,1B0\r\n");
    CHECK(lf == crlf);
    REQUIRE(lf.num_ranks() == 2);
    CHECK(lf[0].size() == 3);
    CHECK(lf[0][1].is_idle());
    CHECK(lf.cfg().ranks == 2);
    CHECK(lf.cfg().stages_per_rank == 1);
    CHECK(lf.cfg().microbatches == 1);
}

TEST_CASE("a V-placed order infers the v placement", "[csv]") {
    const auto o = ppsched::io::read_csv("0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n");
    CHECK(o.cfg().placement == ppsched::stage_placement::v);
    CHECK(o.cfg().stages_per_rank == 2);
}

TEST_CASE("malformed CSV reports file, line and column", "[csv][errors]") {
    struct bad {
        const char* text;
        std::size_t line, column;
    };
    const bad cases[] = {
        {"0F0,0B0\n1F0,1X0\n", 2, 6},      // unknown kind
        {"0F0,F0\n", 1, 5},                // empty stage
        {"0F0,0B-1\n", 1, 7},              // negative microbatch
        {"0F0,0B99999999999\n", 1, 7},     // overflowing microbatch
        {"(0F0;1B0\n", 1, 9},              // unbalanced parenthesis
        {"0F0 x,0B0\n", 1, 4},             // stray character
        {"0F0,0B0\n1F0, \"1B0\"\n", 2, 6}, // a quote after a space is text (Python's csv)
        {"0F0,\"0B0\n", 1, 5},             // unterminated quoted cell
        {"0F0,\"0B0\"x\n", 1, 10},         // text after the closing quote
    };
    for (const auto& c : cases) {
        INFO(c.text);
        try {
            (void)ppsched::io::read_csv(c.text, "f.csv");
            FAIL("accepted");
        } catch (const ppsched::parse_error& e) {
            CHECK(e.line() == c.line);
            CHECK(e.column() == c.column);
            CHECK_THAT(e.what(),
                       Catch::Matchers::StartsWith("f.csv:" + std::to_string(c.line) + ":"));
        }
    }
}

TEST_CASE("a missing file is a parse_error", "[csv][errors]") {
    CHECK_THROWS_AS(ppsched::io::read_csv_file("/nonexistent/x.csv"), ppsched::parse_error);
}

TEST_CASE("cells with spaces and quoted cells read as PyTorch's loader reads them", "[csv]") {
    const auto plain = ppsched::io::read_csv("0F0,0F1,,0B0,0B1\n,1F0,1B0,1F1,1B1\n");
    // Python's csv.reader then _Action.from_str, which strips each cell.
    const auto spaced = ppsched::io::read_csv("0F0, 0F1,  ,0B0 ,\t0B1\r\n , 1F0,1B0,1F1,1B1\n");
    CHECK(ppsched::io::write_csv(spaced) == ppsched::io::write_csv(plain));
    const auto quoted =
        ppsched::io::read_csv("\"0F0\",\"0F1\",\"\",0B0,\" 0B1 \"\n,1F0,\"1B0\",1F1,1B1\n");
    CHECK(ppsched::io::write_csv(quoted) == ppsched::io::write_csv(plain));
    // A quoted cell may hold the comma-free OVERLAP form too.
    const auto overlap = ppsched::io::read_csv("\"(0F1;0B0)OVERLAP_F_B\"\n");
    CHECK(ppsched::to_string(*overlap[0][0]) == "(0F1;0B0)OVERLAP_F_B");
}

TEST_CASE("indices no order of the file's size could hold are refused before inference",
          "[csv][errors]") {
    // Indices that neither the file's own sizes nor its forwards' make a table linear in the
    // file (a lone backward of microbatch 10^8, or of stage 65535 and microbatch 70000): an error
    // naming the cell.
    for (const char* text : {"0B100000000\n", "65535B70000\n"}) {
        INFO(text);
        try {
            (void)ppsched::io::read_csv(text, "f.csv");
            FAIL("accepted");
        } catch (const ppsched::parse_error& e) {
            CHECK_THAT(e.what(), Catch::Matchers::Contains("more than an order of this size"));
        }
    }
    // One action naming microbatch 2^31 - 1 (once a signed overflow in infer_config) or 10^8
    // (once 1.5 GB of tables): read with the sizes its forwards show (one microbatch), so the
    // index is validate's business (microbatch_out_of_range), not a table of 10^8.
    for (const char* text : {"0F2147483647\n", "0F100000000\n"}) {
        INFO(text);
        const ppsched::order o = ppsched::io::read_csv(text, "f.csv");
        CHECK(o.cfg().microbatches == 1);
        CHECK(ppsched::validate(o).has(ppsched::rule::microbatch_out_of_range));
    }
    // A stray backward of stage 65535 beside forwards of stages 0 and 1: two stages.
    const ppsched::order stray = ppsched::io::read_csv("0F0,0B0\n1F0,1B0,65535B0\n");
    CHECK(stray.cfg().num_stages() == 2);
    CHECK(ppsched::validate(stray).has(ppsched::rule::stage_out_of_range));
    // Given the configuration, the same cell is validate's business, not a parse error.
    const auto o =
        ppsched::io::read_csv("0F0,0B0,0F7\n", ppsched::config{.ranks = 1, .microbatches = 1});
    CHECK(o[0].size() == 3);
    // Error messages escape control characters and cut long cells.
    const std::string noisy = "0F0,\x1b[2J" + std::string(500, 'x') + "\n";
    try {
        (void)ppsched::io::read_csv(noisy, "f.csv");
        FAIL("accepted");
    } catch (const ppsched::parse_error& e) {
        const std::string what = e.what();
        CHECK(what.find('\x1b') == std::string::npos);
        CHECK_THAT(what, Catch::Matchers::Contains("\\x1b[2J"));
        CHECK(what.size() < 300);
    }
}

TEST_CASE("an empty text is a parse_error, not a config_error", "[csv][errors]") {
    try {
        (void)ppsched::io::read_csv("", "f.csv");
        FAIL("accepted");
    } catch (const ppsched::parse_error& e) {
        CHECK(e.line() == 1);
        CHECK(e.column() == 1);
        CHECK_THAT(e.what(), Catch::Matchers::StartsWith("f.csv:1:1: "));
    }
}

TEST_CASE("an order with a typo is read with the sizes its other actions show", "[csv][infer]") {
    // Interleaved 1F1B, 4 ranks x 2 stages, 8 microbatches, with 0B7 typed as 0B17.
    const ppsched::order good = ppsched::builtin_schedules().generate(
        "interleaved_1f1b", ppsched::config{.ranks = 4, .stages_per_rank = 2, .microbatches = 8});
    std::string text = ppsched::io::write_csv(good);
    const std::size_t at = text.find("0B7");
    REQUIRE(at != std::string::npos);
    text.replace(at, 3, "0B17");
    const ppsched::order o = ppsched::io::read_csv(text, "typo.csv");
    CHECK(o.cfg().microbatches == 8);
    CHECK(o.cfg().stages_per_rank == 2);
    const auto report = ppsched::validate(o);
    CHECK(report.count(ppsched::rule::microbatch_out_of_range) == 1);
    CHECK(report.count(ppsched::rule::missing_backward) == 1);
    CHECK(report.total() == 2);
}

TEST_CASE("a V order with one stray action keeps its placement", "[csv][infer]") {
    ppsched::order o = ppsched::builtin_schedules().generate(
        "zbv_zero_bubble", ppsched::config{.ranks = 2, .stages_per_rank = 2, .microbatches = 4});
    REQUIRE(o.cfg().placement == ppsched::stage_placement::v);
    // Move rank 0's first forward of stage 3 (the V's turn back to rank 0) to rank 1.
    std::string text = ppsched::io::write_csv(o);
    const std::size_t at = text.find("3F0");
    REQUIRE(at != std::string::npos);
    text.erase(at, 3);
    text.insert(text.size() - 1, ",3F0");
    const ppsched::order moved = ppsched::io::read_csv(text, "moved.csv");
    CHECK(moved.cfg().placement == ppsched::stage_placement::v);
    const auto report = ppsched::validate(moved);
    CHECK(report.total() == 1);
    CHECK(report.has(ppsched::rule::wrong_rank));
}

TEST_CASE("trailing blank lines are not ranks; CR ends a line", "[csv]") {
    CHECK(ppsched::io::read_csv_rows("0F0,,0B0\n1F0,1B0\n\n\n").size() == 2);
    CHECK(ppsched::io::read_csv_rows("0F0,,0B0\n\n1F0,1B0\n").size() == 3); // a rank between
    const auto cr = ppsched::io::read_csv_rows("0F0,,0B0\r1F0,1B0\r");
    REQUIRE(cr.size() == 2);
    CHECK(cr[1].size() == 2);
    CHECK(ppsched::io::read_csv_rows("0F0\r\n1F0\r\n").size() == 2);
}

TEST_CASE("read_stream refuses more than its limit and never returns a part", "[csv][io]") {
    std::istringstream small("0F0,0B0\n");
    CHECK(ppsched::io::read_stream(small, "s", 8) == "0F0,0B0\n");
    std::istringstream big("0F0,0B0\n0F1");
    CHECK_THROWS_AS(ppsched::io::read_stream(big, "b", 8), ppsched::parse_error);
    std::istringstream large(std::string(200000, 'x'));
    CHECK(ppsched::io::read_stream(large, "l").size() == 200000);
}

TEST_CASE("a typo in orders with I and W, lowered orders and DualPipe's is read with the "
          "generated sizes",
          "[csv][infer]") {
    const auto check = [](const char* name, ppsched::config cfg, bool lowered, const char* from,
                          const char* to) {
        INFO(name);
        ppsched::order o = ppsched::builtin_schedules().generate(name, cfg);
        if (lowered) o = ppsched::lower(o);
        std::string text = ppsched::io::write_csv(o);
        const std::size_t at = text.find(from);
        REQUIRE(at != std::string::npos);
        text.replace(at, std::string(from).size(), to);
        const ppsched::order read = ppsched::io::read_csv(text, "typo.csv");
        CHECK(read.cfg().microbatches == o.cfg().microbatches);
        CHECK(read.cfg().stages_per_rank == o.cfg().stages_per_rank);
        CHECK(read.cfg().placement == o.cfg().placement);
        const auto report = ppsched::validate(read);
        INFO(ppsched::to_string(report));
        CHECK(report.has(ppsched::rule::microbatch_out_of_range));
        CHECK(report.total() <= 4);
    };
    check("zb_h1", {.ranks = 4, .microbatches = 8}, false, "0I7", "0I17");
    check("one_f_one_b", {.ranks = 4, .microbatches = 8}, true, "0B7", "0B17");
    check("dualpipe", {.ranks = 2, .stages_per_rank = 2, .microbatches = 4}, false, "0B0", "0B17");
    check("one_f_one_b", {.ranks = 4, .microbatches = 8}, false, "0F3", "0F17");
}

TEST_CASE("a cell is stripped of Python's whitespace, Unicode spaces included", "[csv]") {
    // PyTorch's _Action.from_str calls str.strip(): a no-break space, U+3000 or a \x1c around
    // an action is dropped there, so here too.
    const auto plain = ppsched::io::read_csv_rows("0F0,0B0\n");
    for (const char* text : {"0F0\xC2\xA0,\xE3\x80\x80"
                             "0B0\n",
                             "\x1c"
                             "0F0,0B0\x1f\n",
                             "\xE2\x80\x89"
                             "0F0\xC2\x85,0B0 \xE2\x80\xA8\n"}) {
        INFO(text);
        CHECK(ppsched::io::read_csv_rows(text) == plain);
    }
    // After a quoted cell too (csv.reader keeps it, str.strip() drops it).
    CHECK(ppsched::io::read_csv_rows("\"0F0\" ,\"0B0\"\xC2\xA0\n") == plain);
    // Not whitespace in Python: U+200B (zero width space) stays, and the action is refused.
    CHECK_THROWS_AS(ppsched::io::read_csv_rows("0F0\xE2\x80\x8B,0B0\n"), ppsched::parse_error);
}
