#pragma once
/// \file tune/problem.hpp
/// What the auto-scheduler is asked (`tune_problem`), how long it may search (`tune_options`)
/// and what it answers (`tune_result`). The engine is `tune/tune.hpp`; the bound is
/// `tune/lower_bound.hpp`.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ppsched/config.hpp"
#include "ppsched/cost_model.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// Whether the runtime can split a backward into `I` (input gradient) and `W` (weight gradient).
enum class backward_mode : std::uint8_t {
    split, ///< `I` and `W` are separate actions (the zero-bubble schedules); `B` is also allowed
    fused, ///< only `B` (PyTorch's 1F1B, GPipe, ... and runtimes that cannot split)
};

/// Name of a backward mode as used on the command line (`split`, `fused`).
[[nodiscard]] constexpr std::string_view to_string_view(backward_mode m) noexcept {
    return m == backward_mode::fused ? "fused" : "split";
}

/// The mode named `name` (`split`, `fused`); false when there is none.
[[nodiscard]] constexpr bool parse_backward_mode(std::string_view name,
                                                 backward_mode& out) noexcept {
    if (name == "split")
        out = backward_mode::split;
    else if (name == "fused")
        out = backward_mode::fused;
    else
        return false;
    return true;
}

/// A scheduling problem: the pipeline's shape, what each stage costs, and the memory budget.
///
/// Stages are placed by `placement` (`loop` or `v`; `dual` is not searched). `costs` is the
/// `cost_model` `simulate` reads: per-stage F, I, W (or B), activation and parameter memory,
/// and the time of a message between ranks; its `per_stage` array is empty or has exactly
/// one entry per stage. `memory_limit` bounds each rank's peak memory as `simulate` reports it
/// (`rank_summary::peak_memory`: the rank's parameters plus its peak activations).
struct tune_problem {
    int ranks = 1;                                     ///< pipeline ranks
    int microbatches = 1;                              ///< microbatches per step
    int stages_per_rank = 1;                           ///< model chunks per rank
    stage_placement placement = stage_placement::loop; ///< `loop` or `v`
    cost_model costs{};                                ///< what every action costs
    std::optional<double> memory_limit{};              ///< per-rank peak memory; unset: none
    backward_mode backward = backward_mode::split;     ///< can the runtime split B into I + W?

    /// The pipeline configuration of the problem.
    [[nodiscard]] constexpr config cfg() const noexcept {
        return config{.ranks = ranks,
                      .stages_per_rank = stages_per_rank,
                      .microbatches = microbatches,
                      .placement = placement};
    }

    /// The compute actions every order of the problem holds: F, I and W (F and B when the
    /// backward is fused) of each stage and microbatch. In floating point: it can pass any int.
    [[nodiscard]] constexpr double compute_actions() const noexcept {
        return static_cast<double>(ranks) * stages_per_rank * microbatches *
               (backward == backward_mode::split ? 3 : 2);
    }
};

/// What `tune` reports while it searches (about once a second).
struct tune_progress {
    double elapsed = 0;            ///< seconds since the search started
    std::uint64_t evaluations = 0; ///< orders simulated so far
    double best = 0; ///< the best makespan so far (0 while the start points are timed)
    /// The proven lower bound: constant during a search, it may rise once when `tune` goes on
    /// to orders that run B (a split backward whose B is cheaper than I + W).
    double lower_bound = 0;
};

/// How long `tune` may search, and how it reports.
struct tune_options {
    /// Wall-clock budget in seconds; the search also stops when the gap is 0 or when it has
    /// converged (every start point is at a local optimum and the restarts are spent). It bounds
    /// the search, not what comes before it: every applicable built-in schedule is generated and
    /// timed first (linear in the actions), so the answer is never worse than the best of them;
    /// only on problems of 2^20 compute actions or more (where each takes up to seconds) are
    /// those left when the limit is spent not tried (`tune_candidate::why_not` "not tried").
    double time_limit = 10;
    /// Stop after this many simulated orders (0: no limit). With this limit and a generous
    /// `time_limit` the result depends only on the problem, the options and `seed`.
    std::uint64_t max_evaluations = 0;
    /// Partial orders the exact phase may visit (0: skip it; unset: 5 x 10^7 / the problem's
    /// compute actions and at least 1000, about a second or two whatever the size). The exact phase
    /// looks for an order faster than the best found, or proves there is none (then the gap is 0);
    /// small problems usually finish well within the default. The rank relaxation after it
    /// (`makespan_bound::rank_relaxation`) gets as many nodes of its own (0 skips it too).
    std::optional<std::uint64_t> exact_nodes{};
    /// The widest beam search (0: none). Beams of width 4, 16, 64, 256, 1024 and 4096 run in
    /// turn up to this width (the last one at this width exactly, a power of 4 or not): after
    /// the first tabu searches, each only while its work (about n^2 x width x ranks steps for n
    /// compute actions) stays below 10^8, so larger problems skip the wider ones (or all): 4
    /// ranks x 2 stages x 8 microbatches run widths up to 256, 8 x 2 x 32 only width 4, 32
    /// ranks x 128 microbatches none. Where the answer is still not proven within 1 % of the
    /// optimum after the exact phase, the wider ones run last, while their work stays below
    /// 10^9 and time is left (not where orders that run B are searched after it: a split
    /// backward whose B is cheaper than I + W; and not where even width 4 was too costly).
    std::size_t beam_width = 4096;
    /// Threads the beam searches and the tabu search's steps may use (0:
    /// `std::thread::hardware_concurrency()`). A beam's parents are expanded in parallel and
    /// joined in order, a step's moves timed in parallel and taken in order, so the result is
    /// the same for any count; only the time to reach it changes.
    std::size_t threads = 0;
    /// Seed of the search's random choices: the same seed gives the same result unless the
    /// time limit cuts the search short.
    std::uint64_t seed = 1;
    /// Called about once a second with the search's state (may be empty).
    std::function<void(const tune_progress&)> progress{};
};

