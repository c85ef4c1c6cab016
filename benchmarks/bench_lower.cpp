// lower and its passes. `lower` counts the compute actions it reads (`actions/s`) and also
// reports the lowered actions it writes (`out_actions/s`).

#include <ppsched/algorithms/add_reduce_grad.hpp>
#include <ppsched/algorithms/add_send_recv.hpp>
#include <ppsched/algorithms/add_unshard_reshard.hpp>
#include <ppsched/algorithms/lower.hpp>

#include "support.hpp"

namespace ppsched::bench {
namespace {

void lower_order(benchmark::State& state, workload& w) {
    const std::size_t out = w.lowered_actions();
    for (auto _ : state) {
        order o = lower(w.compute);
        benchmark::DoNotOptimize(o);
    }
    finish(state, w.compute_actions, [&] { return lower(w.compute); });
    state.counters["out_actions/s"] =
        benchmark::Counter(static_cast<double>(out), benchmark::Counter::kIsIterationInvariantRate);
}

void unshard_reshard(benchmark::State& state, workload& w) {
    const order& in = w.compact();
    for (auto _ : state) {
        order o = add_unshard_reshard(in);
        benchmark::DoNotOptimize(o);
    }
    finish(state, in.action_count(), [&] { return add_unshard_reshard(in); });
}

void reduce_grad(benchmark::State& state, workload& w) {
    const order& in = w.compact();
    for (auto _ : state) {
        order o = add_reduce_grad(in);
        benchmark::DoNotOptimize(o);
    }
    finish(state, in.action_count(), [&] { return add_reduce_grad(in); });
}

void send_recv(benchmark::State& state, workload& w) {
    const order& in = w.before_send_recv();
    for (auto _ : state) {
        order o = add_send_recv(in);
        benchmark::DoNotOptimize(o);
    }
    finish(state, in.action_count(), [&] { return add_send_recv(in); });
}

} // namespace

std::vector<algorithm> lower_benchmarks() {
    return {{"lower", lower_order},
            {"add_unshard_reshard", unshard_reshard},
            {"add_reduce_grad", reduce_grad},
            {"add_send_recv", send_recv}};
}

} // namespace ppsched::bench
