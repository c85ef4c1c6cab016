// The configurations of the Python reference figures (issue 8): generate and lower, timed
// per call, to set beside PyTorch's seconds.

#include <string>

#include <ppsched/algorithms/lower.hpp>

#include "support.hpp"

namespace ppsched::bench {
namespace {

struct reference_case {
    const char* schedule; // PyTorch's name
    config cfg;
};

constexpr reference_case reference_cases[] = {
    {"Interleaved1F1B", {.ranks = 32, .stages_per_rank = 4, .microbatches = 256}},
    {"Interleaved1F1B", {.ranks = 64, .stages_per_rank = 4, .microbatches = 512}},
    {"InterleavedZeroBubble", {.ranks = 64, .stages_per_rank = 4, .microbatches = 512}},
    {"DualPipeV", {.ranks = 64, .stages_per_rank = 2, .microbatches = 512}},
    {"GPipe", {.ranks = 64, .stages_per_rank = 1, .microbatches = 512}},
};

void reference_generate(benchmark::State& state, const schedule_entry& e, const config& cfg) {
    const std::size_t actions = e.generate(cfg, {}).action_count();
    for (auto _ : state) {
        order o = e.generate(cfg, {});
        benchmark::DoNotOptimize(o);
    }
    finish(state, actions, [&] { return e.generate(cfg, {}); });
}

void reference_lower(benchmark::State& state, const schedule_entry& e, const config& cfg) {
    const order in = e.generate(cfg, {});
    const std::size_t out = lower(in).action_count();
    for (auto _ : state) {
        order o = lower(in);
        benchmark::DoNotOptimize(o);
    }
    finish(state, in.action_count(), [&] { return lower(in); });
    state.counters["out_actions"] = static_cast<double>(out);
}

} // namespace

void register_reference_benchmarks() {
    for (const reference_case& c : reference_cases) {
        const schedule_entry& e = builtin_schedules().at(c.schedule);
        const std::string shape = std::to_string(c.cfg.ranks) + "x" +
                                  std::to_string(c.cfg.stages_per_rank) + "x" +
                                  std::to_string(c.cfg.microbatches);
        const std::string tail = std::string("/") + c.schedule + "/" + shape;
        benchmark::RegisterBenchmark(
            ("reference/generate" + tail).c_str(),
            [&e, cfg = c.cfg](benchmark::State& s) { reference_generate(s, e, cfg); })
            ->Unit(benchmark::kMillisecond);
        benchmark::RegisterBenchmark(("reference/lower" + tail).c_str(), [&e, cfg = c.cfg](
                                                                             benchmark::State& s) {
            reference_lower(s, e, cfg);
        })->Unit(benchmark::kMillisecond);
    }
}

} // namespace ppsched::bench
