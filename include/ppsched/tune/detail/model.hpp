#pragma once
/// \file tune/detail/model.hpp
/// The auto-scheduler's compact view of a `tune_problem`: per stage its rank, neighbours,
/// durations, activation and message times, and a dense numbering of the problem's compute
/// actions ("nodes"). Also the checks every entry point of the tune wing runs first.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/cost_model.hpp"
#include "ppsched/error.hpp"
#include "ppsched/memory_limit.hpp"
#include "ppsched/tune/problem.hpp"

namespace ppsched::detail::tune {

/// Kinds of nodes. With a fused backward, `kind_backward` is a `B` and there is no `W`.
enum node_kind : int { kind_forward = 0, kind_backward = 1, kind_weight = 2 };

/// What the search needs of one stage.
struct stage_info {
    int rank = 0;
    int prev = -1, next = -1;  ///< neighbours in the microbatch's path (-1: none)
    double dur[3] = {1, 1, 1}; ///< F, I (or B when fused), W
    double activation = 1;
    double msg_from_prev = 0; ///< message time of the forward input (0 on the same rank)
    double msg_from_next = 0; ///< message time of the backward input (0 on the same rank)
};

/// The problem as flat tables. A node is `(stage * microbatches + mb) * 4 + kind` (stride 4 so
/// that decoding needs one division).
struct model {
    int ranks = 1, microbatches = 1, stages = 1;
    bool split = true;
    double frees_by_i = 0; ///< fraction of an activation `I` frees (split only)
    double message = 0;
    std::vector<stage_info> stage;
    std::vector<std::vector<int>> rank_stages; ///< each rank's stages, increasing
    std::vector<double> parameters;            ///< per rank
    std::vector<double> limit;                 ///< per rank: peak memory allowed (or huge)
    /// Per rank: what an order may hold, `limit` up to rounding (memory_limit.hpp). The search
    /// admits orders by it, and the bounds' room is `fit_limit` less the parameters: the
    /// rounding allowance is of the whole limit, so where parameters take part of it, it is a
    /// larger share of the room than the bounds' own tolerances.
    std::vector<double> fit_limit;

