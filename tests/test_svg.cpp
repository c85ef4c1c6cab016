#include <ppsched/algorithms/add_spacing.hpp>
#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/step_timeline.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/io/detail/json_text.hpp>
#include <ppsched/io/svg.hpp>
#include <ppsched/schedules.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <limits>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "support/xml_check.hpp"

using ppsched::action;
using ppsched::config;
using ppsched::cost_model;
using ppsched::order;
using ppsched::simulate;
using ppsched::io::chart;
using ppsched::io::svg_options;
using ppsched::io::write_svg;

namespace {

std::size_t count(std::string_view text, std::string_view what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string_view::npos;
         at = text.find(what, at + what.size()))
        ++n;
    return n;
}

// The value of attribute `name` in the element starting at `at`.
double attribute(std::string_view text, std::size_t at, std::string_view name) {
    const std::string key = " " + std::string(name) + "=\"";
    const std::size_t k = text.find(key, at);
    REQUIRE(k != std::string_view::npos);
    return std::stod(std::string(text.substr(k + key.size())));
}

// The action boxes in document order: x, width, height, fill.
struct box {
    double x, width, height;
    std::string fill;
};
std::vector<box> boxes(std::string_view svg) {
    std::vector<box> out;
    const std::string_view tag = "<rect class=\"act\"";
    for (std::size_t at = svg.find(tag); at != std::string_view::npos; at = svg.find(tag, at + 1)) {
        const std::size_t f = svg.find("fill=\"", at) + 6;
        out.push_back({attribute(svg, at, "x"), attribute(svg, at, "width"),
                       attribute(svg, at, "height"),
                       std::string(svg.substr(f, svg.find('"', f) - f))});
    }
    return out;
}

chart simulated(std::string name, const order& o, const cost_model& costs = {}) {
    return chart{std::move(name), o.cfg(), simulate(o, costs), false, ""};
}

// GPipe, 2 ranks, 2 microbatches, F = 1, B = 2. By hand: rank 0 runs F0 [0,1], F1 [1,2], then
// waits for rank 1's backward: B0 [5,7], B1 [7,9]; rank 1 runs F0 [1,2], F1 [2,3], B0 [3,5],
// B1 [5,7]. Makespan 9.
order gpipe_2x2() {
    return ppsched::generate<ppsched::gpipe>(config{.ranks = 2, .microbatches = 2});
}

} // namespace

TEST_CASE("an SVG chart is well-formed XML with one box per action", "[svg]") {
    const order o = ppsched::generate<ppsched::zbv_zero_bubble>(
        config{.ranks = 4, .stages_per_rank = 2, .microbatches = 8});
    const chart c = simulated("ZBVZeroBubble", o);
    const std::string svg = write_svg(c);
    CHECK(test_support::xml_problem(svg).empty());
    CHECK(svg.rfind("<?xml", 0) == 0);
    CHECK(count(svg, "<rect class=\"act\"") == o.action_count());
    // One hover text per box, plus the document's own title.
    CHECK(count(svg, "<title>") == o.action_count() + 1);
    CHECK(svg.find("ZBVZeroBubble: 4 ranks, 2 stages per rank, 8 microbatches, V placement") !=
          std::string::npos);
}

TEST_CASE("boxes sit at their simulated start and last as long as the action", "[svg]") {
    svg_options opts;
    opts.px_per_unit = 10;
    const std::string svg =
        write_svg(simulated("GPipe", gpipe_2x2(), cost_model::uniform_fb(1, 2)), opts);
    const std::vector<box> b = boxes(svg);
    REQUIRE(b.size() == 8);
    // Timeline order: rank 0's F0 F1 B0 B1, then rank 1's F0 F1 B0 B1 (starts from the comment).
    const std::vector<double> start{0, 1, 5, 7, 1, 2, 3, 5}, length{1, 1, 2, 2, 1, 1, 2, 2};
    for (std::size_t i = 0; i < b.size(); ++i) {
        INFO("box " << i);
        CHECK(b[i].x - b[0].x == Approx(start[i] * 10));
        CHECK(b[i].width == Approx(length[i] * 10));
        CHECK(b[i].height == b[0].height);
    }
    // Idle time is the lane behind the boxes: one grey lane per rank, as long as the makespan.
    CHECK(count(svg, "width=\"90\" height=\"20\" fill=\"#ececec\"") == 2);
    CHECK(svg.find("makespan 9 ") != std::string::npos);
}

