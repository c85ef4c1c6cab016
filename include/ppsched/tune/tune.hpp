#pragma once
/// \file tune/tune.hpp
/// `tune(problem, options)`: the auto-scheduler. Finds a compute-only order for a problem with
/// uneven per-stage costs and a per-rank memory limit, as fast as it can within a budget, and
/// proves how far from optimal it may be.
///
/// How it searches:
/// 1. Start points: every built-in schedule of the problem's placement that applies and fits
///    the memory limit (the cost-aware ones planned with the problem's costs), so the result is
///    never worse than the best of them; a family of greedy list schedulers (backward or
///    forward first, W as filler or eager, caps on microbatches in flight), which fit any
///    memory limit the problem allows; and one microbatch at a time, which fits the least.
/// 2. Improvement: from the best start points in turn, a tabu search that moves actions of
///    the critical path's blocks to their ends (tune/detail/local_search.hpp); then beam
///    searches over partial orders ranked by the exact phase's bound (`exact_search::beam`,
///    up to `tune_options::beam_width`; their wide depths on `tune_options::threads` threads,
///    with the same result for any count), each order they find polished by the tabu search;
///    then restarts from the best order found, randomly perturbed.
/// 3. Exact phase (tune/detail/exact_search.hpp): a branch and bound over every valid order
///    looks for one faster than the best found, or proves that there is none, within
///    `tune_options::exact_nodes` partial orders.
/// 4. Rank relaxation (tune/detail/rank_relaxation.hpp), where a gap is left: each rank alone,
///    its sequence and memory exact and the other ranks as delays, solved exactly within a
///    node budget as large as the exact phase's; it raises the bound
///    (`makespan_bound::rank_relaxation`).
///    Then, where the answer is still not proven within 1 % of the optimum, the beams too
///    costly to run early (`plan_beams`), with the time left; the first of them, pruned at
///    the best makespan from before step 3, runs beside steps 3-4 on two threads or more
///    (`background_beam`; cancelled where they prove the answer within 1 %). Where the exact
///    phase's budget is short for the problem (`late_beams_first`: about 700 compute actions
///    or more), they run instead before step 3, on every thread, where the answer is not
///    within 1 % of the bound.
/// 5. The answer is simulated and validated again.
/// 6. With the split backward, where a stage's B is cheaper than its I + W, the same search on
///    the fused problem (orders of F and B) and on three problems where some stages run B (see
///    `b_stage_choices`), with what is left of the budget; the bounds of 3-4 are proven on
///    `bound_model`, which covers every mix of B and I + W.
/// 7. It stops when the makespan reaches the lower bound (tune/lower_bound.hpp: the order is
///    then optimal), when the exact phase finishes or runs out of nodes, or at the time or
///    evaluation limit.
///
/// Every timing of the search is exact (the same arithmetic as `simulate`), and the returned
/// order is simulated and validated again before it is returned.

#include <algorithm>
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "ppsched/algorithms/simulate.hpp"
#include "ppsched/algorithms/validate.hpp"
#include "ppsched/error.hpp"
#include "ppsched/registry.hpp"
#include "ppsched/tune/detail/background_beam.hpp"
#include "ppsched/tune/detail/evaluator.hpp"
#include "ppsched/tune/detail/exact_search.hpp"
#include "ppsched/tune/detail/list_scheduler.hpp"
#include "ppsched/tune/detail/local_search.hpp"
#include "ppsched/tune/detail/model.hpp"
#include "ppsched/tune/detail/rank_relaxation.hpp"
#include "ppsched/tune/lower_bound.hpp"
#include "ppsched/tune/problem.hpp"

