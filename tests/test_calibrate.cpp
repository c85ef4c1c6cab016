// calibrate.hpp: fitting costs to measured runs and replaying them. The measured runs here are
// made from known costs: a simulated timeline of the lowered order turned into trace spans the
// way ppsched's executor records them (a compute's span starts when its input is there) or the
// way PyTorch's runtime does (the span starts when the rank reaches the action, so it includes
// the wait for its input); the costs, the message time and clock shifts must come back.
#include <catch2/catch.hpp>

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/calibrate.hpp>
#include <ppsched/io/cost_json.hpp>
#include <ppsched/schedules.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace ppsched;

namespace {

struct make_options {
    bool waits_inside = false;   // PyTorch-style spans
    std::vector<double> shift{}; // per rank, microseconds added to its clock
    int iterations = 1;
    double gap_between = 50; // ms between iterations
};

// A measured trace (microseconds) of `lowered` running with `truth` (milliseconds).
io::measured_trace make_trace(const order& lowered, const cost_model& truth,
                              const make_options& opt = {}) {
    const simulation sim = simulate(lowered, truth);
    REQUIRE(sim);
    io::measured_trace t;
    t.ranks.resize(lowered.size());
    for (int it = 0; it < opt.iterations; ++it) {
        const double base = it * (sim.makespan + opt.gap_between);
        std::vector<double> prev_end(lowered.size(), base);
        for (const auto& a : sim.timeline) {
            const auto r = static_cast<std::size_t>(a.rank);
            double start = base + a.start, end = base + a.end;
            if (is_recv(a.act.kind())) end = start; // a receive is only posted
            if (opt.waits_inside && is_compute(a.act.kind())) start = prev_end[r];
            const double s = r < opt.shift.size() ? opt.shift[r] : 0;
            t.ranks[r].push_back({a.act, start * 1000 + s, end * 1000 + s});
            if (a.on != stream::comm) prev_end[r] = std::max(prev_end[r], end);
        }
    }
    t.side.assign(lowered.size(), io::trace_side::cpu);
    t.spans_after_input_waits = !opt.waits_inside;
    t.sources.assign(lowered.size(), "test");
    return t;
}

cost_model per_stage(std::vector<double> f, std::vector<double> b, double msg) {
    cost_model c;
    for (std::size_t s = 0; s < f.size(); ++s) {
        stage_costs sc;
        sc.forward = f[s];
        sc.full_backward = b[s];
        c.per_stage.push_back(sc);
    }
    c.p2p_latency = msg;
    return c;
}

const cost_fit* fit_of(const calibration& c, int stage, action_kind k) {
    for (const auto& f : c.report.fits)
        if (f.stage == stage && f.kind == k) return &f;
    return nullptr;
}

void check_recovers(const calibration& c, const cost_model& truth, double tol) {
    const auto stages = static_cast<int>(c.executed.cfg().num_stages());
    for (int s = 0; s < stages; ++s) {
        const resolved_stage_costs want = truth.at(s), got = c.costs.at(s);
        INFO("stage " << s);
        CHECK(got.forward == Approx(want.forward).margin(tol));
        CHECK(got.full_backward == Approx(want.full_backward).margin(tol));
        CHECK(got.backward_input == Approx(want.backward_input).margin(tol));
        CHECK(got.backward_weight == Approx(want.backward_weight).margin(tol));
    }
    CHECK(c.costs.message_time() == Approx(truth.message_time()).margin(tol));
    REQUIRE(c.report.valid);
    CHECK(c.report.predicted_step == Approx(c.report.measured_step).margin(tol));
}

} // namespace

TEST_CASE("calibrate recovers per-stage costs and the message time of 1F1B", "[calibrate]") {
    const order lowered = lower(generate<one_f_one_b>({.ranks = 2, .microbatches = 6}));
    const cost_model truth = per_stage({2, 3}, {4, 6.5}, 0.1);
    const calibration c = calibrate(make_trace(lowered, truth));
    CHECK(c.executed == lowered);
    check_recovers(c, truth, 1e-6);
    CHECK(c.report.iterations == 1);
    CHECK(c.report.waited_messages > 0);
    REQUIRE(fit_of(c, 1, action_kind::full_backward));
    CHECK(fit_of(c, 1, action_kind::full_backward)->samples == 6);
    CHECK(fit_of(c, 1, action_kind::full_backward)->spread == Approx(0).margin(1e-9));
    // Every rank's idle time agrees with the replay when the costs are exact.
    REQUIRE(c.report.measured_idle.size() == 2);
    for (std::size_t r = 0; r < 2; ++r)
        CHECK(c.report.measured_idle[r] == Approx(c.report.predicted_idle[r]).margin(1e-6));
}

