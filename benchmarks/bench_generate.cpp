// generate: each schedule's compute-only order through the run-time registry (the same code
// `generate<S>(cfg)` runs; the registry adds one indirect call).

#include "support.hpp"

namespace ppsched::bench {
namespace {

void generate(benchmark::State& state, workload& w) {
    for (auto _ : state) {
        order o = w.entry->generate(w.cfg, {});
        benchmark::DoNotOptimize(o);
    }
    finish(state, w.compute_actions, [&] { return w.entry->generate(w.cfg, {}); });
    // Storage of the result: 16-byte slots (idle ones included) over the actions, plus the
    // per-rank vectors.
    std::size_t slots = 0;
    for (const auto& row : w.compute) slots += row.size();
    state.counters["slots/action"] =
        static_cast<double>(slots) / static_cast<double>(w.compute_actions);
}

} // namespace

std::vector<algorithm> generate_benchmarks() { return {{"generate", generate}}; }

} // namespace ppsched::bench
