// The simulators: simulate_steps (PyTorch's unit steps, on the lowered order), add_spacing
// (the visualizer's spacing, on the compute-only order) and the timed simulate (on both).

#include <ppsched/algorithms/add_spacing.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/simulate_steps.hpp>

#include "support.hpp"

namespace ppsched::bench {
namespace {

void steps(benchmark::State& state, workload& w) {
    const order& in = w.lowered();
    for (auto _ : state) {
        auto sim = simulate_steps(in);
        benchmark::DoNotOptimize(sim);
    }
    finish(state, in.action_count(), [&] { return simulate_steps(in); });
    // The step table it produces can grow faster than the actions (a lowered order whose
    // ranks wait on each other step by step): its slots are the other measure of the work.
    std::size_t slots = 0;
    for (const auto& row : simulate_steps(in).timeline) slots += row.size();
    state.counters["slots/s"] = benchmark::Counter(static_cast<double>(slots),
                                                   benchmark::Counter::kIsIterationInvariantRate);
    state.counters["slots/action"] =
        static_cast<double>(slots) / static_cast<double>(in.action_count());
}

void spacing(benchmark::State& state, workload& w) {
    for (auto _ : state) {
        order o = add_spacing(w.compute);
        benchmark::DoNotOptimize(o);
    }
    finish(state, w.compute_actions, [&] { return add_spacing(w.compute); });
}

// `timeline` false: the summary only (what a tuner evaluating many orders asks for).
void run_simulate(benchmark::State& state, const order& in, bool timeline = true) {
    const simulate_options options{.timeline = timeline};
    if (!simulate(in, {}, options)) {
        state.SkipWithError("the input order does not simulate");
        return;
    }
    for (auto _ : state) {
        auto sim = simulate(in, {}, options);
        benchmark::DoNotOptimize(sim);
    }
    finish(state, in.action_count(), [&] { return simulate(in, {}, options); });
}

void timed_compute(benchmark::State& state, workload& w) { run_simulate(state, w.compute); }
void timed_lowered(benchmark::State& state, workload& w) { run_simulate(state, w.lowered()); }
void summary_compute(benchmark::State& state, workload& w) {
    run_simulate(state, w.compute, false);
}
void summary_lowered(benchmark::State& state, workload& w) {
    run_simulate(state, w.lowered(), false);
}

} // namespace

std::vector<algorithm> simulate_benchmarks() {
    return {{"simulate_steps", steps, 1'000'000},  {"add_spacing", spacing},
            {"simulate", timed_compute},           {"simulate_lowered", timed_lowered},
            {"simulate_summary", summary_compute}, {"simulate_summary_lowered", summary_lowered}};
}

} // namespace ppsched::bench
