#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/io/detail/json.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/io/chrome_trace.hpp>
#include <ppsched/schedules.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstddef>
#include <limits>
#include <map>
#include <string>
#include <vector>

using ppsched::action;
using ppsched::config;
using ppsched::cost_model;
using ppsched::order;
using ppsched::simulate;
using ppsched::simulation;
using ppsched::io::write_chrome_trace;
namespace json = ppsched::detail::json;

namespace {

const json::value& member(const json::value& v, const char* key) {
    const json::value* m = v.find(key);
    INFO("missing key " << key);
    REQUIRE(m != nullptr);
    return *m;
}

std::string text_of(const json::value& v, const char* key) { return member(v, key).text; }
double number_of(const json::value& v, const char* key) { return member(v, key).number; }

// The events of a trace with phase `ph`.
std::vector<const json::value*> events(const json::value& doc, const std::string& ph) {
    std::vector<const json::value*> out;
    for (const auto& e : member(doc, "traceEvents").items)
        if (text_of(e, "ph") == ph) out.push_back(&e);
    return out;
}

// ZBV on 4 ranks: stage s and s+1 share a rank only for s = 3 (the V's turn), so 6 of the 7
// forward hand-overs and 6 of the 7 backward ones cross ranks, for each of 8 microbatches.
constexpr config zbv_4x8{
    .ranks = 4, .stages_per_rank = 2, .microbatches = 8, .placement = ppsched::stage_placement::v};
constexpr std::size_t zbv_4x8_messages = (6 + 6) * 8;

} // namespace

TEST_CASE("a trace has one complete event per action with its simulated time", "[trace]") {
    const order o = ppsched::generate<ppsched::gpipe>(config{.ranks = 2, .microbatches = 2});
    const simulation sim = simulate(o, cost_model::uniform_fb(1, 2));
    const json::value doc = json::parse(write_chrome_trace(sim, o.cfg()), "trace");
    const auto x = events(doc, "X");
    REQUIRE(x.size() == o.action_count());
    // GPipe 2 x 2, F = 1, B = 2 (see test_svg.cpp): 1B0 runs from 3 to 5 on rank 1; one unit is
    // 1000 trace microseconds.
    std::size_t found = 0;
    for (const json::value* e : x) {
        CHECK(text_of(*e, "cat") == "compute");
        CHECK(number_of(*e, "tid") == 0);
        if (text_of(*e, "name") != "1B0") continue;
        ++found;
        CHECK(number_of(*e, "pid") == 1);
        CHECK(number_of(*e, "ts") == 3000);
        CHECK(number_of(*e, "dur") == 2000);
        CHECK(text_of(member(*e, "args"), "kind") == "full_backward");
        CHECK(number_of(member(*e, "args"), "microbatch") == 0);
        CHECK(number_of(member(*e, "args"), "stage") == 1);
    }
    CHECK(found == 1);
    CHECK(number_of(member(doc, "otherData"), "makespan") == 9);
}

TEST_CASE("a trace names a process per rank with a compute and a comm thread", "[trace]") {
    const order o = ppsched::generate<ppsched::one_f_one_b>(config{.ranks = 3, .microbatches = 3});
    const json::value doc = json::parse(write_chrome_trace(simulate(o), o.cfg()), "trace");
    std::map<std::string, int> names;
    for (const json::value* m : events(doc, "M")) {
        const std::string what = text_of(*m, "name");
        if (what == "process_name" || what == "thread_name")
            ++names[what + ":" + text_of(member(*m, "args"), "name")];
    }
    CHECK(names["process_name:rank 0"] == 1);
    CHECK(names["process_name:rank 2"] == 1);
    CHECK(names["thread_name:compute"] == 3);
    CHECK(names["thread_name:comm"] == 3);
}

