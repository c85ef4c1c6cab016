#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/io/detail/json.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/io/html_report.hpp>
#include <ppsched/schedules.hpp>

#include <catch2/catch.hpp>

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

using ppsched::config;
using ppsched::cost_model;
using ppsched::simulate;
using ppsched::io::report_schedule;
using ppsched::io::write_html_report;
namespace json = ppsched::detail::json;

namespace {

report_schedule make(std::string name, const ppsched::order& o, const cost_model& costs = {}) {
    report_schedule s;
    s.name = std::move(name);
    s.cfg = o.cfg();
    s.sim = simulate(o, costs);
    s.costs = costs;
    return s;
}

// The page's data element, parsed.
json::value page_data(const std::string& html) {
    const std::string open = "<script id=\"ppsched-data\" type=\"application/json\">";
    const auto a = html.find(open);
    REQUIRE(a != std::string::npos);
    const auto b = html.find("</script>", a);
    REQUIRE(b != std::string::npos);
    return json::parse(std::string_view(html).substr(a + open.size(), b - a - open.size()));
}

// An independent base64 decoder (RFC 4648).
std::vector<std::uint8_t> unbase64(std::string_view s) {
    auto digit = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') return c - 'A';
        if (c >= 'a' && c <= 'z') return c - 'a' + 26;
        if (c >= '0' && c <= '9') return c - '0' + 52;
        return c == '+' ? 62 : c == '/' ? 63 : -1;
    };
    std::vector<std::uint8_t> out;
    std::uint32_t acc = 0;
    int bits = 0;
    for (const char c : s) {
        const int d = digit(c);
        if (d < 0) break; // padding
        acc = (acc << 6) | static_cast<std::uint32_t>(d);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<std::uint8_t>(acc >> bits));
        }
    }
    return out;
}

// A packed column (["u16", "base64"]) as numbers.
std::vector<std::uint32_t> column(const json::value& c) {
    REQUIRE(c.items.size() == 2);
    const std::string& w = c.items[0].text;
    const std::size_t width = w == "u8" ? 1 : w == "u16" ? 2 : 4;
    const auto bytes = unbase64(c.items[1].text);
    REQUIRE(bytes.size() % width == 0);
    std::vector<std::uint32_t> out(bytes.size() / width);
    for (std::size_t i = 0; i < out.size(); ++i)
        for (std::size_t b = 0; b < width; ++b)
            out[i] |= std::uint32_t{bytes[i * width + b]} << (8 * b);
    return out;
}

std::vector<double> doubles(const json::value& v) {
    const auto bytes = unbase64(v.text);
    REQUIRE(bytes.size() % 8 == 0);
    std::vector<double> out(bytes.size() / 8);
    for (std::size_t i = 0; i < out.size(); ++i) {
        std::uint64_t bits = 0;
        for (std::size_t b = 0; b < 8; ++b) bits |= std::uint64_t{bytes[i * 8 + b]} << (8 * b);
        out[i] = std::bit_cast<double>(bits);
    }
    return out;
}

} // namespace

TEST_CASE("a report is one HTML file that fetches nothing", "[html_report]") {
    const auto o = ppsched::generate<ppsched::one_f_one_b>(config{.ranks = 4, .microbatches = 8});
    const std::string html = write_html_report(make("1F1B", o));
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(html.find("</html>") != std::string::npos);
    for (const std::string_view external : {"http://", "https://", "<link", "src=", "import("})
        CHECK(html.find(external) == std::string::npos);
    CHECK(html.find("<canvas id=\"chart\">") != std::string::npos);
}

TEST_CASE("a report's data round-trip every action's kind, stage, microbatch, start and end",
          "[html_report]") {
    cost_model costs;
    costs.uniform.forward = 1.1;
    costs.uniform.backward_input = 0.7;
    costs.p2p_latency = 0.25;
    const auto o = ppsched::lower(ppsched::generate<ppsched::interleaved_1f1b>(
        config{.ranks = 4, .stages_per_rank = 2, .microbatches = 8}));
    const report_schedule s = make("Interleaved1F1B", o, costs);
    const json::value data = page_data(write_html_report(s));
    REQUIRE(data.find("schedules")->items.size() == 1);
    const json::value& d = data.find("schedules")->items[0];
    CHECK(d.find("name")->text == "Interleaved1F1B");
    CHECK(d.find("makespan")->number == s.sim.makespan);
    CHECK(d.find("bubbleFraction")->number == s.sim.bubble_fraction);
    CHECK(d.find("lowerBound")->kind == json::type::null);
    CHECK(d.find("lowered")->boolean);
    const auto& ranks = d.find("rankSummary")->items;
    REQUIRE(ranks.size() == s.sim.ranks.size());
    for (std::size_t r = 0; r < ranks.size(); ++r) {
        CHECK(ranks[r].find("peak_activations")->number == s.sim.ranks[r].peak_activations);
        CHECK(ranks[r].find("busy")->number == s.sim.ranks[r].busy);
    }
    const json::value& cols = *d.find("cols");
    const auto kind = column(*cols.find("kind")), stage = column(*cols.find("stage"));
    const auto mb = column(*cols.find("mb")), slot = column(*cols.find("slot"));
    const auto t0 = column(*cols.find("t0")), t1 = column(*cols.find("t1"));
    const auto times = doubles(*d.find("times"));
    REQUIRE(kind.size() == s.sim.timeline.size());
    REQUIRE(static_cast<std::size_t>(d.find("count")->number) == kind.size());
    for (std::size_t i = 0; i < kind.size(); ++i) {
        const ppsched::timed_action& t = s.sim.timeline[i];
        INFO("action " << i << ": " << ppsched::to_string(t.act));
        CHECK(kind[i] == static_cast<std::uint32_t>(t.act.kind()));
        CHECK(stage[i] == static_cast<std::uint32_t>(t.act.stage()));
        if (t.act.has_microbatch()) CHECK(mb[i] == static_cast<std::uint32_t>(t.act.microbatch()));
        CHECK(slot[i] == static_cast<std::uint32_t>(t.slot));
        REQUIRE(t0[i] < times.size());
        REQUIRE(t1[i] < times.size());
        CHECK(times[t0[i]] == t.start);
        CHECK(times[t1[i]] == t.end);
    }
}