    [[nodiscard]] int kinds() const noexcept { return split ? 3 : 2; }
    [[nodiscard]] int node(int s, int mb, int kind) const noexcept {
        return ((s * microbatches + mb) << 2) | kind;
    }
    [[nodiscard]] std::size_t node_count() const noexcept {
        return static_cast<std::size_t>(stages) * static_cast<std::size_t>(microbatches) * 4;
    }
    [[nodiscard]] static int kind_of(int node) noexcept { return node & 3; }
    [[nodiscard]] int stage_of(int node) const noexcept { return (node >> 2) / microbatches; }
    [[nodiscard]] int mb_of(int node) const noexcept { return (node >> 2) % microbatches; }
    [[nodiscard]] double duration(int node) const noexcept {
        return stage[static_cast<std::size_t>(stage_of(node))].dur[kind_of(node)];
    }
    /// Compute actions each rank runs.
    [[nodiscard]] std::size_t rank_actions(int r) const noexcept {
        return rank_stages[static_cast<std::size_t>(r)].size() *
               static_cast<std::size_t>(microbatches) * static_cast<std::size_t>(kinds());
    }
    /// The action of a node.
    [[nodiscard]] action to_action(int n) const {
        const int s = stage_of(n), mb = mb_of(n);
        switch (kind_of(n)) {
        case kind_forward:
            return action::forward(s, mb);
        case kind_backward:
            return split ? action::backward_input(s, mb) : action::full_backward(s, mb);
        default:
            return action::backward_weight(s, mb);
        }
    }
};

/// A finite, non-negative number (`x == x` is false only for NaN).
[[nodiscard]] constexpr bool finite_non_negative(double x) noexcept {
    return x == x && x >= 0 && x <= 1.7976931348623157e308;
}

/// The least peak memory any valid order needs on each rank: the rank's parameters plus one
/// microbatch's activations on every stage of the rank (one microbatch holds them all at once
/// when it runs its forward on the rank's last stage in its path, since every backward of the
/// rank comes after it; running the microbatches one at a time reaches exactly this).
[[nodiscard]] inline std::vector<double> least_memory(const model& m) {
    std::vector<double> out(static_cast<std::size_t>(m.ranks));
    for (int r = 0; r < m.ranks; ++r) {
        double a = 0;
        for (int s : m.rank_stages[static_cast<std::size_t>(r)])
            a += m.stage[static_cast<std::size_t>(s)].activation;
        out[static_cast<std::size_t>(r)] = m.parameters[static_cast<std::size_t>(r)] + a;
    }
    return out;
}

/// Checks `p` and builds its model; throws `config_error` naming what is wrong.
[[nodiscard]] inline model make_model(const tune_problem& p) {
    PPSCHED_EXPECTS(p.ranks >= 1, "ppsched::tune: ranks must be >= 1 (got ", p.ranks, ")");
    PPSCHED_EXPECTS(p.microbatches >= 1, "ppsched::tune: microbatches must be >= 1 (got ",
                    p.microbatches, ")");
    PPSCHED_EXPECTS(p.stages_per_rank >= 1, "ppsched::tune: stages_per_rank must be >= 1 (got ",
                    p.stages_per_rank, ")");
    PPSCHED_EXPECTS(p.placement != stage_placement::dual,
                    "ppsched::tune: the dual placement (two pipelines) is not searched; use "
                    "loop or v");
    // (In floating point: the product of three ints may overflow 64 bits.)
    const double slots = static_cast<double>(p.ranks) * p.stages_per_rank * p.microbatches;
    PPSCHED_EXPECTS(slots <= static_cast<double>(1LL << 26),
                    "ppsched::tune: ranks * stages_per_rank * microbatches must be <= 2^26 "
                    "(got ",
                    p.ranks, " * ", p.stages_per_rank, " * ", p.microbatches, ")");
    const config cfg = p.cfg();
    check(cfg);
    p.costs.check();
    const int stages = cfg.num_stages();
    PPSCHED_EXPECTS(p.costs.per_stage.empty() ||
                        p.costs.per_stage.size() == static_cast<std::size_t>(stages),
                    "ppsched::tune: the cost model has ", p.costs.per_stage.size(),
                    " per-stage entries but the problem has ", stages, " stages (", p.ranks,
                    p.ranks == 1 ? " rank x " : " ranks x ", p.stages_per_rank,
                    p.stages_per_rank == 1 ? " stage" : " stages",
                    " per rank); give one entry per stage or none");
    PPSCHED_EXPECTS(finite_non_negative(p.costs.message_time()),
                    "ppsched::tune: the message time (p2p latency + transfer) must be finite");
    model m;
    m.ranks = p.ranks;
    m.microbatches = p.microbatches;
    m.stages = stages;
    m.split = p.backward == backward_mode::split;
    m.frees_by_i = m.split ? p.costs.input_grad_frees : 0;
    m.message = p.costs.message_time();
    m.stage.resize(static_cast<std::size_t>(stages));
    m.rank_stages.resize(static_cast<std::size_t>(p.ranks));
    m.parameters.assign(static_cast<std::size_t>(p.ranks), 0);
    double work = 0;
    for (int s = 0; s < stages; ++s) {
        const resolved_stage_costs c = p.costs.at(s);
        stage_info& st = m.stage[static_cast<std::size_t>(s)];
        st.rank = cfg.stage_to_rank(s);
        st.prev = cfg.previous_stage(s);
        st.next = cfg.next_stage(s);
        st.dur[kind_forward] = c.forward;
        st.dur[kind_backward] = m.split ? c.backward_input : c.full_backward;
        st.dur[kind_weight] = m.split ? c.backward_weight : 0;
        st.activation = c.activation;
        const std::pair<const char*, double> values[] = {
            {"F", c.forward},       {"I", c.backward_input},      {"W", c.backward_weight},
            {"B", c.full_backward}, {"activation", c.activation}, {"parameters", c.parameters}};
        for (const auto& [name, x] : values)
            PPSCHED_EXPECTS(finite_non_negative(x), "ppsched::tune: stage ", s, "'s ", name, " is ",
                            x,
                            ": every cost must be a finite non-negative number (a B taken as "
                            "I + W overflows where I and W are finite but too large)");
        work += c.forward + c.full_backward + c.backward_input + c.backward_weight;
        m.parameters[static_cast<std::size_t>(st.rank)] += c.parameters;
        m.rank_stages[static_cast<std::size_t>(st.rank)].push_back(s);
    }
    // Every time the search adds stays finite, with room to spare: the whole step's work,
    // done in sequence, stays below 1e300.
    const double total = work * p.microbatches * 4 + m.message * stages * 4;
    PPSCHED_EXPECTS(finite_non_negative(total) && total <= 1e300,
                    "ppsched::tune: the costs are too large: the search needs 4 x their "
                    "total over the step (F, B, I and W of every stage and microbatch, and "
                    "the messages) below 1e300, and it is ",
                    total);
    for (int s = 0; s < stages; ++s) {
        stage_info& st = m.stage[static_cast<std::size_t>(s)];
        auto msg = [&](int other) {
            return other >= 0 && m.stage[static_cast<std::size_t>(other)].rank != st.rank
                       ? m.message
                       : 0.0;
        };
        st.msg_from_prev = msg(st.prev);
        st.msg_from_next = msg(st.next);
    }
    const std::vector<double> least = least_memory(m);
    for (std::size_t r = 0; r < least.size(); ++r)
        PPSCHED_EXPECTS(least[r] <= 1e300, "ppsched::tune: the memory values are too large: rank ",
                        r, "'s parameters and one activation of each of its stages sum to ",
                        least[r], ", over 1e300");
    m.limit.assign(static_cast<std::size_t>(p.ranks), 1e300);
    m.fit_limit.assign(static_cast<std::size_t>(p.ranks), 1e300);
    if (p.memory_limit) {
        const double limit = *p.memory_limit;
        PPSCHED_EXPECTS(finite_non_negative(limit),
                        "ppsched::tune: the memory limit must be a finite non-negative number");
        // Named: the rank that needs the most (a user copies that figure into the limit).
        const auto most =
            static_cast<std::size_t>(std::max_element(least.begin(), least.end()) - least.begin());
        PPSCHED_EXPECTS(fits_memory_limit(least[most], limit), "ppsched::tune: the memory limit ",
                        limit, " is below the least any order needs: rank ", most, " needs ",
                        least[most], " (parameters ", m.parameters[most],
                        " + one microbatch's activations on each of its stages ",
                        least[most] - m.parameters[most], ")");
        m.limit.assign(static_cast<std::size_t>(p.ranks), limit);
        m.fit_limit.assign(static_cast<std::size_t>(p.ranks), limit + memory_limit_slack(limit));
    }
    return m;
}

/// Whether a stage's `B` is cheaper than its `I + W`, by more than rounding (a `W` given as
/// `B - I` can sum one ulp above `B`): then orders that run `B` are worth a search of their own.
[[nodiscard]] inline bool cheaper_b(const resolved_stage_costs& c) noexcept {
    return c.full_backward < (c.backward_input + c.backward_weight) * (1 - 1e-9);
}

/// The model the bounds are proven on: every order of the problem, as a built-in may run it,
/// is an order of this model with no longer durations, so a bound proven on it holds for every
/// order. It is `m` itself unless one of these holds:
/// - With a split backward a built-in order may still run a stage's backward as one `B`, timed
///   with the cost model's `B`; where that is cheaper than `I + W`, such an order is outside
///   the split model. Here each stage's `I` becomes `I' = min(I, B)` and its `W` becomes
///   `W' = min(W, B - I')`: an `I` and a `W` run as they are, a `B` as `I'` then at once `W'`
///   (which end, send and free no later than the `B`). `relaxed` says whether some stage's `B`
///   is `cheaper_b`.
/// - A built-in's `OVERLAP_F_B` lasts its forward stage's `overlap_f_b`, which may be less
///   than its parts. Then every duration on the rank is scaled by the least ratio of such an
///   overlap to the forward and the whole backward (`I'` + `W'`, or `B`) it may hold on that
///   rank: the overlapped action runs as its backward part, then its forward, within its own
///   time (they are of different microbatches, both inputs are there at its start, and the
///   backward's free comes before the forward's allocation, so no rank holds more). `overlapped`
///   says whether some rank was scaled.
[[nodiscard]] inline model bound_model(const model& m, const tune_problem& p, bool& relaxed,
                                       bool& overlapped) {
    model out = m;
    relaxed = false;
    overlapped = false;
    if (m.split) {
        for (int s = 0; s < m.stages; ++s) {
            const resolved_stage_costs c = p.costs.at(s);
            if (c.full_backward >= c.backward_input + c.backward_weight) continue;
            double* dur = out.stage[static_cast<std::size_t>(s)].dur;
            dur[kind_backward] = std::min(c.backward_input, c.full_backward);
            dur[kind_weight] = std::min(c.backward_weight, c.full_backward - dur[kind_backward]);
            relaxed = relaxed || cheaper_b(c);
        }
    }
    for (const std::vector<int>& stages : out.rank_stages) {
        double scale = 1;
        for (const int f : stages) {
            const std::optional<double> both = p.costs.at(f).overlap_f_b;
            if (!both) continue;
            for (const int b : stages) {
                const double* fd = out.stage[static_cast<std::size_t>(f)].dur;
                const double* bd = out.stage[static_cast<std::size_t>(b)].dur;
                const double parts =
                    fd[kind_forward] + bd[kind_backward] + (m.split ? bd[kind_weight] : 0);
                if (*both < parts) scale = std::min(scale, std::max(0.0, *both) / parts);
            }
        }
        if (scale >= 1) continue;
        overlapped = true;
        for (const int s : stages)
            for (double& d : out.stage[static_cast<std::size_t>(s)].dur) d *= scale;
    }
    return out;
}

/// `bound_model` where only whether some `B` is cheaper matters.
[[nodiscard]] inline model bound_model(const model& m, const tune_problem& p, bool& relaxed) {
    bool overlapped = false;
    return bound_model(m, p, relaxed, overlapped);
}

} // namespace ppsched::detail::tune
