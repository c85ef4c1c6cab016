#pragma once
/// \file schedules/detail/zb_greedy.hpp
/// The greedy planner behind `zb_1p`, `zb_2p` and `zb_auto`: the zero-bubble authors' automatic
/// schedule for one stage per rank (sail-sg zero-bubble-pipeline-parallelism, `zb.py`, its
/// "manual order" heuristic; the paper's ILP is not used there either). Written from a
/// description of that algorithm; see docs/schedules.md.

#include <cstddef>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/memory_limit.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/zb_costs.hpp"

namespace ppsched::detail {

/// The three switches of one try of the greedy.
struct zb_greedy_flags {
    bool allow_bubble_before_first_i = false; ///< warm-up forwards may overrun I0's arrival
    bool prioritize_i = false;    ///< a stage far ahead of the next skips an F to take its I sooner
    bool no_bubble_greedy = true; ///< fill a gap with W even when the gap is within the slack
};

/// One try of the greedy: plans stage by stage with the times the actions would take, puts
/// `W` into the gaps, and keeps every rank's activations within `limit`.
/// Complexity: linear in the actions (the largest bubble is kept as a running maximum, since
/// bubbles only grow).
class zb_greedy {
  public:
    constexpr zb_greedy(const config& cfg, const std::vector<zb_stage_cost>& cost, double comm,
                        double activation, double input_grad_frees, double limit, const char* who)
        : p_(cfg.ranks), m_(cfg.microbatches), cost_(cost), comm_(comm), mem_f_(activation),
          mem_i_(-input_grad_frees * activation), mem_w_(-(1 - input_grad_frees) * activation),
          limit_(limit), room_(limit + memory_limit_slack(limit)), who_(who) {}

    /// Runs one try; returns the longest rank span (the try's score) and leaves the order in
    /// `rows()`. Throws `config_error` when the limit cannot be kept.
    constexpr double run(zb_greedy_flags flags) {
        reset();
        const std::size_t pu = static_cast<std::size_t>(p_);
        // Microbatch 0: a forward everywhere, then how many extra warm-up forwards each stage
        // can run before I0 comes back to it (estimated from the last stage backwards).
        for (int s = 0; s < p_; ++s) put(s, kind_f);
        std::vector<int> extra(pu, 0);
        double last_t = 0;
        for (int s = p_ - 1; s >= 0; --s) {
            const zb_stage_cost& c = cost_[idx(s)];
            if (s == p_ - 1) {
                last_t = fin_[kind_f][at(s, 0)] + c.i;
                continue;
            }
            double t = end_[idx(s)];
            int& e = extra[idx(s)];
            while (n_[kind_f][idx(s)] + e < m_ &&
                   memory(n_[kind_f][idx(s)] + e + 1, n_[kind_i][idx(s)], n_[kind_w][idx(s)]) <=
                       room_) {
                if (flags.allow_bubble_before_first_i) {
                    if (t + c.f > last_t + comm_) break;
                } else if (t >= last_t + comm_) {
                    break;
                }
                t += c.f;
                ++e;
            }
            last_t = max2(t, last_t + comm_) + c.i;
        }
        // A later stage never warms up as much as an earlier one (it would only wait).
        for (int s = 1; s < p_; ++s) {
            int& e = extra[idx(s)];
            while (e > 0 && e >= extra[idx(s - 1)] && n_[kind_f][idx(s)] + e < m_) --e;
            // Beyond the authors: with per-stage costs (a slower earlier stage) their rule can
            // leave a stage more warm-up forwards than its predecessor runs, an order whose
            // forward precedes its input (their code then fails its final check). Never more
            // than the predecessor: this changes nothing where their order is valid.
            if (e > extra[idx(s - 1)]) e = extra[idx(s - 1)];
        }
        for (int s = 0; s < p_; ++s)
            for (int k = 0; k < extra[idx(s)]; ++k) put(s, kind_f);
        for (int s = p_ - 1; s >= 0; --s) put(s, kind_i);

        // Microbatches 1 .. m-1: one round each, a forward per stage (when wanted) from the
        // first stage, then I(i) per stage from the last.
        std::vector<char> want(pu, 0);
        for (int i = 1; i < m_; ++i) {
            for (int s = 0; s < p_; ++s) want[idx(s)] = wants_forward(s, flags) ? 1 : 0;
            for (int s = p_ - 2; s >= 0; --s)
                if (!want[idx(s + 1)]) want[idx(s)] = 0;
            for (int s = 0; s < p_; ++s) {
                if (!want[idx(s)]) continue;
                make_room(s, mem_f_);
                if (s > 0)
                    fill_w_before(s, dependency_end(kind_f, s - 1, n_[kind_f][idx(s)]) + comm_,
                                  flags);
                put(s, kind_f);
            }
            for (int s = p_ - 1; s >= 0; --s) {
                make_room(s, mem_i_);
                if (s + 1 < p_) fill_w_before(s, dependency_end(kind_i, s + 1, i) + comm_, flags);
                if (s == 0 && n_[kind_f][0] == m_)
                    while (pending_w(0)) put(0, kind_w);
                put(s, kind_i);
            }
        }
        for (int s = 0; s < p_; ++s)
            while (n_[kind_w][idx(s)] < m_) put(s, kind_w);
        double span = 0;
        for (int s = 0; s < p_; ++s)
            span =
                max2(span, fin_[kind_w][at(s, m_ - 1)] - fin_[kind_f][at(s, 0)] + cost_[idx(s)].f);
        return span;
    }

