#pragma once
/// \file plan/plan.hpp
/// `plan(model, ranks, microbatches, options)`: chooses, jointly, the split of a model's
/// layers into `ranks x v` contiguous stages, the number of stages per rank `v`, the placement
/// (loop or V) and the order (through `tune`), minimising the simulated step time within the
/// per-rank memory capacity.
///
/// How it searches:
/// 1. Candidate splits for every `v` in 1..max and placement (loop; also V when v = 2, or
///    v >= 2 with `any_v`): the default split (equal decoder layers per stage), and exact min-max
///    contiguous partitions
///    (`min_max_partition`) under several weightings: compute time (F + B) balanced; balanced
///    with a memory rule (each stage's parameters plus the activations a 1F1B-like schedule
///    keeps in flight on it within its rank's share of the capacity); the first and last stage
///    given 20% less work (they also send or receive alone and, in 1F1B, bound the warm-up and
///    cool-down); and the least-memory split (parameters + activations balanced).
/// 2. Candidates whose least memory (tune's: parameters plus one microbatch's activations on
///    each of a rank's stages) exceeds the capacity are dropped; if none is left, the capacity
///    is an error saying how much is missing.
/// 3. The schedule's feedback: the fitting candidates are tuned in increasing order of their
///    makespan lower bound, each with an equal share of the remaining time, skipping those
///    whose bound cannot beat the best makespan found. Every candidate's built-in schedules
///    are tuned's start points, so the plan is never slower than the default split with its
///    best built-in schedule.
/// 4. Refinement: the best split's neighbours (one layer moved across one boundary) are tuned
///    when their bound can beat it, and kept when the schedule gets faster (a few passes,
///    within the time limit).

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/io/detail/number_text.hpp"
#include "ppsched/plan/model.hpp"
#include "ppsched/plan/partition.hpp"
#include "ppsched/plan/split.hpp"
#include "ppsched/tune/lower_bound.hpp"
#include "ppsched/tune/problem.hpp"
#include "ppsched/tune/tune.hpp"