TEST_CASE("a report carries a lower bound, overlapped pairs and problems", "[html_report]") {
    const auto o =
        ppsched::generate<ppsched::dualpipe_v>(config{.ranks = 4,
                                                      .stages_per_rank = 2,
                                                      .microbatches = 10,
                                                      .placement = ppsched::stage_placement::v});
    report_schedule s = make("DualPipeV", o);
    s.lower_bound = 12.5;
    s.problems.push_back({1, 3, "rank 1, step 3: something is wrong"});
    ppsched::io::report_options opts;
    opts.memory_limit = 6;
    const json::value data = page_data(write_html_report(s, opts));
    CHECK(data.find("memoryLimit")->number == 6);
    const json::value& d = data.find("schedules")->items[0];
    CHECK(d.find("lowerBound")->number == 12.5);
    REQUIRE(d.find("cols")->find("kind2") != nullptr); // DualPipeV overlaps F and B
    const auto& problems = d.find("problems")->items;
    REQUIRE(problems.size() == 1);
    CHECK(problems[0].find("step")->number == 3);
    CHECK(problems[0].find("message")->text == "rank 1, step 3: something is wrong");
}

TEST_CASE("a report shows a deadlock's waiting ranks", "[html_report]") {
    const auto o = ppsched::io::read_csv("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n");
    const report_schedule s = make("deadlock", o);
    REQUIRE(s.sim.status == ppsched::simulation_status::deadlock);
    const json::value data = page_data(write_html_report(s));
    const json::value& d = data.find("schedules")->items[0];
    CHECK(d.find("status")->text == "deadlock");
    const auto& problems = d.find("problems")->items;
    REQUIRE(problems.size() == 2);
    CHECK(problems[0].find("rank")->number == 0);
    CHECK(problems[0].find("message")->text.find("rank 0 waits") != std::string::npos);
    CHECK(problems[1].find("rank")->number == 1);
}

TEST_CASE("a report escapes names so that no text closes its script", "[html_report]") {
    const auto o = ppsched::generate<ppsched::gpipe>(config{.ranks = 2, .microbatches = 2});
    ppsched::io::report_options opts;
    opts.title = "a <b>title</b> & more";
    const std::string html = write_html_report(make("</script><script>alert(1)</script>", o), opts);
    CHECK(html.find("<script>alert") == std::string::npos);
    CHECK(html.find("<title>a &lt;b&gt;title&lt;/b&gt; &amp; more</title>") != std::string::npos);
    const json::value data = page_data(html);
    CHECK(data.find("schedules")->items[0].find("name")->text ==
          "</script><script>alert(1)</script>");
}

TEST_CASE("a report draws an order the simulator refuses one unit per step", "[html_report]") {
    // 1F0 on rank 0: stage 1 lives on rank 1, so nothing runs; the failing step is slot 1.
    const auto o = ppsched::io::read_csv("0F0,1F0,0B0\n1B0,,\n");
    const report_schedule s = make("invalid", o);
    REQUIRE(s.sim.status == ppsched::simulation_status::invalid);
    const json::value data = page_data(write_html_report(s));
    const json::value& d = data.find("schedules")->items[0];
    CHECK(d.find("status")->text == "invalid");
    CHECK(d.find("steps")->boolean);
    const auto slot = column(*d.find("cols")->find("slot"));
    const auto t0 = column(*d.find("cols")->find("t0"));
    const auto t1 = column(*d.find("cols")->find("t1"));
    const auto times = doubles(*d.find("times"));
    REQUIRE(slot.size() == 4); // every action, though none ran
    for (std::size_t i = 0; i < slot.size(); ++i) {
        CHECK(times[t0[i]] == slot[i]);
        CHECK(times[t1[i]] == slot[i] + 1.0);
    }
    const auto& problems = d.find("problems")->items;
    REQUIRE(!problems.empty());
    CHECK(problems[0].find("rank")->number == 0);
    CHECK(problems[0].find("step")->number == 1);
    CHECK(problems[0].find("time")->number == 2); // the mark just after the failing step
}