    /// The order of the last try, one row per stage (= rank).
    [[nodiscard]] constexpr std::vector<std::vector<action>>& rows() noexcept { return rows_; }

  private:
    static constexpr int kind_f = 0, kind_i = 1, kind_w = 2;

    [[nodiscard]] static constexpr double max2(double a, double b) noexcept {
        return a < b ? b : a;
    }
    [[nodiscard]] static constexpr std::size_t idx(int s) noexcept {
        return static_cast<std::size_t>(s);
    }
    [[nodiscard]] constexpr std::size_t at(int s, int mb) const noexcept {
        return static_cast<std::size_t>(s) * static_cast<std::size_t>(m_) +
               static_cast<std::size_t>(mb);
    }

    constexpr void reset() {
        const std::size_t pu = static_cast<std::size_t>(p_);
        for (auto& n : n_) n.assign(pu, 0);
        for (auto& f : fin_) f.assign(pu * static_cast<std::size_t>(m_), -1.0);
        end_.assign(pu, 0.0);
        bubble_.assign(pu, 0.0);
        max_bubble_ = 0;
        rows_.assign(pu, {});
        for (auto& row : rows_) row.reserve(3 * static_cast<std::size_t>(m_));
    }

    // Activation memory of stage s after nf forwards, ni input and nw weight gradients
    // (from the counts, so that no rounding accumulates).
    [[nodiscard]] constexpr double memory(int nf, int ni, int nw) const noexcept {
        return nf * mem_f_ + ni * mem_i_ + nw * mem_w_;
    }
    [[nodiscard]] constexpr double memory(int s) const noexcept {
        return memory(n_[kind_f][idx(s)], n_[kind_i][idx(s)], n_[kind_w][idx(s)]);
    }
    [[nodiscard]] constexpr bool pending_w(int s) const noexcept {
        return n_[kind_w][idx(s)] < n_[kind_i][idx(s)];
    }
    [[nodiscard]] constexpr double slack(int s) const noexcept {
        return max_bubble_ - bubble_[idx(s)];
    }

    // End time of an action another stage ran before; its absence would be a planning error.
    [[nodiscard]] constexpr double dependency_end(int kind, int s, int mb) const {
        const double t = mb < m_ ? fin_[static_cast<std::size_t>(kind)][at(s, mb)] : -1.0;
        PPSCHED_EXPECTS(t >= 0, who_,
                        ": internal error: planned an action before its input (stage ", s,
                        ", microbatch ", mb, ")");
        return t;
    }

    constexpr void put(int s, int kind) {
        const std::size_t k = static_cast<std::size_t>(kind);
        const int mb = n_[k][idx(s)];
        const zb_stage_cost& c = cost_[idx(s)];
        const double d = kind == kind_f ? c.f : kind == kind_i ? c.i : c.w;
        const double free_at = end_[idx(s)] + d;
        double t = free_at;
        if (kind == kind_f && s > 0) t = max2(t, dependency_end(kind_f, s - 1, mb) + comm_ + d);
        if (kind == kind_i && s + 1 < p_)
            t = max2(t, dependency_end(kind_i, s + 1, mb) + comm_ + d);
        // Idle time before a stage's first forward is the warm-up, not a bubble.
        if (n_[kind_f][idx(s)] > 0) {
            bubble_[idx(s)] += t - free_at;
            max_bubble_ = max2(max_bubble_, bubble_[idx(s)]);
        }
        end_[idx(s)] = t;
        fin_[k][at(s, mb)] = t;
        ++n_[k][idx(s)];
        rows_[idx(s)].push_back(kind == kind_f   ? action::forward(s, mb)
                                : kind == kind_i ? action::backward_input(s, mb)
                                                 : action::backward_weight(s, mb));
    }