/// Why `tune` stopped.
enum class tune_stop : std::uint8_t {
    optimal,          ///< the makespan equals the lower bound: nothing can be better
    converged,        ///< every start point reached a local optimum, restarts spent
    time_limit,       ///< `tune_options::time_limit` reached
    evaluation_limit, ///< `tune_options::max_evaluations` reached
    node_limit,       ///< the exact phase used `tune_options::exact_nodes` without finishing
};

/// Name of a stop reason (`optimal`, `converged`, `time_limit`, `evaluation_limit`,
/// `node_limit`).
[[nodiscard]] constexpr std::string_view to_string_view(tune_stop s) noexcept {
    switch (s) {
    case tune_stop::optimal:
        return "optimal";
    case tune_stop::converged:
        return "converged";
    case tune_stop::time_limit:
        return "time_limit";
    case tune_stop::node_limit:
        return "node_limit";
    default:
        return "evaluation_limit";
    }
}

/// A built-in schedule `tune` tried as a start point.
struct tune_candidate {
    std::string name;       ///< its PyTorch (or authors') name
    bool applies = false;   ///< the schedule supports the problem's shape
    bool fits = false;      ///< ... and its peak memory is within the limit on every rank
    double makespan = 0;    ///< its simulated makespan (when it applies)
    double peak_memory = 0; ///< its largest per-rank peak memory (when it applies)
    std::string why_not;    ///< why it does not apply (the schedule's own message)
    /// False where it was not generated: on problems of 2^20 compute actions or more, once the
    /// time limit is spent (`why_not` then says so).
    bool tried = true;
};

/// The lower bound on the makespan of every valid order of a problem, and its parts
/// (see `tune/lower_bound.hpp` for how each is derived).
struct makespan_bound {
    double value = 0;         ///< the bound: the largest of the parts below
    double one_machine = 0;   ///< the best single-rank relaxation (release dates and tails)
    int one_machine_rank = 0; ///< the rank it comes from
    double memory = 0;        ///< the memory-time bound (0 without a memory limit)
    int memory_rank = 0;      ///< the rank it comes from
    /// The memory ramp: the idle a rank's memory limit forces before its first frees, and the
    /// time its step lasts after its last forward (0 without a limit).
    double memory_ramp = 0;
    int memory_ramp_rank = 0; ///< the rank it comes from
    /// The rank relaxation (`tune` only; 0 when it did not run or finish): one rank's own
    /// sequence, memory room, heads and tails kept exact, the other ranks as delays only,
    /// solved exactly.
    double rank_relaxation = 0;
    int rank_relaxation_rank = 0; ///< the rank it comes from
    /// What the exact phase proved: the optimum when it finished (`exact_complete`), else its
    /// root bound (heads delayed until enough memory is freed) or the highest target one of
    /// its probes proved by finishing empty; 0 when it did not run. With a
    /// split backward whose B is cheaper than I + W, or an `overlap_f_b` below its parts, it
    /// searches the model of `detail::tune::bound_model`: finished, it gives that model's
    /// optimum, a bound only.
    double search = 0;
    bool exact_complete = false; ///< the exact phase finished: `value` is the optimum
    /// The least peak memory any valid order needs, per rank (parameters plus one
    /// microbatch's activations on every stage of the rank).
    std::vector<double> least_memory;
};

/// What `tune` found.
struct tune_result {
    order best;                      ///< compute-only order (valid by `validate`, lowerable)
    double makespan = 0;             ///< its simulated makespan
    std::vector<double> peak_memory; ///< its peak memory per rank, as `simulate` reports it
    makespan_bound bound;            ///< the proven lower bound on any valid order's makespan
    /// (makespan - bound) / bound; 0 means proven optimal; infinite where the bound is 0 and
    /// the makespan is not (the bound proves nothing then)
    double gap = 0;
    std::string start;         ///< the built-in schedule the best order was improved from
                               ///< (or `beam`, `greedy` or `sequential`)
    double start_makespan = 0; ///< that start's makespan
    std::string best_builtin;  ///< the best built-in schedule that fits ("" if none)
    double best_builtin_makespan = 0;
    std::vector<tune_candidate> candidates; ///< every built-in schedule considered
    std::uint64_t evaluations = 0;          ///< orders simulated
    std::uint64_t exact_nodes = 0;          ///< partial orders the exact phase visited
    std::uint64_t beam_nodes = 0;           ///< partial orders the beam searches bounded
    double elapsed = 0;                     ///< seconds searched
    double time_to_best = 0; ///< seconds until the returned makespan was first reached
    tune_stop stopped = tune_stop::converged;
};

} // namespace ppsched
