// validate: a compute-only order (every dependency a compute action) and its lowered form
// (dependencies across ranks through SEND/RECV).

#include <ppsched/algorithms/validate.hpp>

#include "support.hpp"

namespace ppsched::bench {
namespace {

void run_validate(benchmark::State& state, const order& o) {
    if (!validate(o)) {
        state.SkipWithError("the input order is invalid");
        return;
    }
    for (auto _ : state) {
        auto report = validate(o);
        benchmark::DoNotOptimize(report);
    }
    finish(state, o.action_count(), [&] { return validate(o); });
}

void validate_compute(benchmark::State& state, workload& w) { run_validate(state, w.compute); }
void validate_lowered(benchmark::State& state, workload& w) { run_validate(state, w.lowered()); }

} // namespace

std::vector<algorithm> validate_benchmarks() {
    return {{"validate", validate_compute}, {"validate_lowered", validate_lowered}};
}

} // namespace ppsched::bench