    // Puts W until `need` more memory fits under the limit.
    constexpr void make_room(int s, double need) {
        while (memory(s) + need > room_) {
            PPSCHED_EXPECTS(pending_w(s), who_, ": cannot keep stage ", s,
                            " within the memory limit (", limit_,
                            "): no weight gradient is left to free memory");
            put(s, kind_w);
        }
    }

    // Before an action whose input arrives at `ready`: W while each one ends in time, then
    // one more W if the stage would otherwise idle beyond its slack (or, with
    // no_bubble_greedy, idle at all).
    constexpr void fill_w_before(int s, double ready, zb_greedy_flags flags) {
        const double w = cost_[idx(s)].w;
        while (pending_w(s) && end_[idx(s)] + w <= ready) put(s, kind_w);
        if (pending_w(s) && end_[idx(s)] < ready) {
            if (ready - end_[idx(s)] <= slack(s)) {
                if (flags.no_bubble_greedy) put(s, kind_w);
            } else {
                put(s, kind_w);
            }
        }
    }

    [[nodiscard]] constexpr bool wants_forward(int s, zb_greedy_flags flags) const {
        const int nf = n_[kind_f][idx(s)];
        if (nf >= m_) return false;
        if (!flags.prioritize_i || s + 1 >= p_ || nf < n_[kind_f][idx(s + 1)] + 2) return true;
        // Stage s is two forwards ahead of s+1: estimate when the next I arrives from s+1.
        const zb_stage_cost& next = cost_[idx(s + 1)];
        const double next_back = end_[idx(s + 1)] + next.f + next.i + comm_;
        const double e = end_[idx(s)];
        if (e >= next_back) return false;
        // An F (with the W that make room for it) that ends before then costs nothing.
        double w_cost = 0;
        int ws = 0;
        double mem = memory(s) + mem_f_;
        while (mem > room_ && n_[kind_w][idx(s)] + ws < n_[kind_i][idx(s)]) {
            w_cost += cost_[idx(s)].w;
            mem += mem_w_;
            ++ws;
        }
        if (e + cost_[idx(s)].f + w_cost <= next_back) return true;
        // Otherwise wait for the I when the wait fits in the stage's slack.
        return !(next_back - e <= slack(s));
    }

    int p_, m_;
    const std::vector<zb_stage_cost>& cost_;
    double comm_, mem_f_, mem_i_, mem_w_, limit_;
    double room_; // the limit up to rounding (memory_limit.hpp)
    const char* who_;
    std::vector<int> n_[3];      // actions put per kind and stage
    std::vector<double> fin_[3]; // end time per kind, stage and microbatch (-1: not yet)
    std::vector<double> end_;    // when each stage becomes free
    std::vector<double> bubble_; // idle time after each stage's first forward
    double max_bubble_ = 0;
    std::vector<std::vector<action>> rows_;
};

/// The authors' automatic schedule: the eight tries of the greedy (allow_bubble_before_first_i,
/// then prioritize_i, then no_bubble_greedy, each true before false), keeping the first with
/// the strictly smallest longest rank span. Complexity: linear in the actions.
[[nodiscard]] constexpr order zb_greedy_order(const config& cfg, const zb_costs& costs,
                                              double limit, const char* who) {
    const std::vector<zb_stage_cost> stage_cost = zb_stage_costs(costs, cfg.num_stages());
    zb_greedy planner(cfg, stage_cost, costs.comm, costs.activation, costs.input_grad_frees, limit,
                      who);
    std::vector<std::vector<action>> best;
    double best_span = 0;
    bool have = false;
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b)
            for (int c = 0; c < 2; ++c) {
                const double span = planner.run({a == 0, b == 0, c == 0});
                if (!have || span < best_span) {
                    best = std::move(planner.rows());
                    best_span = span;
                    have = true;
                }
            }
    order o(cfg);
    for (int r = 0; r < cfg.ranks; ++r) {
        auto& row = o.rank(r);
        row.reserve(best[static_cast<std::size_t>(r)].size());
        for (const action& x : best[static_cast<std::size_t>(r)]) row.push_back(x);
    }
    return o;
}

} // namespace ppsched::detail