namespace ppsched {

/// What `plan` may try and how long it may search.
struct plan_options {
    int max_stages_per_rank = 4; ///< try v = 1..this stages per rank
    /// Wall-clock seconds for all of tune's searches together (each candidate gets an equal
    /// share of what is left). Past it the candidates left are not searched, but the default
    /// splits' built-in schedules are still timed (the baseline; linear in the order's size).
    double time_limit = 5;
    /// Per candidate: stop tune after this many simulated orders (0: no limit). With a
    /// generous time limit the result then depends only on the inputs.
    std::uint64_t max_evaluations = 0;
    std::uint64_t seed = 1; ///< tune's seed
    /// Force a fused backward (B only) even when every layer gives I and W.
    bool fused_backward = false;
    /// Also try V placements of 3 or more stages per rank (rank r holds stages r, 2P-1-r,
    /// 2P+r, ...). Off by default: PyTorch's and torchtitan's V schedules (ZBVZeroBubble,
    /// DualPipeV) place exactly 2 stages per rank, so only a runtime of the user's own runs
    /// such a plan.
    bool any_v = false;
};

/// One split `plan` considered.
struct plan_candidate {
    std::vector<int> stage_layers; ///< layers per stage, in model order
    int stages_per_rank = 1;
    stage_placement placement = stage_placement::loop;
    std::string rule;         ///< how it was made: `default`, `balanced`, `memory`, ...
    double least_memory = 0;  ///< the largest per-rank least memory
    bool fits = false;        ///< least memory within the capacity
    double lower_bound = 0;   ///< tune's makespan bound (when it fits)
    bool searched = false;    ///< tune ran on it (else pruned by its bound)
    double makespan = 0;      ///< tune's makespan (when searched)
    std::string best_builtin; ///< its best built-in schedule that fits (when searched)
    double best_builtin_makespan = 0;
};

/// What `plan` chose, and the default it is compared against.
struct plan_result {
    std::vector<int> stage_layers; ///< layers per stage, in model order (ranks x v stages)
    int stages_per_rank = 1;
    stage_placement placement = stage_placement::loop;
    std::string rule;     ///< the rule that made the chosen split
    tune_problem problem; ///< the chosen split's scheduling problem
    tune_result schedule; ///< tune's answer: the order, its makespan, peak memory, bound
    /// The default split with its best built-in schedule (over every v and placement tried);
    /// `default_schedule` is empty when no default split has a built-in that fits.
    std::vector<int> default_stage_layers;
    int default_stages_per_rank = 1;
    stage_placement default_placement = stage_placement::loop;
    std::string default_schedule;
    double default_makespan = 0;
    std::vector<plan_candidate> candidates; ///< every split considered
    double elapsed = 0;                     ///< seconds
};

namespace detail::plan {

[[nodiscard]] inline bool has_empty_stage(const std::vector<int>& stage_layers) {
    return std::find(stage_layers.begin(), stage_layers.end(), 0) != stage_layers.end();
}

inline void add_candidate(std::vector<plan_candidate>& out, std::vector<int> sizes, int v,
                          stage_placement placement, std::string rule) {
    for (const plan_candidate& c : out)
        if (c.stages_per_rank == v && c.placement == placement && c.stage_layers == sizes) {
            return; // the same split from another rule
        }
    plan_candidate c;
    c.stage_layers = std::move(sizes);
    c.stages_per_rank = v;
    c.placement = placement;
    c.rule = std::move(rule);
    out.push_back(std::move(c));
}

/// A split of the layers into `stages` stages of at least one layer whose every rank needs at
/// most `cap` (`prefix[i]`: the need of the layers before i), by a depth-first search over the
/// stage sizes, left to right, pruned where a rank passes the cap or the room left on the ranks
/// cannot hold the layers left; none when it finds none within `budget` nodes (exponential in the
/// worst case, hence the budget; a node costs O(log layers), its depth is at most `stages`).
[[nodiscard]] inline std::optional<std::vector<int>> split_within(const std::vector<double>& prefix,
                                                                  std::size_t stages,
                                                                  const config& cfg, double cap,
                                                                  std::size_t budget) {
    const std::size_t n = prefix.size() - 1, ranks = static_cast<std::size_t>(cfg.ranks);
    std::vector<double> used(ranks, 0);
    std::vector<int> sizes(stages, 0);
    std::size_t nodes = 0;
    auto rank_of = [&](std::size_t s) {
        return static_cast<std::size_t>(cfg.stage_to_rank(static_cast<int>(s)));
    };
    // Stage s starts at layer `at`.
    std::function<bool(std::size_t, std::size_t)> place = [&](std::size_t s, std::size_t at) {
        if (++nodes > budget) return false;
        const std::size_t r = rank_of(s);
        if (s + 1 == stages) {
            const double x = prefix[n] - prefix[at];
            if (used[r] + x > cap) return false;
            sizes[s] = static_cast<int>(n - at);
            return true;
        }
        // The ranks hold exactly the layers before `at`: the room left is ranks x cap less them.
        if (static_cast<double>(ranks) * cap - prefix[at] < prefix[n] - prefix[at]) return false;
        // Larger stages first (they leave fewer layers for the stages after), from the largest
        // within the rank's room.
        const std::size_t last = n - (stages - s - 1);
        const auto fits_end = std::upper_bound(
            prefix.begin() + static_cast<std::ptrdiff_t>(at),
            prefix.begin() + static_cast<std::ptrdiff_t>(last) + 1, prefix[at] + (cap - used[r]));
        for (auto end = static_cast<std::size_t>(fits_end - prefix.begin()) - 1; end > at; --end) {
            const double x = prefix[end] - prefix[at];
            if (used[r] + x > cap) continue; // rounding at the bisection's edge
            used[r] += x;
            sizes[s] = static_cast<int>(end - at);
            const bool ok = place(s + 1, end);
            used[r] -= x;
            if (ok) return true;
            if (nodes > budget) return false;
        }
        return false;
    };
    if (stages == 0 || n < stages || !place(0, 0)) return std::nullopt;
    return sizes;
}

/// A split near `sizes` (each stage keeps a layer) whose busiest rank needs little memory
/// (`memory[i]`: layer i's parameters plus one microbatch's activations), found by moving up to
/// 8 layers across one boundary at a time while the largest rank need falls (ties: the sum of
/// squares of the rank needs): a local search, not an exact minimum. With one stage per rank the
/// `least memory` split is exact; with more, a rank's need is a sum over stages far apart in the
/// model, which no contiguous min-max minimises (a model whose only fitting splits were of that
/// kind was refused). Then a bisection on the busiest rank's need (16 probes of `split_within`,
/// 20000 nodes each). The moves: at most 8 x stages, each O(8 stages + ranks) to choose.
[[nodiscard]] inline std::vector<int> least_rank_memory_split(const std::vector<double>& memory,
                                                              std::vector<int> sizes,
                                                              const config& cfg) {
    const std::size_t stages = sizes.size(), ranks = static_cast<std::size_t>(cfg.ranks);
    constexpr std::size_t max_shift = 8; // layers moved at once: single moves stall early
    std::vector<double> rank(ranks, 0);
    std::vector<std::size_t> start(stages + 1, 0); // each stage's first layer
    auto rank_of = [&](std::size_t s) {
        return static_cast<std::size_t>(cfg.stage_to_rank(static_cast<int>(s)));
    };
    for (std::size_t s = 0; s < stages; ++s) {
        start[s + 1] = start[s] + static_cast<std::size_t>(sizes[s]);
        for (std::size_t i = start[s]; i < start[s + 1]; ++i) rank[rank_of(s)] += memory[i];
    }
    for (std::size_t move = 0; move < 8 * stages; ++move) {
        // The three largest needs, so a move's new largest is O(1).
        std::array<std::size_t, 3> top{ranks, ranks, ranks};
        double squares = 0;
        for (std::size_t r = 0; r < ranks; ++r) {
            squares += rank[r] * rank[r];
            for (std::size_t k = 0; k < 3; ++k)
                if (top[k] == ranks || rank[r] > rank[top[k]]) {
                    for (std::size_t l = 2; l > k; --l) top[l] = top[l - 1];
                    top[k] = r;
                    break;
                }
        }
        std::pair<double, double> best{rank[top[0]], squares};
        std::size_t from = stages, to = stages, count = 0;
        for (std::size_t b = 0; b + 1 < stages; ++b)
            for (const bool right : {true, false}) {
                // The last k layers of stage b into b + 1, or the first k of b + 1 into b.
                const std::size_t src = right ? b : b + 1, dst = right ? b + 1 : b;
                const std::size_t rs = rank_of(src), rd = rank_of(dst);
                if (rs == rd) continue;
                double x = 0;
                for (std::size_t k = 1; k <= max_shift && k < static_cast<std::size_t>(sizes[src]);
                     ++k) {
                    x += memory[right ? start[b + 1] - k : start[b + 1] + k - 1];
                    const double ns = rank[rs] - x, nd = rank[rd] + x;
                    double most = std::max(ns, nd);
                    for (std::size_t t : top)
                        if (t != ranks && t != rs && t != rd) {
                            most = std::max(most, rank[t]);
                            break;
                        }
                    const std::pair<double, double> key{most, squares - rank[rs] * rank[rs] -
                                                                  rank[rd] * rank[rd] + ns * ns +
                                                                  nd * nd};
                    if (key < best) {
                        best = key;
                        from = src;
                        to = dst;
                        count = k;
                    }
                }
            }
        if (from == stages) break;
        const std::size_t b = std::min(from, to);
        double x = 0;
        for (std::size_t k = 1; k <= count; ++k)
            x += memory[from < to ? start[b + 1] - k : start[b + 1] + k - 1];
        start[b + 1] = from < to ? start[b + 1] - count : start[b + 1] + count;
        sizes[from] -= static_cast<int>(count);
        sizes[to] += static_cast<int>(count);
        rank[rank_of(from)] -= x;
        rank[rank_of(to)] += x;
    }
    // Then a bisection on the busiest rank's need, each probe a bounded exact search: moves
    // across one boundary stall where two ranks' stages must change together.
    std::vector<double> prefix(memory.size() + 1, 0);
    for (std::size_t i = 0; i < memory.size(); ++i) prefix[i + 1] = prefix[i] + memory[i];
    double hi = *std::max_element(rank.begin(), rank.end());
    double lo = std::max(prefix.back() / static_cast<double>(ranks),
                         *std::max_element(memory.begin(), memory.end()));
    for (int probe = 0; probe < 16 && hi - lo > 1e-9 * hi; ++probe) {
        const double cap = (lo + hi) / 2;
        if (auto found = split_within(prefix, stages, cfg, cap, 20000)) {
            sizes = std::move(*found);
            hi = cap;
        } else {
            lo = cap; // (or the budget ran out: then only the search gives up there)
        }
    }
    return sizes;
}

// A number for messages: up to 6 significant digits (`4`, `1.25`).
inline std::string short_number(double v) { return ppsched::detail::text::general_number(v); }

} // namespace detail::plan

/// Plans `model` on `ranks` pipeline ranks with `microbatches` microbatches (see the file
/// comment for how). Throws `config_error` for counts out of range, a model without layers,
/// orders of more than 10^6 actions (3 x ranks x max stages per rank x microbatches: every
/// candidate's built-in schedules are timed whole), models whose partitions would take more
/// than 2 x 10^9 steps (layers^2 x ranks x max stages per rank), or a memory capacity no
/// candidate split fits (the message says how much memory is missing). Complexity: O(v_max^2 *
/// ranks * layers^2) for the partitions, plus tune's searches within `options.time_limit`.
[[nodiscard]] inline plan_result plan(const model_description& model, int ranks, int microbatches,
                                      const plan_options& options = {}) {
    using clock = std::chrono::steady_clock;
    const auto started = clock::now();
    PPSCHED_EXPECTS(ranks >= 1, "ppsched::plan: ranks must be >= 1 (got ", ranks, ")");
    PPSCHED_EXPECTS(microbatches >= 1, "ppsched::plan: microbatches must be >= 1 (got ",
                    microbatches, ")");
    PPSCHED_EXPECTS(options.max_stages_per_rank >= 1,
                    "ppsched::plan: max_stages_per_rank must be >= 1 (got ",
                    options.max_stages_per_rank, ")");
    PPSCHED_EXPECTS(!model.layers.empty(), "ppsched::plan: the model has no layers");
    const int n = static_cast<int>(model.layers.size());
    // What plan can do within a time limit: every candidate's orders are generated and
    // simulated whole (tune's start points), and each partition costs up to stages x layers^2.
    const double actions = 3.0 * ranks * options.max_stages_per_rank * microbatches;
    PPSCHED_EXPECTS(actions <= 1e6, "ppsched::plan: ", ranks, " ranks x up to ",
                    options.max_stages_per_rank, " stages per rank x ", microbatches,
                    " microbatches make orders of up to ", static_cast<long long>(actions),
                    " actions, more than the 1000000 plan times for every candidate split; plan "
                    "with fewer microbatches or stages per rank");
    const double splitting = static_cast<double>(n) * n * ranks * options.max_stages_per_rank;
    PPSCHED_EXPECTS(splitting <= 2e9, "ppsched::plan: splitting ", n, " layers into up to ",
                    ranks * options.max_stages_per_rank,
                    " stages takes about layers^2 x stages = ", static_cast<long long>(splitting),
                    " steps, more than the 2000000000 plan allows: merge layers into fewer, "
                    "larger ones, or allow fewer stages per rank");
    const double capacity = model.memory_capacity;

    std::vector<double> compute, memory;
    for (const model_layer& l : model.layers) {
        compute.push_back(l.forward + l.full_backward);
        memory.push_back(l.parameters + l.activation);
    }

    // 1. Candidate splits.
    std::vector<plan_candidate> cands;
    for (int v = 1; v <= options.max_stages_per_rank; ++v) {
        for (stage_placement placement : {stage_placement::loop, stage_placement::v}) {
            if (placement == stage_placement::v && (v < 2 || (v > 2 && !options.any_v))) continue;
            const int stages = ranks * v;
            const config cfg{.ranks = ranks,
                             .stages_per_rank = v,
                             .microbatches = microbatches,
                             .placement = placement};
            detail::plan::add_candidate(cands, default_split(model, stages), v, placement,
                                        "default");
            if (n < stages) continue;
            // With several stages per rank, a split whose busiest rank does not fit is also
            // added rebalanced by the ranks' memory, as `rebalanced` (only then: more
            // candidates share the time).
            auto add_split = [&](std::vector<int> sizes, const char* rule,
                                 const char* rebalanced = nullptr) {
                if (rebalanced != nullptr && v > 1) {
                    const std::vector<double> need = least_rank_memory(model, sizes, cfg);
                    if (*std::max_element(need.begin(), need.end()) > capacity)
                        detail::plan::add_candidate(
                            cands, detail::plan::least_rank_memory_split(memory, sizes, cfg), v,
                            placement, rebalanced);
                }
                detail::plan::add_candidate(cands, std::move(sizes), v, placement, rule);
            };
            if (auto s = min_max_partition(compute, stages))
                add_split(std::move(*s), "balanced", "balanced, least rank memory");
            // Memory rule: parameters plus the activations of the microbatches a 1F1B-like
            // schedule keeps in flight on the stage (ranks - rank, at most M) within the
            // rank's share of the capacity.
            std::vector<double> prefix_act(static_cast<std::size_t>(n) + 1, 0),
                prefix_par(static_cast<std::size_t>(n) + 1, 0);
            for (std::size_t i = 0; i < model.layers.size(); ++i) {
                prefix_act[i + 1] = prefix_act[i] + model.layers[i].activation;
                prefix_par[i + 1] = prefix_par[i] + model.layers[i].parameters;
            }
            const partition_rule fits_in_flight = [&](int k, int i, int j) {
                const int in_flight = std::min(microbatches, ranks - cfg.stage_to_rank(k));
                const auto ui = static_cast<std::size_t>(i), uj = static_cast<std::size_t>(j);
                return prefix_par[uj] - prefix_par[ui] +
                           in_flight * (prefix_act[uj] - prefix_act[ui]) <=
                       capacity / v;
            };
            if (auto s = min_max_partition(compute, stages, {}, fits_in_flight))
                detail::plan::add_candidate(cands, std::move(*s), v, placement, "memory");
            std::vector<double> ends(static_cast<std::size_t>(stages), 1.0);
            ends.front() = ends.back() = 1.25;
            if (auto s = min_max_partition(compute, stages, ends))
                detail::plan::add_candidate(cands, std::move(*s), v, placement, "light ends");
            if (auto s = min_max_partition(memory, stages))
                add_split(std::move(*s), "least memory", "least rank memory");
        }
    }

    // 2. Memory: drop what cannot fit; bound the rest.
    std::vector<std::size_t> fitting;
    double least_needed = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < cands.size(); ++i) {
        plan_candidate& c = cands[i];
        const config cfg{.ranks = ranks,
                         .stages_per_rank = c.stages_per_rank,
                         .microbatches = microbatches,
                         .placement = c.placement};
        const std::vector<double> need = least_rank_memory(model, c.stage_layers, cfg);
        c.least_memory = *std::max_element(need.begin(), need.end());
        least_needed = std::min(least_needed, c.least_memory);
        c.fits = c.least_memory <= capacity;
        if (!c.fits) continue;
        tune_problem p = split_problem(model, c.stage_layers, ranks, microbatches,
                                       c.stages_per_rank, c.placement);
        if (options.fused_backward) p.backward = backward_mode::fused;
        c.lower_bound = lower_bound(p).value;
        fitting.push_back(i);
    }
    if (fitting.empty())
        throw config_error(
            "ppsched::plan: none of the " + std::to_string(cands.size()) +
            " splits plan tried fits the memory capacity of " +
            detail::plan::short_number(capacity) + " GB per rank: the least any of them needs is " +
            detail::plan::short_number(least_needed) +
            " GB (parameters plus one microbatch's activations), " +
            detail::plan::short_number(least_needed - capacity) +
            " GB missing. With one stage per rank that is the least of every split; with more, "
            "a split plan does not try may still fit (check one with 'ppsched tune --model "
            "--layout --memory-limit')");

