// ppsched::plan on the shipped DeepSeek-V3 model (64 layers: embedding, 61 decoders, MTP,
// loss) with 16 ranks, up to 4 stages per rank: the target is <= 10 s per plan.
// `plan/.../default` uses the default options (5 s for the schedule searches together);
// `plan/.../candidates` caps each search at 1 evaluation, so it measures the rest: the exact
// partitions, lower bounds and built-in schedules of every candidate split.

#include <string>

#include <benchmark/benchmark.h>

#include <ppsched/plan/plan.hpp>

namespace {

const ppsched::model_description& deepseek() {
    static const ppsched::model_description m =
        ppsched::read_model_json_file(PPSCHED_SOURCE_DIR "/examples/models/deepseek_v3.json");
    return m;
}

void run_plan(benchmark::State& state, std::uint64_t max_evaluations) {
    ppsched::plan_options opts;
    opts.max_stages_per_rank = 4;
    opts.max_evaluations = max_evaluations;
    const int microbatches = static_cast<int>(state.range(0));
    double makespan = 0, speedup = 0;
    for (auto _ : state) {
        const ppsched::plan_result r = ppsched::plan(deepseek(), 16, microbatches, opts);
        makespan = r.schedule.makespan;
        speedup = r.default_makespan / r.schedule.makespan;
        benchmark::DoNotOptimize(makespan);
    }
    state.counters["step_ms"] = makespan;
    state.counters["speedup"] = speedup;
}

void plan_default(benchmark::State& state) { run_plan(state, 0); }
void plan_candidates(benchmark::State& state) { run_plan(state, 1); }

} // namespace

BENCHMARK(plan_default)
    ->Name("plan/deepseek_v3/p16/v4/default")
    ->Arg(16)
    ->Arg(32)
    ->Arg(64)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK(plan_candidates)
    ->Name("plan/deepseek_v3/p16/v4/candidates")
    ->Arg(32)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
