#pragma once
// Shared pieces of the ppsched benchmarks: the size ladder, the configuration that gives a
// schedule about N actions, a one-entry cache of prepared inputs (generating and lowering
// 10^7 actions for every benchmark would dominate the run), heap accounting, and the
// counters every benchmark reports.

#include <benchmark/benchmark.h>

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ppsched/config.hpp>
#include <ppsched/order.hpp>
#include <ppsched/registry.hpp>

namespace ppsched::bench {

/// Target numbers of compute actions: 10^3 .. 10^7.
inline constexpr std::array<long long, 5> sizes{1'000, 10'000, 100'000, 1'000'000, 10'000'000};

// ---- heap accounting (main.cpp replaces the global operator new/delete) ---------------------

/// Bytes currently allocated through operator new, and the largest value since `reset_peak`.
struct heap_stats {
    std::size_t current = 0;
    std::size_t peak = 0;
};
heap_stats heap() noexcept;
/// Starts a new peak measurement at the current level.
void reset_peak() noexcept;

// ---- workloads -------------------------------------------------------------------------------

/// The configuration of `entry` with about `target` compute actions: the schedule's default
/// stages per rank, `microbatches = 4 * ranks` (every schedule accepts it), ranks chosen from
/// the actions per (rank, stage, microbatch) of a small instance. Both ranks and microbatches
/// grow, so per-rank and per-microbatch costs both show in the scaling.
/// Empty when no configuration near that shape is accepted.
std::optional<config> config_for(const schedule_entry& entry, long long target);

/// Prepared inputs of one (schedule, size), built on first use. Benchmarks are registered
/// schedule by schedule and size by size, so one cached entry serves all algorithms in turn.
struct workload {
    const schedule_entry* entry = nullptr;
    long long target = 0;
    config cfg{};
    order compute; ///< as generated (idle slots included)
    std::size_t compute_actions = 0;
    /// Built on demand.
    const order& compact(); ///< compute with idle slots dropped
    const order& lowered(); ///< lower(compute)
    std::size_t lowered_actions();
    const order& before_send_recv(); ///< compact + UNSHARD/RESHARD + REDUCE_GRAD
    const std::string& lowered_csv();
    const std::vector<std::string_view>& lowered_strings(); ///< every cell of lowered_csv()

  private:
    std::optional<order> compact_, lowered_, before_send_recv_;
    std::optional<std::string> lowered_csv_;
    std::optional<std::vector<std::string_view>> lowered_strings_;
};

/// The workload of (`entry`, `target`) with configuration `cfg` (from `config_for`); replaces
/// the cached one when it differs.
workload& get_workload(const schedule_entry& entry, const config& cfg, long long target);
/// Frees the cached workload.
void drop_workload();

// ---- reporting ---------------------------------------------------------------------------------

/// Sets the counters every benchmark reports after its timing loop:
/// `actions` (per iteration), `actions/s` (a rate over CPU time), and the memory figures of one
/// extra untimed run of `run` (bytes per action of its result and of its peak heap use).
template <class Run>
void finish(benchmark::State& state, std::size_t actions, Run&& run) {
    using benchmark::Counter;
    const auto n = static_cast<double>(actions);
    state.counters["actions"] = n;
    state.counters["actions/s"] = Counter(n, Counter::kIsIterationInvariantRate);
    const std::size_t base = heap().current;
    reset_peak();
    {
        auto result = run();
        const std::size_t held = heap().current - base;
        state.counters["result_B/action"] = static_cast<double>(held) / n;
        benchmark::DoNotOptimize(result);
    }
    state.counters["peak_B/action"] = static_cast<double>(heap().peak - base) / n;
}

/// Registers `fn(state, workload)` as `<algorithm>/<schedule>/<size>` for every schedule of the
/// registry and every size. `fn` is called once per run; the workload stays cached across
/// algorithms only within one (schedule, size), which `register_all` arranges.
using bench_fn = void (*)(benchmark::State&, workload&);
struct algorithm {
    const char* name;
    bench_fn fn;
    /// Largest size it is run at (simulate_steps: its step table can grow faster than the
    /// actions, about 16 GB for a lowered Interleaved1F1B of 10^7 actions).
    long long max_size = sizes.back();
};

/// Every algorithm benchmark, defined in the bench_*.cpp files.
std::vector<algorithm> generate_benchmarks();
std::vector<algorithm> validate_benchmarks();
std::vector<algorithm> lower_benchmarks();
std::vector<algorithm> simulate_benchmarks();
std::vector<algorithm> io_benchmarks();
/// The configurations of the Python reference figures in issue 8.
void register_reference_benchmarks();
/// Registers the auto-scheduler benchmarks (bench_tune.cpp).
void register_tune_benchmarks();

} // namespace ppsched::bench
