#pragma once
// What every fuzz target checks once it holds an order: the library's promises end to end
// (docs/robustness.md). A broken promise aborts, which libFuzzer and the replay tests report.

#include <ppsched/ppsched.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>

namespace ppsched_fuzz {

/// Stops with a message: the fuzzer records the input that got here.
[[noreturn]] inline void broken(const char* what, const std::string& detail = {}) {
    std::fprintf(stderr, "ppsched fuzz: broken promise: %s %s\n", what, detail.c_str());
    std::abort();
}

#define PPSCHED_FUZZ_CHECK(cond, ...)                                                              \
    do {                                                                                           \
        if (!(cond)) ::ppsched_fuzz::broken(#cond __VA_OPT__(, ) __VA_ARGS__);                     \
    } while (false)

/// Reads bytes as small numbers; past the end every read is 0 (inputs of any length work).
class byte_reader {
  public:
    byte_reader(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    std::uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
    /// A number in [0, n) (n >= 1).
    int below(int n) { return n <= 1 ? 0 : static_cast<int>(byte() % static_cast<unsigned>(n)); }
    bool flag() { return byte() & 1; }
    [[nodiscard]] bool done() const { return pos_ >= size_; }
    /// What is left, as text.
    std::string_view rest() const {
        return {reinterpret_cast<const char*>(data_) + pos_, size_ - std::min(pos_, size_)};
    }

  private:
    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t pos_ = 0;
};

/// True when `text` holds an "inf" or "nan" token as to_chars / printf write them.
inline bool has_non_finite_token(std::string_view text) {
    for (const std::string_view t : {"inf", "nan"}) {
        for (std::size_t at = text.find(t); at != std::string_view::npos;
             at = text.find(t, at + 1)) {
            const char before = at ? text[at - 1] : ' ';
            const char after = at + 3 < text.size() ? text[at + 3] : ' ';
            const auto word = [](char c) {
                return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
            };
            if (!word(before) && !word(after)) return true;
        }
    }
    return false;
}

inline bool same_summary(const ppsched::simulation& a, const ppsched::simulation& b) {
    if (a.status != b.status || a.makespan != b.makespan || a.ranks.size() != b.ranks.size())
        return false;
    for (std::size_t r = 0; r < a.ranks.size(); ++r) {
        const auto &x = a.ranks[r], &y = b.ranks[r];
        if (x.busy != y.busy || x.end != y.end || x.peak_activations != y.peak_activations)
            return false;
    }
    return true;
}

inline void check_finite(const ppsched::simulation& sim) {
    PPSCHED_FUZZ_CHECK(std::isfinite(sim.makespan));
    for (const auto& t : sim.timeline)
        PPSCHED_FUZZ_CHECK(!t.ran || (std::isfinite(t.start) && std::isfinite(t.end)));
    for (const auto& r : sim.ranks)
        PPSCHED_FUZZ_CHECK(std::isfinite(r.busy) && std::isfinite(r.end) &&
                           std::isfinite(r.peak_memory) && std::isfinite(r.bubble_fraction));
}

/// Draws and traces a successful simulation; neither output may hold inf or nan. A time that
/// is not finite must be refused (config_error), never written.
inline void check_outputs(const ppsched::simulation& sim, const ppsched::config& cfg) {
    bool finite = std::isfinite(sim.makespan);
    for (const auto& t : sim.timeline)
        finite = finite && (!t.ran || (std::isfinite(t.start) && std::isfinite(t.end)));
    // Refused as a whole (config_error): allowed only when some time is not finite, or for the
    // trace when its times in microseconds overflow.
    try {
        const std::string svg =
            ppsched::io::write_svg(ppsched::io::chart{"fuzz", cfg, sim, false, ""});
        PPSCHED_FUZZ_CHECK(!has_non_finite_token(svg), "svg");
        (void)ppsched::io::format_text_timeline(sim, cfg);
    } catch (const ppsched::config_error& e) {
        PPSCHED_FUZZ_CHECK(!finite,
                           std::string("the svg refused a finite simulation: ") + e.what());
    }
    const ppsched::io::trace_options opts;
    try {
        const std::string trace = ppsched::io::write_chrome_trace(sim, cfg, opts);
        PPSCHED_FUZZ_CHECK(!has_non_finite_token(trace), "trace");
    } catch (const ppsched::config_error& e) {
        PPSCHED_FUZZ_CHECK(!finite || !std::isfinite(sim.makespan * opts.microseconds_per_unit),
                           std::string("the trace refused a finite simulation: ") + e.what());
    }
}

/// How many orders reached `check_order` and how many of them were valid; printed at exit when
/// the environment has PPSCHED_FUZZ_STATS (to see that a target reaches the deep checks).
struct order_stats {
    std::size_t orders = 0, valid = 0, lowered = 0;
    ~order_stats() {
        if (std::getenv("PPSCHED_FUZZ_STATS"))
            std::fprintf(stderr, "ppsched fuzz: %zu orders, %zu valid (%zu given lowered)\n",
                         orders, valid, lowered);
    }
};
inline order_stats stats;

/// The contract for any order (`costs` finite and checked): validate never throws and is
/// stable; a valid order lowers to a valid order, simulates (with and without a timeline, to
/// the same summary), steps, spaces and draws, and no output holds inf or nan.
inline void check_order(const ppsched::order& o, const ppsched::cost_model& costs = {}) {
    ppsched::validation_report first, second;
    try {
        first = ppsched::validate(o);
        second = ppsched::validate(o);
    } catch (const std::exception& e) {
        broken("validate threw", e.what());
    }
    PPSCHED_FUZZ_CHECK(first.valid() == second.valid() && first.total() == second.total() &&
                       first.violations() == second.violations());
    PPSCHED_FUZZ_CHECK(first.size() <= ppsched::validation_report::max_stored);
    PPSCHED_FUZZ_CHECK(first.total() >= first.size());
    ++stats.orders;
    if (!first.valid()) {
        (void)ppsched::to_string(first);
        return;
    }
    ++stats.valid;
    bool lowered = false;
    for (const auto& row : o)
        for (const auto& s : row)
            if (s && !ppsched::is_compute(s->kind())) lowered = true;
    stats.lowered += lowered ? 1 : 0;

    const ppsched::simulation sim = ppsched::simulate(o, costs);
    PPSCHED_FUZZ_CHECK(sim.status == ppsched::simulation_status::ok,
                       ppsched::describe_problem(sim));
    const ppsched::simulation quick = ppsched::simulate(o, costs, {.timeline = false});
    PPSCHED_FUZZ_CHECK(same_summary(sim, quick), "timeline on/off");
    check_finite(sim);
    check_outputs(sim, o.cfg());

    if (!lowered) {
        const ppsched::order low = ppsched::lower(o);
        const auto rep = ppsched::validate(low);
        PPSCHED_FUZZ_CHECK(rep.valid(), ppsched::to_string(rep));
        const ppsched::simulation ls = ppsched::simulate(low, costs);
        PPSCHED_FUZZ_CHECK(ls.status == ppsched::simulation_status::ok,
                           ppsched::describe_problem(ls));
        check_finite(ls);
        const ppsched::step_simulation steps = ppsched::simulate_steps(low);
        PPSCHED_FUZZ_CHECK(steps.completed(), "simulate_steps of a valid lowering is stuck");
        const ppsched::order spaced = ppsched::add_spacing(o, o.cfg());
        const ppsched::simulation layout = ppsched::step_timeline(spaced);
        check_outputs(layout, o.cfg());
    } else {
        const ppsched::step_simulation steps = ppsched::simulate_steps(o);
        (void)steps; // a lowered order the fuzzer wrote may leave ranks waiting; no crash
    }
}

} // namespace ppsched_fuzz