    // 3. Tune the candidates, most promising first.
    std::stable_sort(fitting.begin(), fitting.end(), [&](std::size_t a, std::size_t b) {
        return cands[a].lower_bound < cands[b].lower_bound;
    });
    plan_result result;
    bool have = false;
    double best_default = std::numeric_limits<double>::infinity();
    for (std::size_t k = 0; k < fitting.size(); ++k) {
        plan_candidate& c = cands[fitting[k]];
        tune_problem p = split_problem(model, c.stage_layers, ranks, microbatches,
                                       c.stages_per_rank, c.placement);
        if (options.fused_backward) p.backward = backward_mode::fused;
        const bool is_default = c.rule == "default";
        const double spent = std::chrono::duration<double>(clock::now() - started).count();
        // Past the time limit only the default splits' built-in schedules are still timed
        // (the baseline); the other candidates are not searched.
        const bool late = have && spent >= options.time_limit;
        // A split without an empty stage replaces, at an equal makespan, one with an empty
        // stage (the default split leaves one where there are fewer decoders than stages).
        const bool fills = have && detail::plan::has_empty_stage(result.stage_layers) &&
                           !detail::plan::has_empty_stage(c.stage_layers);
        const double best = have ? result.schedule.makespan : 0;
        const bool beaten = have && (fills ? c.lower_bound > best * (1 + 1e-12)
                                           : c.lower_bound >= best * (1 - 1e-12));
        const bool pruned = late || beaten;
        if (pruned && !is_default) continue;
        tune_options to;
        to.time_limit =
            std::max(0.0, options.time_limit - spent) / static_cast<double>(fitting.size() - k);
        to.max_evaluations = options.max_evaluations;
        to.seed = options.seed;
        // A default split that cannot win still gives the baseline: its built-ins only.
        if (pruned) to.max_evaluations = 1;
        tune_result r = tune(p, to);
        c.searched = !pruned;
        c.best_builtin = r.best_builtin;
        c.best_builtin_makespan = r.best_builtin_makespan;
        if (is_default && !r.best_builtin.empty() && r.best_builtin_makespan < best_default) {
            best_default = r.best_builtin_makespan;
            result.default_stage_layers = c.stage_layers;
            result.default_stages_per_rank = c.stages_per_rank;
            result.default_placement = c.placement;
            result.default_schedule = r.best_builtin;
            result.default_makespan = r.best_builtin_makespan;
        }
        if (beaten) continue; // its bound cannot win (a late default split's built-in can)
        c.makespan = r.makespan;
        if (!have || r.makespan < best || (fills && r.makespan <= best * (1 + 1e-12))) {
            have = true;
            result.stage_layers = c.stage_layers;
            result.stages_per_rank = c.stages_per_rank;
            result.placement = c.placement;
            result.rule = c.rule;
            result.problem = std::move(p);
            result.schedule = std::move(r);
        }
    }
    // 4. Refinement: move one layer across one boundary of the best split while that makes
    // the tuned schedule faster; a neighbour is tuned only when its bound can beat the best.
    // At most 4 passes of 2 (stages - 1) neighbours, within the time limit.
    auto left = [&] {
        return options.time_limit - std::chrono::duration<double>(clock::now() - started).count();
    };
    for (int pass = 0; pass < 4 && have && left() > 0; ++pass) {
        bool improved = false;
        const int stages = static_cast<int>(result.stage_layers.size());
        for (int b = 0; b + 1 < stages && left() > 0; ++b) {
            for (int d : {-1, 1}) {
                std::vector<int> sizes = result.stage_layers;
                sizes[static_cast<std::size_t>(b)] += d;
                sizes[static_cast<std::size_t>(b + 1)] -= d;
                if (sizes[static_cast<std::size_t>(b)] < 1 ||
                    sizes[static_cast<std::size_t>(b + 1)] < 1)
                    continue;
                const config cfg{.ranks = ranks,
                                 .stages_per_rank = result.stages_per_rank,
                                 .microbatches = microbatches,
                                 .placement = result.placement};
                const std::vector<double> need = least_rank_memory(model, sizes, cfg);
                if (*std::max_element(need.begin(), need.end()) > capacity) continue;
                tune_problem p = split_problem(model, sizes, ranks, microbatches,
                                               result.stages_per_rank, result.placement);
                if (options.fused_backward) p.backward = backward_mode::fused;
                const double bound = lower_bound(p).value;
                if (bound >= result.schedule.makespan * (1 - 1e-12)) continue;
                tune_options to;
                // (What is left may have run out since the loop's check: tune refuses a
                // negative limit.)
                to.time_limit = std::max(0.0, std::min(left(), options.time_limit / 10));
                to.max_evaluations = options.max_evaluations;
                to.seed = options.seed;
                tune_result r = tune(p, to);
                plan_candidate c;
                c.stage_layers = sizes;
                c.stages_per_rank = result.stages_per_rank;
                c.placement = result.placement;
                c.rule = "refined";
                c.least_memory = *std::max_element(need.begin(), need.end());
                c.fits = true;
                c.lower_bound = bound;
                c.searched = true;
                c.makespan = r.makespan;
                c.best_builtin = r.best_builtin;
                c.best_builtin_makespan = r.best_builtin_makespan;
                cands.push_back(std::move(c));
                if (r.makespan < result.schedule.makespan * (1 - 1e-9)) {
                    result.stage_layers = std::move(sizes);
                    if (result.rule.find("refined") == std::string::npos)
                        result.rule += ", refined";
                    result.problem = std::move(p);
                    result.schedule = std::move(r);
                    improved = true;
                    break; // the boundary's other direction starts from the new split
                }
            }
        }
        if (!improved) break;
    }

    result.candidates = std::move(cands);
    result.elapsed = std::chrono::duration<double>(clock::now() - started).count();
    return result;
}

} // namespace ppsched