TEST_CASE("spans that include the wait for their input (PyTorch's) predict the step time",
          "[calibrate]") {
    const order lowered = lower(generate<one_f_one_b>({.ranks = 2, .microbatches = 6}));
    const cost_model truth = per_stage({2, 3}, {4, 6.5}, 0.1);
    const calibration c = calibrate(make_trace(lowered, truth, {.waits_inside = true}));
    // Rank 0's B always waits for its gradient, so its span is message + work in every sample:
    // the two cannot be told apart and the message time goes into its cost.
    for (int s = 0; s < 2; ++s) {
        CHECK(c.costs.at(s).forward == Approx(truth.at(s).forward).margin(0.1 + 1e-9));
        CHECK(c.costs.at(s).full_backward == Approx(truth.at(s).full_backward).margin(0.1 + 1e-9));
    }
    CHECK(c.report.clock_offsets[1] == 0);
    REQUIRE(c.report.valid);
    CHECK(c.report.predicted_step == Approx(c.report.measured_step).epsilon(0.01));
}

TEST_CASE("calibrate aligns clocks on the send/receive pairs", "[calibrate]") {
    const order lowered = lower(generate<one_f_one_b>({.ranks = 4, .microbatches = 8}));
    const cost_model truth = per_stage({2, 3, 2.5, 1}, {4, 6, 5, 2}, 0.2);
    const std::vector<double> shift{0, 5000, -12345, 777};
    for (bool waits : {false, true}) {
        INFO("waits inside the spans: " << waits);
        const calibration c =
            calibrate(make_trace(lowered, truth, {.waits_inside = waits, .shift = shift}));
        // Spans that start after their input waits give the offsets exactly. Spans with the
        // waits inside give them to within a fraction of a compute (the window the messages
        // leave is as wide as the computes that consume them), then the fit follows.
        const double margin = waits ? 500 : 1e-6;
        for (std::size_t r = 1; r < 4; ++r)
            CHECK(c.report.clock_offsets[r] == Approx(-shift[r]).margin(margin));
        if (!waits) check_recovers(c, truth, 1e-6);
        for (int s = 0; s < 4; ++s) {
            CHECK(c.costs.at(s).forward == Approx(truth.at(s).forward).margin(0.5));
            CHECK(c.costs.at(s).full_backward == Approx(truth.at(s).full_backward).margin(0.5));
        }
        REQUIRE(c.report.valid);
        CHECK(c.report.predicted_step == Approx(c.report.measured_step).epsilon(0.02));
    }
    // Clocks that already agree are not moved (spans with waits inside: by less than a
    // message time).
    for (double d : calibrate(make_trace(lowered, truth)).report.clock_offsets) CHECK(d == 0);
    for (double d :
         calibrate(make_trace(lowered, truth, {.waits_inside = true})).report.clock_offsets)
        CHECK(d == Approx(0).margin(200));
}

TEST_CASE("calibrate fits I and W of zero-bubble and V schedules", "[calibrate]") {
    cost_model truth;
    for (int s = 0; s < 4; ++s) {
        stage_costs sc;
        sc.forward = 1 + 0.5 * s;
        sc.backward_input = 1.25 + 0.25 * s;
        sc.backward_weight = 0.75 + 0.1 * s;
        truth.per_stage.push_back(sc);
    }
    truth.p2p_latency = 0.05;
    for (const order& o :
         {generate<zbv_zero_bubble>({.ranks = 2, .stages_per_rank = 2, .microbatches = 6}),
          generate<interleaved_1f1b>({.ranks = 2, .stages_per_rank = 2, .microbatches = 4})}) {
        const order lowered = lower(o, {.unshard_reshard = false});
        {
            INFO(to_string_view(o.cfg().placement));
            cost_model t = truth;
            if (o.cfg().placement == stage_placement::loop) // interleaved 1F1B runs B
                for (auto& sc : t.per_stage) {
                    sc.full_backward = *sc.backward_input + *sc.backward_weight;
                    sc.backward_input.reset();
                    sc.backward_weight.reset();
                }
            const calibration c = calibrate(make_trace(lowered, t));
            CHECK(c.executed.cfg() == lowered.cfg());
            check_recovers(c, t, 1e-6);
        }
    }
}