TEST_CASE("the hover text names the action, stage, chunk, microbatch, start and end", "[svg]") {
    const std::string svg =
        write_svg(simulated("GPipe", gpipe_2x2(), cost_model::uniform_fb(1, 2)));
    CHECK(svg.find("<title>1B0: stage 1 (chunk 0), microbatch 0; rank 1, start 3, end 5</title>") !=
          std::string::npos);
    CHECK(svg.find("<title>0F1: stage 0 (chunk 0), microbatch 1; rank 0, start 1, end 2</title>") !=
          std::string::npos);
}

TEST_CASE("kinds have their own colours and later stage chunks a lighter shade", "[svg]") {
    const order o = ppsched::generate<ppsched::zbv_zero_bubble>(
        config{.ranks = 2, .stages_per_rank = 2, .microbatches = 4});
    const chart c = simulated("ZBV", o);
    const std::vector<box> b = boxes(write_svg(c));
    REQUIRE(b.size() == c.sim.timeline.size());
    // fill per (kind, chunk): one colour each, different across them.
    std::set<std::string> fills[5][2];
    for (std::size_t i = 0; i < b.size(); ++i) {
        const action a = c.sim.timeline[i].act;
        fills[static_cast<int>(a.kind())][o.cfg().local_stage_index(a.stage())].insert(b[i].fill);
    }
    std::set<std::string> all;
    for (int k : {0, 1, 2}) // F, I, W in ZBV
        for (int chunk : {0, 1}) {
            REQUIRE(fills[k][chunk].size() == 1);
            all.insert(*fills[k][chunk].begin());
        }
    CHECK(all.size() == 6);
}

TEST_CASE("microbatch labels fill wide boxes and are dropped from narrow ones", "[svg]") {
    const order small =
        ppsched::generate<ppsched::one_f_one_b>(config{.ranks = 4, .microbatches = 8});
    const std::string svg = write_svg(simulated("1F1B", small));
    CHECK(count(svg, "<text class=\"mb") == small.action_count());
    svg_options quiet;
    quiet.labels = false;
    CHECK(count(write_svg(simulated("1F1B", small), quiet), "<text class=\"mb") == 0);

    // 32 ranks x 128 microbatches: about 3 px per time unit, too narrow for any label, but
    // still every box.
    const order big = ppsched::generate<ppsched::zbv_zero_bubble>(
        config{.ranks = 32, .stages_per_rank = 2, .microbatches = 128});
    const std::string large = write_svg(simulated("ZBV", big));
    CHECK(count(large, "<rect class=\"act\"") == big.action_count());
    CHECK(count(large, "<text class=\"mb") == 0);
    CHECK(test_support::xml_problem(large).empty());
}

TEST_CASE("a lowered timeline puts communication and FSDP actions on a thin lane", "[svg]") {
    const order o = ppsched::lower(
        ppsched::generate<ppsched::one_f_one_b>(config{.ranks = 2, .microbatches = 2}));
    const chart c = simulated("1F1B", o);
    REQUIRE(c.sim.lowered);
    const std::string svg = write_svg(c);
    CHECK(test_support::xml_problem(svg).empty());
    const std::vector<box> b = boxes(svg);
    REQUIRE(b.size() == o.action_count());
    std::size_t compute = 0, other = 0;
    for (const auto& t : c.sim.timeline) (is_compute(t.act.kind()) ? compute : other) += 1;
    std::size_t tall = 0, thin = 0;
    for (const auto& x : b) (x.height == 20 ? tall : thin) += 1;
    CHECK(tall == compute);
    CHECK(thin == other);
    CHECK(svg.find("SEND") != std::string::npos); // in the legend
    CHECK(svg.find(", lowered") != std::string::npos);
}

