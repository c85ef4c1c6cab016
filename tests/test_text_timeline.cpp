#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/io/text_timeline.hpp>
#include <ppsched/schedules.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <sstream>
#include <string>
#include <vector>

using ppsched::config;
using ppsched::cost_model;
using ppsched::order;
using ppsched::simulate;
using ppsched::simulation;
using ppsched::io::format_text_timeline;
using ppsched::io::text_timeline_options;

namespace {

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

} // namespace

TEST_CASE("the text timeline shows each rank's compute, a letter per time unit", "[timeline]") {
    // GPipe, 2 ranks, 2 microbatches, F = 1, B = 2: rank 0 runs F0 F1 in [0, 2), waits, then
    // B0 B1 in [5, 9); rank 1 runs F0 F1 in [1, 3) and B0 B1 in [3, 7).
    const order o = ppsched::generate<ppsched::gpipe>(config{.ranks = 2, .microbatches = 2});
    const simulation sim = simulate(o, cost_model::uniform_fb(1, 2));
    text_timeline_options opts;
    opts.legend = false;
    CHECK(format_text_timeline(sim, o.cfg(), opts) == "        0\n"
                                                      "rank 0  FF...BBBB\n"
                                                      "rank 1  .FFBBBB..\n");
    const auto with_legend = lines_of(format_text_timeline(sim, o.cfg()));
    REQUIRE(with_legend.size() == 4);
    CHECK(with_legend[3].rfind("one column = 1 time unit;", 0) == 0);
}

TEST_CASE("odd stage chunks are lower case and busy time is letters", "[timeline]") {
    const order o = ppsched::generate<ppsched::zbv_zero_bubble>(
        config{.ranks = 4, .stages_per_rank = 2, .microbatches = 8});
    const simulation sim = simulate(o); // F = I = W = 1: one letter per action
    text_timeline_options opts;
    opts.legend = false;
    const auto lines = lines_of(format_text_timeline(sim, o.cfg(), opts));
    REQUIRE(lines.size() == 5);
    for (std::size_t r = 0; r < 4; ++r) {
        const std::string row = lines[r + 1].substr(8);
        CHECK(row.size() == static_cast<std::size_t>(sim.makespan));
        const auto letters = static_cast<double>(
            std::count_if(row.begin(), row.end(), [](char c) { return c != '.'; }));
        CHECK(letters == sim.ranks[r].busy);
        // Each rank holds chunk 0 and chunk 1 of the V, 8 microbatches x (F, I, W) each.
        for (const char c : {'F', 'I', 'W', 'f', 'i', 'w'})
            CHECK(std::count(row.begin(), row.end(), c) == 8);
    }
    CHECK(lines[0].find("10") == 8 + 10); // the ruler marks every tenth column
}

TEST_CASE("a long timeline is compressed to fit the width", "[timeline]") {
    // 1F1B, 4 ranks, 8 microbatches, F = 1, B = 2: makespan (8 + 3) * 3 = 33.
    const order o = ppsched::generate<ppsched::one_f_one_b>(config{.ranks = 4, .microbatches = 8});
    const simulation sim = simulate(o, cost_model::uniform_fb(1, 2));
    REQUIRE(sim.makespan == 33);
    text_timeline_options opts;
    opts.width = 10; // 33 units need 5 units per column: 7 columns
    const auto lines = lines_of(format_text_timeline(sim, o.cfg(), opts));
    REQUIRE(lines.size() == 6);
    CHECK(lines[1].size() == 8 + 7);
    CHECK(lines[5].rfind("one column = 5 time units;", 0) == 0);
    // Rank 0 runs its four warm-up forwards in [0, 4): F wins the first column. Rank 3 waits
    // until 3, then runs F0 [3, 4) and B0 [4, 6): idle wins its first column.
    CHECK(lines[1][8] == 'F');
    CHECK(lines[4][8] == '.');

    opts.units_per_column = 0.5; // stretched: a forward takes two columns
    opts.legend = false;
    const auto wide = lines_of(format_text_timeline(sim, o.cfg(), opts));
    CHECK(wide[1].substr(8, 8) == "FFFFFFFF");
    CHECK(wide[1].size() == 8 + 66);
}

TEST_CASE("overlapped actions show as O", "[timeline]") {
    const order o =
        ppsched::generate<ppsched::dualpipe_v>(config{.ranks = 4,
                                                      .stages_per_rank = 2,
                                                      .microbatches = 8,
                                                      .placement = ppsched::stage_placement::v});
    const std::string text = format_text_timeline(simulate(o), o.cfg());
    CHECK((text.find('O') != std::string::npos || text.find('o') != std::string::npos));
}

TEST_CASE("a wide column of many short actions is busy, not idle", "[timeline]") {
    // 1F1B, 4 ranks, 8 microbatches, F = 1, B = 2 (makespan 33) in columns of 10 or 20 units:
    // a column shows an action when the rank computes for more of it than it idles. Each
    // column's busy time is worked out here from the timeline.
    const order o = ppsched::generate<ppsched::one_f_one_b>(config{.ranks = 4, .microbatches = 8});
    const simulation sim = simulate(o, cost_model::uniform_fb(1, 2));
    for (double k : {10.0, 20.0}) {
        text_timeline_options opts;
        opts.legend = false;
        opts.units_per_column = k;
        const auto lines = lines_of(format_text_timeline(sim, o.cfg(), opts));
        REQUIRE(lines.size() == 5);
        for (int r = 0; r < 4; ++r) {
            const std::string row = lines[static_cast<std::size_t>(r) + 1].substr(8);
            for (std::size_t c = 0; c < row.size(); ++c) {
                const double lo = static_cast<double>(c) * k;
                const double hi = std::min(lo + k, sim.makespan);
                double busy = 0;
                for (const auto& t : sim.timeline)
                    if (t.rank == r && t.ran)
                        busy += std::max(0.0, std::min(hi, t.end) - std::max(lo, t.start));
                INFO("k " << k << " rank " << r << " column " << c << " busy " << busy);
                CHECK((row[c] == '.') == (busy < (hi - lo) / 2));
            }
        }
    }
}

TEST_CASE("costs far below one unit get finer columns; a column wider than the step is one",
          "[timeline]") {
    // GPipe 2 x 2 with F = 0.05, B = 0.1: makespan 0.45, once 1 column ("BB" on a rank).
    const order o = ppsched::generate<ppsched::gpipe>(config{.ranks = 2, .microbatches = 2});
    const simulation fine = simulate(o, cost_model::uniform_fb(0.05, 0.1));
    const auto lines = lines_of(format_text_timeline(fine, o.cfg()));
    REQUIRE(lines.size() >= 4);
    CHECK(lines[1].size() > 80); // "rank 0  " and 90 columns of 0.005
    CHECK(lines[3].rfind("one column = 0.005 time units;", 0) == 0);
    // A column of 10^12 units: one column, not an empty row.
    text_timeline_options wide;
    wide.units_per_column = 1e12;
    wide.legend = false;
    const simulation sim = simulate(o, cost_model::uniform_fb(1, 2));
    const auto one = lines_of(format_text_timeline(sim, o.cfg(), wide));
    REQUIRE(one.size() == 3);
    CHECK(one[1] == "rank 0  B");
    // Nothing to draw when nothing takes time.
    const simulation zero = simulate(o, cost_model::uniform_fb(0, 0));
    CHECK(format_text_timeline(zero, o.cfg()) == "(the makespan is 0: nothing to draw)\n");
}