TEST_CASE("iterations are cut where an action repeats; a cut-off one is dropped", "[calibrate]") {
    const order lowered = lower(generate<one_f_one_b>({.ranks = 2, .microbatches = 4}));
    const cost_model truth = per_stage({2, 3}, {4, 6}, 0.1);
    io::measured_trace t = make_trace(lowered, truth, {.iterations = 3});
    // The profiler stopped in the middle of the third iteration on rank 1.
    t.ranks[1].resize(t.ranks[1].size() - 3);
    const calibration c = calibrate(t);
    CHECK(c.report.iterations == 2);
    CHECK(c.report.measured_steps.size() == 2);
    check_recovers(c, truth, 1e-6);
    bool said = false;
    for (const auto& n : c.report.notes)
        said = said || n.find("iteration 2 ran a different order") != std::string::npos;
    CHECK(said);
}

TEST_CASE("compute spans of one rank that overlap are reported", "[calibrate]") {
    const order lowered = lower(generate<one_f_one_b>({.ranks = 2, .microbatches = 4}));
    const cost_model truth = per_stage({2, 3}, {4, 6}, 0.1);
    io::measured_trace t = make_trace(lowered, truth);
    auto overlap_notes = [](const calibration& c) {
        int n = 0;
        for (const auto& note : c.report.notes)
            n += note.find("start before an earlier one ends") != std::string::npos;
        return n;
    };
    // As recorded: one compute at a time on each rank, no such note.
    CHECK(overlap_notes(calibrate(t)) == 0);
    // Rank 0's first forward stretched over the next 3 ms: its measured idle would be wrong.
    for (auto& m : t.ranks[0])
        if (m.act == action::forward(0, 0)) m.end += 3000;
    const calibration c = calibrate(t);
    CHECK(overlap_notes(c) == 1);
    bool named = false;
    for (const auto& note : c.report.notes)
        named =
            named || (note.rfind("rank 0: ", 0) == 0 && note.find("0F0 ends") != std::string::npos);
    CHECK(named);
}

TEST_CASE("outliers are named, and the median ignores them", "[calibrate]") {
    const order lowered = lower(generate<one_f_one_b>({.ranks = 2, .microbatches = 8}));
    const cost_model truth = per_stage({2, 3}, {4, 6}, 0.1);
    io::measured_trace t = make_trace(lowered, truth);
    // Stretch rank 0's third forward (a hiccup): its end moves, nothing else.
    int seen = 0;
    for (auto& m : t.ranks[0])
        if (m.act.kind() == action_kind::forward && ++seen == 3) m.end += 4000;
    const calibration c = calibrate(t);
    const cost_fit* f = fit_of(c, 0, action_kind::forward);
    REQUIRE(f);
    CHECK(f->median == Approx(2));
    CHECK(f->max == Approx(6));
    REQUIRE(f->outlier_count == 1);
    CHECK(f->outliers[0].act == action::forward(0, 2));
    CHECK(f->outliers[0].rank == 0);
    CHECK_THAT(format_calibration(c), Catch::Contains("rank 0 iteration 0 0F2 6"));
}

TEST_CASE("a compute-only trace is aligned on the producing computes", "[calibrate]") {
    const order compute = generate<one_f_one_b>({.ranks = 2, .microbatches = 4});
    const cost_model truth = per_stage({2, 3}, {4, 6}, 0.1);
    const calibration c = calibrate(make_trace(compute, truth, {.shift = {0, 999}}));
    check_recovers(c, truth, 1e-6);
    CHECK(c.report.clock_offsets[1] == Approx(-999).margin(1e-6));
}

TEST_CASE("an executed order that is not valid is reported, not replayed", "[calibrate]") {
    order lowered = lower(generate<one_f_one_b>({.ranks = 2, .microbatches = 4}));
    const io::measured_trace good = make_trace(lowered, per_stage({2, 3}, {4, 6}, 0.1));
    io::measured_trace t = good;
    // Rank 1 never receives microbatch 3's activation.
    std::erase_if(t.ranks[1],
                  [](const io::measured_action& m) { return m.act == action::recv_f(1, 3); });
    const calibration c = calibrate(t);
    CHECK_FALSE(c.report.valid);
    CHECK_THAT(c.report.problem, Catch::Contains("not valid") && Catch::Contains("SEND_F3"));
    CHECK_THAT(format_calibration(c), Catch::Contains("no replay"));
}