TEST_CASE("text from the caller is escaped", "[svg]") {
    chart c = simulated("a<b & \"c\" 'd'", gpipe_2x2());
    c.note = "x > y\x01";
    const std::string svg = write_svg(c);
    CHECK(test_support::xml_problem(svg).empty());
    CHECK(svg.find("a&lt;b &amp; &quot;c&quot; &apos;d&apos;") != std::string::npos);
    CHECK(svg.find("x &gt; y?") != std::string::npos);
    CHECK(ppsched::detail::svg::xml_escape("<&>") == "&lt;&amp;&gt;");
}

TEST_CASE("text that is not UTF-8 becomes U+FFFD, so the picture stays well-formed", "[svg]") {
    // A stray continuation byte, a truncated sequence, an overlong '/', a surrogate and a code
    // point above U+10FFFF, between well-formed text of 1 to 4 bytes per character.
    const std::string bad = "a\x80"
                            "b\xE2\x82 c\xC0\xAF d\xED\xA0\x80 e\xF4\x90\x80\x80";
    const std::string good = "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";
    chart c = simulated(bad + good, gpipe_2x2());
    const std::string svg = write_svg(c);
    CHECK(test_support::xml_problem(svg).empty());
    const std::string fffd = "\xEF\xBF\xBD";
    CHECK(svg.find("a" + fffd + "b" + fffd + fffd + " c" + fffd + fffd + " d" + fffd + fffd + fffd +
                   " e" + fffd + fffd + fffd + fffd + good) != std::string::npos);
    // XML 1.0 has no U+FFFE and U+FFFF, though they are well-formed UTF-8.
    CHECK(ppsched::detail::svg::xml_escape("a\xEF\xBF\xBE"
                                           "b\xEF\xBF\xBF") == "a" + fffd + "b" + fffd);
    std::string json;
    ppsched::detail::text::append_json_string(json, bad + good);
    CHECK(json == "\"a" + fffd + "b" + fffd + fffd + " c" + fffd + fffd + " d" + fffd + fffd +
                      fffd + " e" + fffd + fffd + fffd + fffd + good + "\"");
}

TEST_CASE("a step layout draws one unit per step", "[svg]") {
    const order o = ppsched::generate<ppsched::interleaved_1f1b>(
        config{.ranks = 2, .stages_per_rank = 2, .microbatches = 4});
    const order spaced = ppsched::add_spacing(o);
    chart c{"Interleaved1F1B", o.cfg(), ppsched::step_timeline(spaced), true, ""};
    svg_options opts;
    opts.px_per_unit = 10;
    const std::string svg = write_svg(c, opts);
    CHECK(test_support::xml_problem(svg).empty());
    const std::vector<box> b = boxes(svg);
    REQUIRE(b.size() == o.action_count());
    for (const auto& x : b) CHECK(x.width == 10);
    CHECK(svg.find(">step</text>") != std::string::npos);
    CHECK(svg.find("step layout") != std::string::npos);
}

TEST_CASE("stacked charts share one time axis", "[svg]") {
    const order a = gpipe_2x2();
    const order z = ppsched::generate<ppsched::zbv_zero_bubble>(
        config{.ranks = 2, .stages_per_rank = 2, .microbatches = 2});
    const std::vector<chart> charts{simulated("GPipe", a), simulated("ZBVZeroBubble", z)};
    svg_options opts;
    opts.title = "two schedules";
    const std::string svg = write_svg(charts, opts);
    CHECK(test_support::xml_problem(svg).empty());
    CHECK(count(svg, "<rect class=\"act\"") == a.action_count() + z.action_count());
    CHECK(count(svg, "<text class=\"ph\"") == 2);
    CHECK(svg.find("two schedules") != std::string::npos);
    // One scale: each panel's idle lanes are as long as its own makespan.
    std::vector<double> lanes;
    const std::string_view lane = "fill=\"#ececec\"/>";
    for (std::size_t at = svg.find(lane); at != std::string::npos; at = svg.find(lane, at + 1)) {
        const std::size_t start = svg.rfind("<rect", at);
        if (svg.compare(start, 8, "<rect x=") == 0 && attribute(svg, start, "height") == 20)
            lanes.push_back(attribute(svg, start, "width"));
    }
    REQUIRE(lanes.size() == 4);
    CHECK(lanes[0] / lanes[2] == Approx(charts[0].sim.makespan / charts[1].sim.makespan));
}

