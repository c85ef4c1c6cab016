// The auto-scheduler: how fast its inner loop times an order, and how long `tune` takes to
// reach its answer on the reference problems (small ones, p = 8 x m = 32 x v = 2, and
// p = 32 x m = 128). The tune benchmarks run once each (a search is seconds long) and report
// what matters as counters: seconds to the final answer, gap to the bound, orders timed per
// second, and the exact phase's nodes (and whether it finished). See docs/tuning.md and
// docs/performance.md.

#include <ppsched/tune/tune.hpp>

#include "support.hpp"

#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace ppsched::bench {
namespace {

tune_problem reference_problem(int p, int m, int v, stage_placement placement, bool uneven,
                               double latency, std::optional<double> limit) {
    tune_problem prob;
    prob.ranks = p;
    prob.microbatches = m;
    prob.stages_per_rank = v;
    prob.placement = placement;
    prob.costs.p2p_latency = latency;
    if (uneven) {
        // The model: the first stage carries the embedding (+30 %), the last the head
        // and the loss (+60 %).
        prob.costs.per_stage.resize(static_cast<std::size_t>(p * v));
        prob.costs.per_stage.front().forward = 1.3;
        prob.costs.per_stage.front().full_backward = 2.6;
        prob.costs.per_stage.back().forward = 1.6;
        prob.costs.per_stage.back().full_backward = 3.2;
    }
    prob.memory_limit = limit;
    return prob;
}

void run_tune(benchmark::State& state, const tune_problem& prob, double time_limit) {
    tune_result r;
    for (auto _ : state) {
        tune_options opts;
        opts.time_limit = time_limit;
        r = tune(prob, opts);
        benchmark::DoNotOptimize(r);
    }
    state.counters["time_to_best_s"] = r.time_to_best;
    state.counters["gap"] = r.gap;
    state.counters["makespan"] = r.makespan;
    state.counters["bound"] = r.bound.value;
    state.counters["best_builtin"] = r.best_builtin_makespan;
    state.counters["orders"] = static_cast<double>(r.evaluations);
    state.counters["orders/s"] = r.elapsed > 0 ? static_cast<double>(r.evaluations) / r.elapsed : 0;
    // The exact phase: partial orders visited, and whether it proved the answer optimal.
    state.counters["exact_nodes"] = static_cast<double>(r.exact_nodes);
    state.counters["exact_complete"] = r.bound.exact_complete ? 1 : 0;
    state.counters["elapsed_s"] = r.elapsed;
}

// The inner loop alone: timings of a greedy order of about `actions` compute actions. Whole
// (`moves` false), or as the local search times its moves (`evaluator::run_changed`): the
// order recorded as the base, then adjacent swaps on a random rank at random places, each
// timed from where it changes the order and undone (about half of the actions on average,
// more for a swap near the start; swaps that deadlock are timed too, and stop early).
void evaluate(benchmark::State& state, int p, int m, int v, bool moves) {
    const tune_problem prob = reference_problem(p, m, v, stage_placement::loop, true, 0.1, {});
    const detail::tune::model model = detail::tune::make_model(prob);
    detail::tune::evaluator ev(model);
    detail::tune::sequences seq;
    (void)detail::tune::greedy_order(model, detail::tune::greedy_rules(model).front(), seq);
    if (moves) {
        (void)ev.run<true>(seq);
        detail::tune::rng random(1);
        for (auto _ : state) {
            const std::size_t r = random.below(seq.size());
            const std::size_t at = random.below(seq[r].size() - 1);
            std::swap(seq[r][at], seq[r][at + 1]);
            auto e = ev.run_changed(seq, r, at);
            benchmark::DoNotOptimize(e);
            std::swap(seq[r][at], seq[r][at + 1]);
        }
    } else {
        for (auto _ : state) {
            auto e = ev.run(seq);
            benchmark::DoNotOptimize(e);
        }
        std::size_t n = 0;
        for (const auto& row : seq) n += row.size();
        state.counters["actions/s"] = benchmark::Counter(
            static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
    }
    state.counters["orders/s"] =
        benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}

// The greedy start points (tune/detail/list_scheduler.hpp): every rule on p = 2, V = 2, with
// m microbatches and room for 8 activations a rank, per action placed. Flat in m: the rule
// looks at one action per queue, and the banker's test at one group per stage entered (it
// scanned and sorted every waiting microbatch before: m = 20 000 took 12 s in `ppsched tune`).
void greedy(benchmark::State& state, int m) {
    const tune_problem prob = reference_problem(2, m, 2, stage_placement::loop, true, 0.1, 8.0);
    const detail::tune::model model = detail::tune::make_model(prob);
    const auto rules = detail::tune::greedy_rules(model);
    detail::tune::sequences seq;
    std::size_t placed = 0;
    for (auto _ : state) {
        placed = 0;
        for (const auto& rule : rules)
            if (detail::tune::greedy_order(model, rule, seq))
                for (const auto& row : seq) placed += row.size();
        benchmark::DoNotOptimize(seq);
    }
    state.counters["rules"] = static_cast<double>(rules.size());
    state.counters["actions/s"] = benchmark::Counter(static_cast<double>(placed),
                                                     benchmark::Counter::kIsIterationInvariantRate);
}

// The rank relaxation (tune/detail/rank_relaxation.hpp) of rank 0, solved from nothing (no
// incumbent): its nodes per second, and how many it needs.
void relax(benchmark::State& state, const tune_problem& prob) {
    const detail::tune::model model = detail::tune::make_model(prob);
    detail::tune::rank_relaxation_result r;
    for (auto _ : state) {
        detail::tune::rank_relaxation relaxation(model, 0);
        r = relaxation.solve(std::numeric_limits<double>::infinity(), 100'000'000);
        benchmark::DoNotOptimize(r);
    }
    state.counters["bound"] = r.value;
    state.counters["complete"] = r.complete ? 1 : 0;
    state.counters["nodes"] = static_cast<double>(r.nodes);
    state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(r.nodes),
                                                   benchmark::Counter::kIsIterationInvariantRate);
}

// One beam search of width 256 (tune/detail/exact_search.hpp) on p = 4 x m = 8, loop V = 2,
// W = 1.5 I, half of 1F1B's memory (192 actions), from nothing (no incumbent), on `threads`
// threads: its nodes per second. The beam and its answer are the same for any thread count.
void beam(benchmark::State& state, std::size_t threads) {
    tune_problem prob;
    prob.ranks = 4;
    prob.microbatches = 8;
    prob.stages_per_rank = 2;
    prob.costs.per_stage.resize(8);
    for (auto& st : prob.costs.per_stage) {
        st.forward = 1;
        st.backward_input = 1;
        st.backward_weight = 1.5;
    }
    prob.memory_limit = 5.5;
    const detail::tune::model model = detail::tune::make_model(prob);
    detail::tune::exact_search search(model);
    detail::tune::exact_outcome r;
    for (auto _ : state) {
        r = search.beam(std::numeric_limits<double>::infinity(), 256, {}, threads);
        benchmark::DoNotOptimize(r);
    }
    state.counters["makespan"] = r.best;
    state.counters["nodes"] = static_cast<double>(r.nodes);
    state.counters["nodes/s"] = benchmark::Counter(static_cast<double>(r.nodes),
                                                   benchmark::Counter::kIsIterationInvariantRate);
}

// A tabu search of 20 000 timed orders from a greedy start, its steps' moves timed on
// `threads` threads (`move_timer`): the same search for any count, only its time changes.
void tabu(benchmark::State& state, int p, int m, int v, std::size_t threads) {
    const tune_problem prob = reference_problem(p, m, v, stage_placement::loop, true, 0.1, p);
    const detail::tune::model model = detail::tune::make_model(prob);
    detail::tune::sequences start;
    for (const auto& g : detail::tune::greedy_rules(model))
        if (detail::tune::greedy_order(model, g, start)) break;
    detail::tune::evaluation r;
    std::uint64_t orders = 0;
    for (auto _ : state) {
        detail::tune::evaluator ev(model);
        detail::tune::move_timer timer(model, threads);
        detail::tune::budget limit;
        limit.deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
        limit.max_evaluations = 20'000;
        detail::tune::rng random(1);
        detail::tune::sequences seq = start;
        r = detail::tune::tabu_search(model, ev, seq, ev.run(seq), limit, random, 1'000'000, true,
                                      &timer);
        orders = ev.count();
        benchmark::DoNotOptimize(r);
    }
    state.counters["makespan"] = r.makespan;
    state.counters["orders/s"] = benchmark::Counter(static_cast<double>(orders),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

} // namespace

void register_tune_benchmarks() {
    struct tabu_size {
        int p, m, v;
    };
    for (const tabu_size& s : {tabu_size{4, 8, 2}, tabu_size{8, 32, 2}, tabu_size{32, 128, 1}})
        for (std::size_t threads : {std::size_t{1}, std::size_t{2}})
            benchmark::RegisterBenchmark(
                ("tune/tabu/p" + std::to_string(s.p) + "_m" + std::to_string(s.m) + "_v" +
                 std::to_string(s.v) + "/threads:" + std::to_string(threads))
                    .c_str(),
                [s, threads](benchmark::State& st) { tabu(st, s.p, s.m, s.v, threads); })
                ->UseRealTime()
                ->Unit(benchmark::kMillisecond);
    for (std::size_t threads : {std::size_t{1}, std::size_t{2}, std::size_t{4}})
        benchmark::RegisterBenchmark(
            ("tune/beam256/p4_m8_loop2_w15_half_memory/threads:" + std::to_string(threads)).c_str(),
            [threads](benchmark::State& st) { beam(st, threads); })
            ->UseRealTime() // threads: wall-clock time, not the main thread's CPU time
            ->Unit(benchmark::kMillisecond);
    for (int m : {8, 10})
        benchmark::RegisterBenchmark(
            ("tune/rank_relaxation/p4_m" + std::to_string(m) + "_v2_half_memory").c_str(),
            [m](benchmark::State& st) {
                relax(st, reference_problem(4, m, 2, stage_placement::loop, true, 0.1, 4.0));
            })
            ->Unit(benchmark::kMillisecond);
    for (int m : {1'000, 10'000, 100'000})
        benchmark::RegisterBenchmark(("tune/greedy/p2_v2_m" + std::to_string(m)).c_str(),
                                     [m](benchmark::State& st) { greedy(st, m); })
            ->Unit(benchmark::kMillisecond);
    struct eval_size {
        long long actions;
        int p, m, v;
    };
    for (const bool moves : {false, true})
        for (const eval_size& s : {eval_size{1'000, 4, 40, 2}, eval_size{10'000, 8, 104, 4},
                                   eval_size{100'000, 32, 260, 4}})
            benchmark::RegisterBenchmark(
                ((moves ? "tune/evaluate_moves/" : "tune/evaluate/") + std::to_string(s.actions))
                    .c_str(),
                [s, moves](benchmark::State& st) { evaluate(st, s.p, s.m, s.v, moves); })
                ->Unit(benchmark::kMicrosecond);

    struct search {
        std::string name;
        tune_problem prob;
        double time_limit;
    };
    std::vector<search> searches;
    // Small problems (at most 4 ranks and 2p + 2 microbatches: the exact solver's sizes).
    for (int p : {2, 4})
        for (auto placement : {stage_placement::loop, stage_placement::v}) {
            const int v = placement == stage_placement::v ? 2 : 1;
            const int m = 2 * p + 2;
            for (bool tight : {false, true})
                searches.push_back(
                    {"tune/small/p" + std::to_string(p) + "_m" + std::to_string(m) + "_" +
                         (placement == stage_placement::v ? "v" : "loop") +
                         (tight ? "_half_memory" : "_1f1b_memory"),
                     reference_problem(p, m, v, placement, true, 0.1, (tight ? 0.5 : 1.0) * p * v),
                     10});
        }
    searches.push_back({"tune/p8_m32_v2/1f1b_memory",
                        reference_problem(8, 32, 2, stage_placement::loop, true, 0.1, 16.0), 2});
    searches.push_back({"tune/p8_m32_v2/no_limit",
                        reference_problem(8, 32, 2, stage_placement::loop, true, 0.1, {}), 2});
    searches.push_back({"tune/p32_m128/1f1b_memory",
                        reference_problem(32, 128, 1, stage_placement::loop, true, 0.1, 32.0), 30});
    for (const search& s : searches)
        benchmark::RegisterBenchmark(
            s.name.c_str(),
            [prob = s.prob, t = s.time_limit](benchmark::State& st) { run_tune(st, prob, t); })
            ->Iterations(1)
            ->Unit(benchmark::kMillisecond);
}

} // namespace ppsched::bench