TEST_CASE("the fitted costs are a cost file simulate reads back", "[calibrate]") {
    const order lowered = lower(generate<one_f_one_b>({.ranks = 2, .microbatches = 4}));
    const cost_model truth = per_stage({2, 3}, {4, 6}, 0.1);
    const calibration c = calibrate(make_trace(lowered, truth));
    const cost_model back = io::read_cost_json(io::write_cost_json(c.costs));
    CHECK(back == c.costs);
    CHECK(simulate(lowered, back).makespan == Approx(c.report.predicted_step));
}

TEST_CASE("calibrate rejects an empty trace", "[calibrate]") {
    io::measured_trace t;
    CHECK_THROWS_AS(calibrate(t), config_error);
}

TEST_CASE("the replay with means instead of medians shows what the outliers cost", "[calibrate]") {
    const order lowered = lower(generate<one_f_one_b>({.ranks = 2, .microbatches = 8}));
    const cost_model truth = per_stage({2, 3}, {4, 6}, 0.1);
    io::measured_trace t = make_trace(lowered, truth);
    CHECK(calibrate(t).report.predicted_step_mean == Approx(calibrate(t).report.predicted_step));
    // Stretch every F of rank 1 once in a while: medians stay, means and the replay grow.
    int seen = 0;
    for (auto& m : t.ranks[1])
        if (m.act.kind() == action_kind::forward && ++seen % 3 == 0) m.end += 3000;
    const calibration c = calibrate(t);
    CHECK(c.costs.at(1).forward == Approx(3));
    REQUIRE(fit_of(c, 1, action_kind::forward));
    CHECK(fit_of(c, 1, action_kind::forward)->mean == Approx(3 + 3.0 * 2 / 8));
    CHECK(c.report.predicted_step_mean > c.report.predicted_step + 1);
}

TEST_CASE("damaged traces give a report or a config_error, never a crash", "[calibrate]") {
    const order lowered =
        lower(generate<zbv_zero_bubble>({.ranks = 2, .stages_per_rank = 2, .microbatches = 4}),
              {.unshard_reshard = false});
    cost_model truth;
    truth.p2p_latency = 0.1;
    const io::measured_trace good = make_trace(lowered, truth, {.iterations = 2});
    std::uint64_t state = 12345;
    auto next = [&](std::size_t n) { // a small fixed-seed generator (splitmix64)
        state += 0x9E3779B97F4A7C15ULL;
        std::uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return static_cast<std::size_t>((z ^ (z >> 31)) % n);
    };
    int reports = 0, errors = 0;
    for (int trial = 0; trial < 300; ++trial) {
        io::measured_trace t = good;
        for (int m = 0, n = 1 + static_cast<int>(next(3)); m < n; ++m) {
            auto& row = t.ranks[next(t.ranks.size())];
            if (row.empty()) continue;
            const std::size_t i = next(row.size()), j = next(row.size());
            switch (next(4)) {
            case 0: // an action lost
                row.erase(row.begin() + static_cast<std::ptrdiff_t>(i));
                break;
            case 1: // two actions swapped in order
                std::swap(row[i].act, row[j].act);
                break;
            case 2: // an action recorded twice
                row.insert(row.begin() + static_cast<std::ptrdiff_t>(i), row[j]);
                break;
            default: // a span moved in time
                row[i].start -= 700.0 * static_cast<double>(next(10));
                row[i].end += 300.0 * static_cast<double>(next(10));
                break;
            }
        }
        try {
            const calibration c = calibrate(t);
            CHECK_FALSE(format_calibration(c).empty());
            ++reports;
        } catch (const config_error&) {
            ++errors;
        }
    }
    CHECK(reports + errors == 300);
    CHECK(reports > 0);
}

TEST_CASE("the text report's columns stay apart for OVERLAP costs", "[calibrate]") {
    // DualPipeV overlaps F and B: its fitted kind, OVERLAP_F_B, is the longest.
    const order lowered =
        lower(generate<dualpipe_v>({.ranks = 2, .stages_per_rank = 2, .microbatches = 4}));
    const calibration c = calibrate(make_trace(lowered, per_stage({1, 1, 1, 1}, {2, 2, 2, 2}, 0)));
    const std::string text = format_calibration(c);
    CHECK_THAT(text, Catch::Contains("  stage kind         samples"));
    CHECK_THAT(text, Catch::Contains("\n  0     OVERLAP_F_B  1 "));
    // A difference that rounds to 0 is "+0", never "(0)".
    CHECK_THAT(text, !Catch::Contains("(0)"));
}