TEST_CASE("an SVG chart draws each rank's memory over time when given the curves", "[svg]") {
    const order o = gpipe_2x2();
    const chart c = simulated("GPipe", o);
    const std::string plain = write_svg(c);
    CHECK(count(plain, "class=\"mem\"") == 0);
    svg_options opts;
    opts.memory.push_back(ppsched::memory_timeline(c.sim, cost_model{}));
    opts.memory_limit = 3;
    const std::string svg = write_svg(c, opts);
    CHECK(test_support::xml_problem(svg).empty());
    // A step line per rank, titled with the rank's peak, and the limit dashed.
    CHECK(count(svg, "class=\"mem\"") == 2);
    CHECK(count(svg, "<title>rank 0: peak 2</title>") == 1);
    CHECK(count(svg, "class=\"lim\"") == 1);
    CHECK(svg.find("limit 3") != std::string::npos);
    CHECK(svg.find("activation memory per rank (peak 2)") != std::string::npos);
    // Rank 0 by hand (F = 1, B = 2): up at 0 and 1, down at 7 and 9; 24 px per unit.
    const auto at = svg.find("class=\"mem\" d=\"");
    REQUIRE(at != std::string::npos);
    const std::string d = svg.substr(at + 15, svg.find('"', at + 15) - at - 15);
    CHECK(d.find("H68V") != std::string::npos);  // the first forward, at x = 68 (time 0)
    CHECK(d.find("H236V") != std::string::npos); // B0 ends at 7: 68 + 7 * 24
    CHECK(d.find("H284V") != std::string::npos); // B1 ends at 9: 68 + 9 * 24
}

TEST_CASE("huge costs draw a bounded number of time ticks; a non-finite makespan is refused",
          "[svg][bounded]") {
    // The tick step once stopped growing at 1e37 (about 1e23 ticks at 1e60) and at about
    // 4.5e52 `t += step` stopped advancing; the count is now computed and capped.
    for (const double f : {1e60, 1e300, 1.0}) {
        INFO(f);
        const std::string svg =
            write_svg(simulated("GPipe", gpipe_2x2(), cost_model::uniform_fb(f, f)));
        std::size_t ticks = 0;
        for (std::size_t at = svg.find("class=\"tk\""); at != std::string::npos;
             at = svg.find("class=\"tk\"", at + 1))
            ++ticks;
        CHECK(ticks <= ppsched::detail::svg::max_svg_ticks + 1);
        for (const char* token : {"\"inf", ">inf", "-inf", "\"nan", ">nan", "-nan"})
            CHECK(svg.find(token) == std::string::npos);
    }
    chart c = simulated("GPipe", gpipe_2x2());
    for (const double bad :
         {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
        c.sim.makespan = bad;
        CHECK_THROWS_AS(write_svg(c), ppsched::config_error);
    }
}

TEST_CASE("a very long title is cut at 200 bytes", "[svg]") {
    svg_options opts;
    opts.title = std::string(5000, 'x') + "\xC3\xA9";
    const std::string svg = write_svg(simulated("GPipe", gpipe_2x2()), opts);
    CHECK(test_support::xml_problem(svg).empty());
    CHECK(svg.find(std::string(200, 'x') + "\xE2\x80\xA6") != std::string::npos);
    CHECK(svg.find(std::string(201, 'x')) == std::string::npos);
    const double width = std::stod(svg.substr(svg.find("width=\"") + 7));
    CHECK(width < 2500); // 200 characters of 16 px (1 075 224 px before the cut)
}