namespace ppsched {
namespace detail::tune {

/// How a start point from a built-in schedule of B is named where the backward is split (its
/// B taken apart into I then W); the mixed search drops it again from its start's name.
inline constexpr std::string_view split_b_suffix = " (each B run as I then W)";

/// A built-in order as the search's sequences: idle slots dropped, an `OVERLAP_F_B` as its two
/// parts, `B` as `I` then `W` when the backward is split (never slower, same memory), `I` as
/// `B` and `W` dropped when it is fused. False when it holds actions the model has no node for.
[[nodiscard]] inline bool to_sequences(const model& m, const order& o, sequences& out) {
    out.assign(static_cast<std::size_t>(m.ranks), {});
    if (o.num_ranks() != static_cast<std::size_t>(m.ranks)) return false;
    for (std::size_t r = 0; r < o.num_ranks(); ++r) {
        for (const slot& sl : o[r]) {
            if (!sl) continue;
            std::array<action, 2> parts{};
            const int n = sl->parts(parts);
            for (int i = 0; i < n; ++i) {
                const action a = parts[static_cast<std::size_t>(i)];
                if (a.stage() >= m.stages || !a.has_microbatch() ||
                    a.microbatch() >= m.microbatches)
                    return false;
                auto& row = out[r];
                switch (a.kind()) {
                case action_kind::forward:
                    row.push_back(m.node(a.stage(), a.microbatch(), kind_forward));
                    break;
                case action_kind::full_backward:
                    row.push_back(m.node(a.stage(), a.microbatch(), kind_backward));
                    if (m.split) row.push_back(m.node(a.stage(), a.microbatch(), kind_weight));
                    break;
                case action_kind::backward_input:
                    row.push_back(m.node(a.stage(), a.microbatch(), kind_backward));
                    break;
                case action_kind::backward_weight:
                    if (m.split) row.push_back(m.node(a.stage(), a.microbatch(), kind_weight));
                    break;
                default:
                    return false;
                }
            }
        }
        if (out[r].size() != m.rank_actions(static_cast<int>(r))) return false;
    }
    return true;
}

/// Which stages run B in each search of orders that run B (`tune` step 6), for a split
/// problem where some stage's B is cheaper than its I + W: first none of them (an empty choice:
/// the fused problem, B on every stage), then every such stage, those of the first half of the
/// pipeline, those of the second half and the first stage alone (each once, and only when it
/// differs).
[[nodiscard]] inline std::vector<std::vector<char>> b_stage_choices(const tune_problem& p) {
    const int stages = p.cfg().num_stages();
    std::vector<int> cheap;
    for (int s = 0; s < stages; ++s)
        if (cheaper_b(p.costs.at(s))) cheap.push_back(s);
    std::vector<std::vector<char>> out{{}};
    auto add = [&](auto keep) {
        std::vector<char> as_b(static_cast<std::size_t>(stages), 0);
        bool any = false;
        for (int s : cheap) {
            if (!keep(s)) continue;
            as_b[static_cast<std::size_t>(s)] = 1;
            any = true;
        }
        if (any && std::find(out.begin(), out.end(), as_b) == out.end()) out.push_back(as_b);
    };
    add([](int) { return true; });
    add([&](int s) { return s < stages / 2; });
    add([&](int s) { return s >= stages / 2; });
    // The first stage alone: its input gradient feeds no other stage, so splitting its
    // backward buys only W's deferral, while B is cheaper.
    add([](int s) { return s == 0; });
    return out;
}

/// The costs of a problem whose stages in `as_b` run B: such a stage's I takes its B and its W
/// nothing (so an I then its W is a B, which frees no later); the other stages' B is their
/// I + W (they run I and W, and no stage counts as a cheaper B).
[[nodiscard]] inline cost_model with_b_stages(const tune_problem& p,
                                              const std::vector<char>& as_b) {
    cost_model c = p.costs;
    c.per_stage.resize(as_b.size());
    for (std::size_t s = 0; s < as_b.size(); ++s) {
        const resolved_stage_costs r = p.costs.at(static_cast<int>(s));
        stage_costs& sc = c.per_stage[s];
        sc.backward_input = as_b[s] ? r.full_backward : r.backward_input;
        sc.backward_weight = as_b[s] ? 0.0 : r.backward_weight;
        sc.full_backward = as_b[s] ? r.full_backward : r.backward_input + r.backward_weight;
    }
    return c;
}

/// An order of the `with_b_stages` problem as an order of the real one: each I of a stage in
/// `as_b` becomes a B and its W goes; a B of another stage (a built-in runs B everywhere)
/// becomes its I then its W, which is what that B costs in the `with_b_stages` problem (on the
/// real one, its B may be dearer than I + W). Nothing when an overlapped action holds a
/// backward of either kind.
[[nodiscard]] inline std::optional<order> run_as_b(const order& o, const std::vector<char>& as_b) {
    order out(o.cfg());
    for (std::size_t r = 0; r < o.num_ranks(); ++r) {
        for (const slot& sl : o[r]) {
            if (!sl) continue;
            std::array<action, 2> parts{};
            const int n = sl->parts(parts);
            bool touches = false;
            for (int i = 0; i < n; ++i) {
                const action a = parts[static_cast<std::size_t>(i)];
                const bool b_stage =
                    a.has_microbatch() && as_b[static_cast<std::size_t>(a.stage())];
                touches = touches ||
                          (b_stage && (a.kind() == action_kind::backward_input ||
                                       a.kind() == action_kind::backward_weight)) ||
                          (!b_stage && a.kind() == action_kind::full_backward);
            }
            if (!touches) {
                out[r].push_back(sl);
                continue;
            }
            if (n != 1) return std::nullopt;
            const action a = *sl;
            if (a.kind() == action_kind::full_backward) {
                out[r].push_back(action::backward_input(a.stage(), a.microbatch()));
                out[r].push_back(action::backward_weight(a.stage(), a.microbatch()));
            } else if (a.kind() == action_kind::backward_input) {
                out[r].push_back(action::full_backward(a.stage(), a.microbatch()));
            }
        }
    }
    return out;
}

/// `tune_result::gap`: 0 where the makespan is the bound (up to rounding), else (makespan -
/// bound) / bound, infinite where the bound is 0 (it proves nothing).
[[nodiscard]] inline double gap_of(double makespan, double bound) {
    if (makespan <= bound * (1 + 1e-9)) return 0;
    return bound > 0 ? (makespan - bound) / bound : std::numeric_limits<double>::infinity();
}

/// The sequences as an order of `cfg`.
[[nodiscard]] inline order to_order(const model& m, const config& cfg, const sequences& seq) {
    order o(cfg);
    for (std::size_t r = 0; r < seq.size(); ++r) {
        o[r].reserve(seq[r].size());
        for (int n : seq[r]) o[r].push_back(m.to_action(n));
    }
    return o;
}

/// A start point of the search.
struct start_point {
    std::string name;
    sequences seq;
    evaluation eval;
};

/// Random swaps of adjacent actions that do not depend on each other: a kick out of a local
/// optimum.
inline void perturb(const model& m, sequences& seq, rng& random, std::size_t swaps) {
    for (std::size_t i = 0; i < swaps; ++i) {
        auto& row = seq[random.below(seq.size())];
        if (row.size() < 2) continue;
        const std::size_t at = random.below(row.size() - 1);
        if (!direct_dependency(m, row[at], row[at + 1])) std::swap(row[at], row[at + 1]);
    }
}

/// The widths of `tune`'s beams, narrowest first, up to `widest`: 4, 16, 64... (each four
/// times the last) and `widest` itself, which ends the list whether or not it is a power of 4.
[[nodiscard]] inline std::vector<std::size_t> beam_widths(std::size_t widest) {
    std::vector<std::size_t> out;
    for (std::size_t w = 4; w < widest; w *= 4) {
        out.push_back(w);
        if (w > widest / 4) break; // 4 w would pass `widest` (or overflow)
    }
    if (widest > 0) out.push_back(widest);
    return out;
}

/// Which of `widths` (`beam_widths`) `tune` runs: `early` in turn after the first tabu
/// searches, each while its work (`beam_work`) stays under 10^8; `late` after the exact phase,
/// the wider ones that follow, while their work stays under 10^9, only where the answer is
/// still not proven within 1 % of the optimum (`within_1pc`) and some width ran early (else
/// even the narrowest costs more than 10^8, and the wider ones more still).
/// (`tune` also stops either list where the bound is reached or a budget is spent.)
struct beam_plan {
    std::size_t early = 0; ///< the first `early` widths
    std::size_t late = 0;  ///< then the next `late` ones
};
[[nodiscard]] inline beam_plan plan_beams(const model& m, std::size_t n,
                                          const std::vector<std::size_t>& widths, bool within_1pc) {
    beam_plan plan;
    while (plan.early < widths.size() && beam_work(m, n, widths[plan.early]) <= 1e8) ++plan.early;
    if (within_1pc || plan.early == 0) return plan;
    while (plan.early + plan.late < widths.size() &&
           beam_work(m, n, widths[plan.early + plan.late]) <= 1e9)
        ++plan.late;
    return plan;
}

/// Whether `tune` runs the late beams of `plan_beams` before the exact phase (on every thread)
/// rather than last: where the exact phase's node budget is under 100 n for n compute actions
/// (the depth of 100 complete orders; with the default budget, from about 700 actions on).
/// There it does not finish and seldom finds a faster order, while the wider beams do: on 60
/// problems of 8 ranks with two stages per rank and 8, 16 and 32 microbatches, the exact phase
/// improved one order, by 0.014 %, and the late beams five, by up to 3.6 %
/// (docs/performance.md).
[[nodiscard]] constexpr bool late_beams_first(std::size_t n, std::uint64_t exact_nodes) {
    return exact_nodes < 100 * static_cast<std::uint64_t>(n);
}

/// The greedy rules tried as start points.
[[nodiscard]] inline std::vector<greedy_rule> greedy_rules(const model& m) {
    std::vector<greedy_rule> rules;
    const int p = m.ranks;
    const auto pu = static_cast<std::size_t>(p);
    const int v = static_cast<int>(m.rank_stages[0].size());
    // Microbatches that can wait on a rank's first stage while one still passes every stage
    // of the rank: more would deadlock when memory is admitted as it is held.
    std::vector<int> memory_cap(pu, m.microbatches);
    for (std::size_t r = 0; r < pu; ++r) {
        const double first = m.stage[static_cast<std::size_t>(m.rank_stages[r].front())].activation;
        double need = 0;
        for (int s : m.rank_stages[r]) need += m.stage[static_cast<std::size_t>(s)].activation;
        const double room = m.fit_limit[r] - m.parameters[r] - need;
        if (first > 0 && room < first * m.microbatches)
            memory_cap[r] = static_cast<int>(std::max(0.0, room / first)) + 1;
    }
    for (int factor : {0, 1, 2, 3, 1 << 20}) {
        for (int flags = 0; flags < 16; ++flags) {
            greedy_rule g;
            g.reserve = (flags & 8) == 0;
            g.backward_first = (flags & 1) != 0 || factor == 1;
            g.eager_weight = (flags & 2) != 0;
            g.deep_first = (flags & 4) != 0;
            if (factor == 1 && (flags & 1) == 0) continue; // the same as with bit 0 set
            if (factor == 0 && g.reserve) continue;        // reserving caps by memory itself
            g.cap.resize(pu);
            for (int r = 0; r < p; ++r) {
                // In flight on rank r in 1F1B: p - r microbatches; a V or interleaved rank
                // holds more stages, so scale by its stage count.
                long long c =
                    factor == 0 ? m.microbatches : static_cast<long long>(factor) * (p - r) * v;
                if (!g.reserve) c = std::min<long long>(c, memory_cap[static_cast<std::size_t>(r)]);
                g.cap[static_cast<std::size_t>(r)] =
                    static_cast<int>(std::clamp<long long>(c, 1, m.microbatches));
            }
            rules.push_back(std::move(g));
        }
    }
    return rules;
}

/// The parameters `tune` generates built-in schedule `e` with for `p`: the problem's costs
/// for a cost-aware schedule, and for a memory-aware one the memory limit less the largest
/// rank's parameters (those schedules plan activations only).
[[nodiscard]] inline schedule_params candidate_params(const schedule_entry& e,
                                                      const tune_problem& p) {
    schedule_params params;
    const config cfg = p.cfg();
    std::vector<double> rank_parameters(static_cast<std::size_t>(std::max(cfg.ranks, 0)), 0.0);
    for (int s = 0; s < cfg.num_stages(); ++s)
        rank_parameters[static_cast<std::size_t>(cfg.stage_to_rank(s))] += p.costs.at(s).parameters;
    double max_parameters = 0;
    for (double x : rank_parameters) max_parameters = std::max(max_parameters, x);
    for (const schedule_param_info& info : e.parameters) {
        if (info.name == "costs") params.costs = p.costs;
        if (info.name == "memory_limit" && p.memory_limit)
            params.memory_limit = *p.memory_limit - max_parameters;
    }
    return params;
}

} // namespace detail::tune

/// The order of built-in schedule `name` as `tune` tried it for `p` (planned with the
/// problem's costs and memory limit when the schedule takes them). Throws `config_error` when
/// the schedule is unknown or does not apply.
[[nodiscard]] inline order tune_candidate_order(const tune_problem& p, std::string_view name) {
    const schedule_entry& e = builtin_schedules().at(name);
    // (A schedule of another placement is not one tune tries: its order would place the
    // stages elsewhere.)
    PPSCHED_EXPECTS(e.placement == p.placement, "ppsched::tune_candidate_order: ", name,
                    " places stages as '", to_string_view(e.placement), "', the problem as '",
                    to_string_view(p.placement), "': tune does not try it");
    return e.generate(p.cfg(), detail::tune::candidate_params(e, p));
}

/// Finds a fast valid order for `problem` within its memory limit, and a lower bound on every
/// valid order's makespan (see the file comment for how). Throws `config_error` for a
/// malformed or impossible problem: counts out of range, the `dual` placement, a per-stage
/// cost array whose length is not the stage count, non-finite costs, or a memory limit below
/// the least any order needs (the message says that least).
/// Complexity: each timing of an order is O(n) in its actions; the search times as many as its
/// budget allows.
[[nodiscard]] inline tune_result tune(const tune_problem& problem,
                                      const tune_options& options = {}) {
    using namespace detail::tune;
    using clock = std::chrono::steady_clock;
    const auto started = clock::now();
    PPSCHED_EXPECTS(options.time_limit >= 0, // (false for NaN)
                    "ppsched::tune: time_limit must be a non-negative number of seconds (got ",
                    options.time_limit, ")");
    const model m = make_model(problem);
    // The bounds (and the exact phase and the rank relaxation, which prove bounds) work on `bm`:
    // `m` itself unless a built-in's B can be cheaper than the split model's I + W, or its
    // OVERLAP_F_B cheaper than its parts.
    bool relaxed_backward = false, relaxed_overlap = false;
    const model bm = bound_model(m, problem, relaxed_backward, relaxed_overlap);
    const config cfg = problem.cfg();
    tune_result result;
    result.bound = bound(bm);
    // What is proven so far: the bound's parts, the exact phase's and the rank relaxation's.
    auto proven_bound = [&] {
        return std::max({result.bound.value, result.bound.search, result.bound.rank_relaxation});
    };
    const double limit = problem.memory_limit.value_or(std::numeric_limits<double>::infinity());
    const double target = result.bound.value * (1 + 1e-9);

    evaluator ev(m);
    budget spend;
    // Where orders of B are searched after this search (step 6), it leaves them half of the
    // time and of the evaluations.
    const double share = relaxed_backward ? 0.5 : 1.0;
    const double seconds = options.time_limit > 0 ? options.time_limit * share : 0;
    spend.deadline = started + std::chrono::duration_cast<clock::duration>(
                                   std::chrono::duration<double>(std::min(seconds, 1e7)));
    spend.max_evaluations = relaxed_backward && options.max_evaluations > 0
                                ? std::max<std::uint64_t>(1, options.max_evaluations / 2)
                                : options.max_evaluations;
    spend.target = target;
    spend.progress = options.progress;
    spend.started = started;
    spend.next_report = started + std::chrono::seconds(1);
    spend.bound = result.bound.value;
    rng random(options.seed);

    // 1. Start points.
    std::vector<start_point> starts;
    auto add_start = [&](std::string name, sequences seq) {
        const evaluation e = ev.run(seq);
        if (e.ok) starts.push_back({std::move(name), std::move(seq), e});
    };
    const schedule_registry& reg = builtin_schedules();
    // The best built-in order as the schedule wrote it: returned as it is when the search finds
    // nothing faster (an OVERLAP_F_B or B taken apart times the same up to rounding).
    order best_builtin_order;
    const bool many_actions = problem.compute_actions() >= static_cast<double>(1 << 20);
    for (const schedule_entry& entry : reg.entries()) {
        if (entry.placement != problem.placement) continue;
        (void)spend.spent(ev); // the progress line, while big orders are timed
        tune_candidate cand;
        cand.name = entry.pytorch_name;
        // Each is linear in the actions, but on millions of them (2048 x 2048) the built-ins
        // alone took 12 s: on problems of 2^20 compute actions or more, those left when the
        // time limit is spent are not tried (the answer then need not beat them; with the
        // time they need it does). Smaller problems time them all, whatever the limit.
        if (many_actions && clock::now() >= spend.deadline) {
            cand.tried = false;
            cand.why_not = "not tried: the time limit was spent before it";
            result.candidates.push_back(std::move(cand));
            continue;
        }
        const schedule_params params = candidate_params(entry, problem);
        order o;
        // PyTorch's step tables keep idle steps, quadratic in the ranks: 8192 ranks with one
        // microbatch would take gigabytes for an order of 10^5 actions.
        constexpr long long most_slots = 50'000'000;
        if (const double slots = estimated_slots(cfg); slots > static_cast<double>(most_slots)) {
            cand.why_not = "skipped: its order may take up to " +
                           std::to_string(static_cast<long long>(std::min(slots, 9e18))) +
                           " slots (PyTorch's step tables keep idle steps), more than the " +
                           std::to_string(most_slots) + " tune generates";
            result.candidates.push_back(std::move(cand));
            continue;
        }
        try {
            o = entry.generate(cfg, params);
        } catch (const config_error& e) {
            cand.why_not = e.what();
            result.candidates.push_back(std::move(cand));
            continue;
        }
        const simulation sim = simulate(o, problem.costs, simulate_options{.timeline = false});
        if (!sim) {
            cand.why_not = describe_problem(sim);
            result.candidates.push_back(std::move(cand));
            continue;
        }
        bool splits = false, fuses = false;
        for (std::size_t r = 0; r < o.num_ranks(); ++r)
            for (const slot& sl : o[r]) {
                if (!sl) continue;
                const action_kind k = sl->is_overlap() ? sl->backward_part().kind() : sl->kind();
                splits =
                    splits || k == action_kind::backward_input || k == action_kind::backward_weight;
                fuses = fuses || k == action_kind::full_backward;
            }
        sequences seq;
        const bool usable = to_sequences(m, o, seq);
        if (splits && !m.split) {
            cand.why_not = "it splits the backward into I and W, which a fused backward excludes";
        } else {
            cand.applies = true;
            cand.makespan = sim.makespan;
            for (const rank_summary& rs : sim.ranks)
                cand.peak_memory = std::max(cand.peak_memory, rs.peak_memory);
            cand.fits = fits_memory_limit(cand.peak_memory, limit);
            if (!cand.fits) cand.why_not = "its peak memory exceeds the limit";
            if (cand.fits &&
                (result.best_builtin.empty() || cand.makespan < result.best_builtin_makespan)) {
                result.best_builtin = cand.name;
                result.best_builtin_makespan = cand.makespan;
                // Its actions without PyTorch's idle steps (which take no time).
                best_builtin_order = order(cfg);
                for (std::size_t r = 0; r < o.num_ranks(); ++r)
                    for (const slot& sl : o[r])
                        if (sl) best_builtin_order[r].push_back(sl);
            }
        }
        // (Fused, a built-in that splits the backward is no answer itself, but its order with
        // each I run as B, and no W, is a start point; split, one that runs B starts from its
        // order with each B as I then W, which may be faster: named so.)
        if (usable)
            add_start(splits && !m.split ? cand.name + " (each I run as B)"
                      : fuses && m.split ? cand.name + std::string(split_b_suffix)
                                         : cand.name,
                      std::move(seq));
        result.candidates.push_back(std::move(cand));
    }
    add_start("sequential", sequential_order(m));
    // No greedy order can beat a start that meets the bound (often a built-in schedule on
    // uniform costs): then the greedy runs, O(n log n) each and 64 of them, are skipped.
    if (std::none_of(starts.begin(), starts.end(),
                     [&](const start_point& sp) { return sp.eval.makespan <= target; })) {
        sequences seq;
        for (const greedy_rule& g : greedy_rules(m)) {
            // On millions of actions a greedy order takes about a second: past the time limit,
            // a built-in start is enough (the sequential one is not).
            if (many_actions && starts.size() > 1 && clock::now() >= spend.deadline) break;
            if (greedy_order(m, g, seq)) add_start("greedy", seq);
            if (spend.spent(ev)) break;
        }
    }
    std::stable_sort(starts.begin(), starts.end(), [](const start_point& a, const start_point& b) {
        return better(a.eval, b.eval);
    });
    // The sequential order needs exactly the least memory, so this happens only when the limit
    // equals that least and the frees' rounding leaves a residue above it. A B frees the whole
    // activation at once: orders of B may still fit (and the bound covers them).
    if (starts.empty() && m.split) {
        tune_problem fused = problem;
        fused.backward = backward_mode::fused;
        tune_result fr = tune(fused, options);
        fr.bound = result.bound;
        fr.candidates = std::move(result.candidates);
        fr.best_builtin = result.best_builtin;
        fr.best_builtin_makespan = result.best_builtin_makespan;
        fr.start += " (fused)";
        fr.gap = gap_of(fr.makespan, fr.bound.value);
        if (fr.gap > 0 && fr.stopped == tune_stop::optimal) fr.stopped = tune_stop::converged;
        if (fr.gap == 0) fr.stopped = tune_stop::optimal;
        return fr;
    }
    PPSCHED_EXPECTS(!starts.empty(), "ppsched::tune: no order fits the memory limit ",
                    problem.memory_limit.value_or(0),
                    ": it is at (or within rounding of) the least any order needs; summed in "
                    "floating point, freeing parts of activations leaves a residue above it. "
                    "Raise the limit slightly");

    // 2. Improvement from the best distinct start points, then restarts from the best. The
    // tabu searches time a step's moves on the threads (the same search for any count).
    const std::size_t threads = options.threads > 0
                                    ? options.threads
                                    : std::max<std::size_t>(1, std::thread::hardware_concurrency());
    move_timer timer(m, threads);
    sequences best_seq = starts.front().seq;
    evaluation best = starts.front().eval;
    std::string best_start = starts.front().name;
    spend.improved(best.makespan);
    double best_start_makespan = best.makespan;
    const int patience = 60;
    std::size_t tried = 0;
    double last_seen = -1;
    for (start_point& sp : starts) {
        if (tried >= 4 || best.makespan <= target || spend.spent(ev)) break;
        if (sp.eval.makespan == last_seen) continue; // same quality: likely the same basin
        last_seen = sp.eval.makespan;
        ++tried;
        const double from = sp.eval.makespan;
        const evaluation e =
            tabu_search(m, ev, sp.seq, sp.eval, spend, random, patience, false, &timer);
        if (better(e, best)) {
            best = e;
            best_seq = sp.seq;
            best_start = sp.name;
            best_start_makespan = from;
        }
    }
    // Beam searches over partial orders, guided by the exact phase's bound and pruned at the
    // best makespan so far: where a memory limit makes the greedy rules and local moves stall,
    // they find orders up to 10 % faster in tens of milliseconds (docs/tuning.md); the tabu
    // search then polishes what they find. Wider beams only run on smaller problems.
    std::size_t n = 0; // compute actions
    for (int r = 0; r < m.ranks; ++r) n += m.rank_actions(r);
    // The limits of the beams and of the exact phase: the deadline, and the progress line
    // going on during them.
    auto search_limits = [&] {
        exact_limits limits;
        limits.deadline = spend.deadline;
        limits.tick = [&] { (void)spend.spent(ev); };
        return limits;
    };
    // What a beam found, and the tabu search on it. False once a budget is spent.
    auto take_beam = [&](exact_outcome found) {
        result.beam_nodes += found.nodes;
        const evaluation e0 = found.improved ? ev.run(found.seq) : evaluation{};
        if (e0.ok && better(e0, best)) {
            spend.improved(e0.makespan, found.found_at);
            best = tabu_search(m, ev, found.seq, e0, spend, random, patience, false, &timer);
            best_seq = std::move(found.seq);
            best_start = "beam";
            best_start_makespan = e0.makespan;
        }
        return !spend.spent(ev);
    };
    // One beam of width w, pruned at the best makespan so far, and the tabu search on it.
    auto run_beam = [&](std::size_t w) {
        exact_search guide(m);
        return take_beam(guide.beam(best.makespan, w, search_limits(), threads));
    };
    const std::vector<std::size_t> widths = beam_widths(options.beam_width);
    const std::size_t early = plan_beams(m, n, widths, true).early;
    std::size_t beams_run = 0; // of `widths`
    if (best.makespan > target && !spend.spent(ev))
        for (std::size_t i = 0; i < early; ++i) {
            if (best.makespan <= target) break;
            ++beams_run;
            if (!run_beam(widths[i])) break;
        }
    const int restarts = 12;
    for (int idle = 0; idle < restarts;) {
        if (best.makespan <= target || spend.spent(ev)) break;
        sequences seq = best_seq;
        perturb(m, seq, random, 2 + n / 40 + random.below(1 + n / 40));
        const evaluation e0 = ev.run(seq);
        if (!e0.ok) {
            ++idle;
            continue;
        }
        const evaluation e = tabu_search(m, ev, seq, e0, spend, random, patience, true, &timer);
        if (better(e, best)) {
            best = e;
            best_seq = std::move(seq);
            idle = 0;
        } else {
            ++idle;
        }
    }

    // 3. The exact phase: a faster order, or the proof that there is none. A node costs
    // O(n log n): the default budget keeps the phase to a second or two.
    const std::uint64_t exact_nodes = options.exact_nodes.value_or(
        std::max<std::uint64_t>(1000, 50'000'000 / std::max<std::size_t>(n, 1)));
    // Where that budget is short for the problem (`late_beams_first`), the wider beams that
    // would run last (4b) run before it instead, on every thread, while the answer is not
    // within 1 % of the bound: p = 8 x m = 32 x v = 2, v, W = 0.5 I, half memory: the answer
    // at 1.5 s instead of 2.7 s, the same makespans on the 40 problems of 8 ranks with 16 and
    // 32 microbatches (docs/performance.md).
    const bool wide_first = !relaxed_backward && late_beams_first(n, exact_nodes);
    if (wide_first && best.makespan > target && !spend.spent(ev)) {
        const beam_plan plan = plan_beams(m, n, widths, best.makespan <= result.bound.value * 1.01);
        if (beams_run == plan.early)
            for (std::size_t i = plan.early; i < plan.early + plan.late; ++i) {
                if (best.makespan <= result.bound.value * 1.01) break;
                ++beams_run;
                if (!run_beam(widths[i])) break;
            }
    }
    // Elsewhere, the first of the wider beams that run last (4b), where some may run, is
    // pruned at the best makespan from before the exact phase, so that with two threads or
    // more it runs beside the exact phase and the rank relaxation (each uses one), on the
    // other threads: it is the same beam for any thread count, and taken only where 4b would
    // run it (else cancelled). Its answer comes sooner (p = 4 x m = 8, loop V = 2, random
    // costs, half memory: 1.82 -> 0.87 s; docs/performance.md).
    const double late_incumbent = best.makespan;
    // Whether 4b would run wider beams, were the exact phase and the relaxation to prove
    // nothing more (or, after them, with what they proved).
    auto late_planned = [&] {
        const beam_plan plan = plan_beams(m, n, widths, best.makespan <= proven_bound() * 1.01);
        return !relaxed_backward && !wide_first && beams_run == plan.early && plan.late > 0;
    };
    background_beam beside;
    if (threads >= 2 && exact_nodes > 0 && best.makespan > target && !spend.spent(ev) &&
        late_planned())
        (void)beside.start(m, late_incumbent, widths[beams_run], spend.deadline, threads - 1);
    bool proven = false, exact_cut = false;
    if (best.makespan > target && exact_nodes > 0 && !spend.spent(ev)) {
        exact_search exact(bm);
        exact_limits limits = search_limits();
        limits.max_nodes = exact_nodes;
        const exact_outcome found = exact.run(best.makespan, limits, result.bound.value);
        result.exact_nodes = found.nodes;
        if (found.improved) {
            const evaluation e = ev.run(found.seq);
            if (e.ok && better(e, best)) {
                best = e;
                best_seq = found.seq;
                spend.improved(best.makespan, found.found_at);
            }
        }
        // On a relaxed model an order it finds is timed again on the real one (above) and may
        // be slower there: then only `found.lower`, its optimum, is proven.
        proven = found.complete && !((relaxed_backward || relaxed_overlap) && found.improved);
        exact_cut = !found.complete;
        result.bound.search = found.lower;
        if (std::chrono::steady_clock::now() >= spend.deadline) spend.out_of_time = true;
    }

    // 4. The rank relaxation, where the exact phase left a gap: each rank alone, its sequence
    // and memory exact, the others as delays, solved exactly with the best makespan as
    // incumbent (or, where that does not finish, halfway between the bound and it). Under
    // tight memory limits it often proves more than the bound. Its budget is the exact
    // phase's (its nodes cost less); each rank takes half of what is left (and a quarter for
    // the probe), the ranks of the highest memory ramp and Jackson's bound first; ranks of
    // more than 256 actions are skipped (a node costs O(n_r log n_r), and the search rarely
    // finishes there).
    if (!proven && best.makespan > target && exact_nodes > 0 && !spend.spent(ev)) {
        std::vector<int> ranks{result.bound.memory_ramp_rank, result.bound.one_machine_rank};
        for (int r = 0; r < m.ranks; ++r) ranks.push_back(r);
        std::uint64_t left = exact_nodes;
        std::vector<char> relaxed(static_cast<std::size_t>(m.ranks), 0);
        for (const int r : ranks) {
            if (relaxed[static_cast<std::size_t>(r)] || m.rank_actions(r) > 256) continue;
            relaxed[static_cast<std::size_t>(r)] = 1;
            if (result.bound.rank_relaxation >= best.makespan || left < 2) break;
            rank_relaxation relaxation(bm, r);
            rank_relaxation_result found =
                relaxation.solve(best.makespan, left / 2, spend.deadline);
            left -= std::min(left, found.nodes);
            if (!found.complete) {
                // A probe halfway between the bound and the best makespan: proving only that
                // the rank cannot beat it prunes far more.
                found = relaxation.solve((proven_bound() + best.makespan) / 2, left / 4,
                                         spend.deadline);
                left -= std::min(left, found.nodes);
            }
            if (found.complete && found.value > result.bound.rank_relaxation) {
                result.bound.rank_relaxation = found.value;
                result.bound.rank_relaxation_rank = r;
            }
            if (clock::now() >= spend.deadline) {
                spend.out_of_time = true;
                break;
            }
        }
    }

    // 4b. Wider beams, where the answer is still not proven within 1 % of the optimum: the
    // widths after those that ran early (up to `beam_width`) while their work stays under
    // 10^9 (a few seconds) and time is left. On 120 held-out problems (p = 4, m = 8, two
    // stages per rank; widths 1024 and 4096) they found faster orders on 13 of the 33 that the
    // bound does not vouch for, by up to 0.7 %, one of them where tune was 1.004 % above an
    // order they find; on 60 problems of 8 ranks and 20 of 4 ranks x 16 microbatches (widths
    // 16 to 1024) on 8 of the 48 not vouched for, by 0.08-3.6 % (docs/tuning.md).
    // They run last: where the bound is within 1 %, the answer comes as soon as before.
    // (Not where orders that run B are searched after this: those passes share the time left.)
    {
        const double known = proven_bound();
        auto within_1pc = [&] { return best.makespan <= known * 1.01; };
        const beam_plan plan = plan_beams(m, n, widths, within_1pc());
        const bool late = !proven && late_planned();
        std::optional<exact_outcome> late_found = beside.join(late);
        // (What the beam beside the exact phase found is taken even where the time is spent:
        // it is there.)
        if (late && (!spend.spent(ev) || (late_found && late_found->improved)))
            for (std::size_t i = plan.early; i < plan.early + plan.late; ++i) {
                if (within_1pc()) break;
                if (i == plan.early) {
                    // Pruned at the best makespan from before the exact phase (above).
                    if (!late_found) {
                        exact_search guide(m);
                        late_found =
                            guide.beam(late_incumbent, widths[i], search_limits(), threads);
                    }
                    if (!take_beam(std::move(*late_found))) break;
                } else if (!run_beam(widths[i])) {
                    break;
                }
            }
    }

    // 5. The answer, simulated and validated by the library itself.
    result.best = to_order(m, cfg, best_seq);
    const simulation sim =
        simulate(result.best, problem.costs, simulate_options{.timeline = false});
    if (!sim || !validate(result.best))
        throw std::logic_error("ppsched::tune: internal error: the best order does not validate");
    result.makespan = sim.makespan;
    for (const rank_summary& rs : sim.ranks) result.peak_memory.push_back(rs.peak_memory);
    result.start = best_start;
    result.start_makespan = best_start_makespan;
    if (!result.best_builtin.empty() && result.best_builtin_makespan <= result.makespan) {
        // Nothing faster than a built-in schedule: return it as it is.
        const simulation own =
            simulate(best_builtin_order, problem.costs, simulate_options{.timeline = false});
        result.best = std::move(best_builtin_order);
        result.makespan = own.makespan;
        result.peak_memory.clear();
        for (const rank_summary& rs : own.ranks) result.peak_memory.push_back(rs.peak_memory);
        result.start = result.best_builtin;
        result.start_makespan = result.best_builtin_makespan;
    }
    // The bound is summed in another order than the simulation: where the two meet it may
    // exceed the makespan by a few ulps. An order of that makespan exists, so the makespan is
    // then the (rounded) bound.
    auto clamp_rounding = [&](double& b) {
        if (b > result.makespan && b <= result.makespan * (1 + 1e-9)) b = result.makespan;
    };
    // The bound and every part of it (each is a bound on its own). Where the makespan is
    // the bound up to rounding (`gap_of` 0: proven optimal), the bound is reported as the
    // makespan: the bounds' room includes the memory limit's rounding allowance
    // (`model::fit_limit`), which may leave them 1e-12 below an optimum they prove.
    auto clamp_bounds = [&] {
        for (double* b :
             {&result.bound.value, &result.bound.search, &result.bound.one_machine,
              &result.bound.memory, &result.bound.memory_ramp, &result.bound.rank_relaxation})
            clamp_rounding(*b);
        if (gap_of(result.makespan, result.bound.value) == 0) result.bound.value = result.makespan;
    };
    if (proven) {
        // No order is faster than the best found (up to 1e-12 relative: the search's margin).
        result.bound.search = result.makespan;
        result.bound.exact_complete = true;
    }
    result.bound.value = proven_bound();
    clamp_bounds();
    result.evaluations = ev.count();
    result.elapsed = std::chrono::duration<double>(clock::now() - started).count();
    result.time_to_best = std::min(spend.best_at, result.elapsed);

    // 6. Where a stage's B is cheaper than its I + W, orders that run B are searched too, each
    // pass with an equal share of what is left of the budgets: the fused problem (B only), and
    // problems where some of those stages run B (all of them, those of the first half of the
    // pipeline, those of the second half) and the others I and W. Under a tight memory limit no
    // built-in may fit, and such orders can beat every split one. The bound stays the relaxed
    // model's, which covers every mix.
    if (relaxed_backward && result.makespan > result.bound.value * (1 + 1e-9)) {
        const std::vector<std::vector<char>> passes = b_stage_choices(problem);
        for (std::size_t i = 0; i < passes.size(); ++i) {
            if (result.makespan <= result.bound.value * (1 + 1e-9)) break;
            const auto passes_left = static_cast<double>(passes.size() - i);
            tune_options fo = options;
            fo.time_limit = (options.time_limit - result.elapsed) / passes_left;
            const std::uint64_t nodes_left =
                exact_nodes - std::min(exact_nodes, result.exact_nodes);
            fo.exact_nodes =
                static_cast<std::uint64_t>(static_cast<double>(nodes_left) / passes_left);
            const std::uint64_t evaluations_left =
                options.max_evaluations > result.evaluations
                    ? options.max_evaluations - result.evaluations
                    : 0;
            fo.max_evaluations = options.max_evaluations == 0
                                     ? 0
                                     : static_cast<std::uint64_t>(
                                           static_cast<double>(evaluations_left) / passes_left);
            if (!(fo.time_limit > 0) || (options.max_evaluations != 0 && fo.max_evaluations == 0))
                break;
            if (options.progress) {
                // A pass's own bound holds for its kind of order only: report the real one,
                // and the time and evaluations of every search so far.
                fo.progress = [&, before = result](const tune_progress& pr) {
                    options.progress(
                        {before.elapsed + pr.elapsed, before.evaluations + pr.evaluations,
                         // (The pass's best is 0 while its start points are
                         // timed: not better.)
                         pr.best > 0 ? std::min(before.makespan, pr.best) : before.makespan,
                         before.bound.value});
                };
            }
            const std::vector<char>& as_b = passes[i];
            tune_problem variant = problem;
            if (as_b.empty())
                variant.backward = backward_mode::fused;
            else
                variant.costs = with_b_stages(problem, as_b);
            tune_result fr;
            try {
                fr = tune(variant, fo);
            } catch (const config_error&) {
                // No order of this kind fits: the others still answer, in the time left.
                result.elapsed = std::chrono::duration<double>(clock::now() - started).count();
                continue;
            }
            result.evaluations += fr.evaluations;
            result.exact_nodes += fr.exact_nodes;
            result.beam_nodes += fr.beam_nodes;
            spend.out_of_time = spend.out_of_time || fr.stopped == tune_stop::time_limit;
            spend.out_of_evaluations =
                spend.out_of_evaluations || fr.stopped == tune_stop::evaluation_limit;
            std::optional<order> found =
                as_b.empty() ? std::optional<order>(std::move(fr.best)) : run_as_b(fr.best, as_b);
            if (found) {
                const simulation fs =
                    simulate(*found, problem.costs, simulate_options{.timeline = false});
                bool fits = fs && validate(*found);
                for (std::size_t r = 0; fits && r < fs.ranks.size(); ++r)
                    fits = fits_memory_limit(fs.ranks[r].peak_memory, limit);
                if (fits && fs.makespan < result.makespan) {
                    result.best = std::move(*found);
                    result.makespan = fs.makespan;
                    result.peak_memory.clear();
                    for (const rank_summary& rs : fs.ranks)
                        result.peak_memory.push_back(rs.peak_memory);
                    // (Its B taken apart or not, the mixed order runs B where it chose: one
                    // suffix.)
                    std::string from = fr.start;
                    if (from.ends_with(split_b_suffix))
                        from.resize(from.size() - split_b_suffix.size());
                    result.start = from + (as_b.empty() ? " (fused)" : " (mixed)");
                    result.start_makespan = fr.start_makespan;
                    result.time_to_best = result.elapsed + fr.time_to_best;
                    clamp_bounds();
                }
            }
            result.elapsed = std::chrono::duration<double>(clock::now() - started).count();
        }
    }

    result.gap = gap_of(result.makespan, result.bound.value);
    if (result.gap == 0) {
        result.stopped = tune_stop::optimal;
    } else if (spend.out_of_evaluations) {
        result.stopped = tune_stop::evaluation_limit;
    } else if (spend.out_of_time) {
        result.stopped = tune_stop::time_limit;
    } else if (exact_cut) {
        result.stopped = tune_stop::node_limit;
    } else {
        result.stopped = tune_stop::converged;
    }
    return result;
}

} // namespace ppsched