TEST_CASE("a lowered trace has one flow from each send to its receive", "[trace]") {
    const order o = ppsched::lower(ppsched::generate<ppsched::zbv_zero_bubble>(zbv_4x8));
    cost_model costs;
    costs.p2p_latency = 0.5;
    const simulation sim = simulate(o, costs);
    REQUIRE(sim);
    const json::value doc = json::parse(write_chrome_trace(sim, o.cfg()), "trace");
    const auto x = events(doc, "X");
    CHECK(x.size() == o.action_count());
    const auto s = events(doc, "s");
    const auto f = events(doc, "f");
    CHECK(s.size() == zbv_4x8_messages);
    CHECK(f.size() == zbv_4x8_messages);
    // Each flow binds to a slice with its category, process, thread and time: SEND to RECV.
    // (A send and a receive may share a time on one thread: the names of all candidates.)
    auto bound = [&](const json::value& flow) -> std::string {
        std::string names;
        for (const json::value* e : x)
            if (number_of(*e, "pid") == number_of(flow, "pid") &&
                number_of(*e, "tid") == number_of(flow, "tid") &&
                number_of(*e, "ts") == number_of(flow, "ts") &&
                text_of(*e, "cat") == text_of(flow, "cat"))
                names += text_of(*e, "name") + " ";
        return names;
    };
    std::map<double, const json::value*> starts;
    for (const json::value* e : s) {
        CHECK(bound(*e).find("SEND_") != std::string::npos);
        starts[number_of(*e, "id")] = e;
    }
    CHECK(starts.size() == s.size()); // unique ids
    for (const json::value* e : f) {
        CHECK(bound(*e).find("RECV_") != std::string::npos);
        CHECK(text_of(*e, "bp") == "e");
        const auto from = starts.find(number_of(*e, "id"));
        REQUIRE(from != starts.end());
        CHECK(text_of(*from->second, "name") == text_of(*e, "name"));
        CHECK(text_of(*from->second, "cat") == text_of(*e, "cat"));
        // The message takes 0.5 units at least, and it goes to another rank.
        CHECK(number_of(*e, "ts") - number_of(*from->second, "ts") >= 500);
        CHECK(number_of(*e, "pid") != number_of(*from->second, "pid"));
    }
}

TEST_CASE("a compute-only trace draws a flow for each hand-over between ranks", "[trace]") {
    const order o = ppsched::generate<ppsched::zbv_zero_bubble>(zbv_4x8);
    const json::value doc = json::parse(write_chrome_trace(simulate(o), o.cfg()), "trace");
    CHECK(events(doc, "s").size() == zbv_4x8_messages);
    CHECK(events(doc, "f").size() == zbv_4x8_messages);
    CHECK(events(doc, "X").size() == o.action_count());
}

TEST_CASE("trace events are in time order and the name is escaped", "[trace]") {
    const order o =
        ppsched::generate<ppsched::dualpipe_v>(config{.ranks = 4,
                                                      .stages_per_rank = 2,
                                                      .microbatches = 8,
                                                      .placement = ppsched::stage_placement::v});
    ppsched::io::trace_options opts;
    opts.name = "say \"hi\"\\\n";
    opts.microseconds_per_unit = 1;
    const json::value doc = json::parse(write_chrome_trace(simulate(o), o.cfg(), opts), "trace");
    CHECK(text_of(member(doc, "otherData"), "name") == opts.name);
    double last = -1;
    std::size_t overlapped = 0;
    for (const auto& e : member(doc, "traceEvents").items) {
        if (text_of(e, "ph") == "M") continue;
        CHECK(number_of(e, "ts") >= last);
        last = number_of(e, "ts");
        if (text_of(e, "ph") == "X" && text_of(member(e, "args"), "kind") == "overlap_f_b") {
            ++overlapped;
            CHECK(member(e, "args").find("backward") != nullptr);
        }
    }
    CHECK(overlapped > 0);
}

TEST_CASE("a trace refuses a non-finite time: JSON has no inf or nan", "[chrome_trace][bounded]") {
    const order o = ppsched::generate<ppsched::gpipe>(config{.ranks = 2, .microbatches = 2});
    simulation sim = simulate(o);
    CHECK_NOTHROW(write_chrome_trace(sim, o.cfg()));
    sim.timeline.back().end = std::numeric_limits<double>::infinity();
    CHECK_THROWS_AS(write_chrome_trace(sim, o.cfg()), ppsched::config_error);
}

TEST_CASE("a finite makespan whose microseconds overflow is refused, not written as inf",
          "[chrome_trace][bounded]") {
    // Found by fuzz_cost_json ({"F": 1e306}): a finite makespan of some 1e306 units is beyond
    // the largest double once in microseconds.
    const order o = ppsched::generate<ppsched::gpipe>(config{.ranks = 2, .microbatches = 2});
    const simulation sim = simulate(o, cost_model::uniform_fb(1e305, 1e305));
    REQUIRE(std::isfinite(sim.makespan));
    CHECK_THROWS_AS(write_chrome_trace(sim, o.cfg()), ppsched::config_error);
    ppsched::io::trace_options unit;
    unit.microseconds_per_unit = 1;
    CHECK_NOTHROW(write_chrome_trace(sim, o.cfg(), unit));
}
