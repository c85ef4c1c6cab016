#pragma once
/// \file schedules/detail/zbv_greedy.hpp
/// The greedy planner behind `zb_v`: the zero-bubble authors' automatic V schedule (sail-sg
/// zero-bubble-pipeline-parallelism, `zbv.py`, `try_v_schedule` and `create_schedule`). Written
/// from a description of that algorithm; see docs/schedules.md.
///
/// Vocabulary (the authors'): a rank's work flows in two directions. Direction 0 carries data
/// from rank 0 to the last rank: the forward of chunk 0 (stage r) and the backward of chunk 1
/// (stage 2p-1-r). Direction 1 carries it back: the forward of chunk 1 and the backward of
/// chunk 0. `F[d]`, `I[d]`, `W[d]` below are the actions of direction d.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/memory_limit.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/zb_costs.hpp"

namespace ppsched::detail {

/// The outcome of one try: each rank's order, its bubbles and the largest one.
struct zbv_try_result {
    std::vector<std::vector<action>> rows;
    std::vector<double> bubbles;
    double max_bubble = 0;
};

/// One try of the V greedy. Complexity: linear in the actions (the largest bubble is a running
/// maximum; the approved budget is a constant per rank within a try).
class zbv_greedy {
  public:
    constexpr zbv_greedy(const config& cfg, const std::vector<zb_stage_cost>& cost, double comm,
                         double activation, double input_grad_frees, double limit)
        : p_(cfg.ranks), m_(cfg.microbatches), cfg_(cfg), cost_(cost),
          comm_(comm), mem_{activation, -input_grad_frees * activation,
                            -(1 - input_grad_frees) * activation},
          limit_(limit), room_(limit + memory_limit_slack(limit)) {}

    /// One try with the given switches and per-rank approved bubbles (empty: none).
    constexpr zbv_try_result run(bool fill_f, bool fill_b, const std::vector<double>& approved) {
        reset(approved);
        warm_up();
        for (int round = 0; round < 2 * m_; ++round) {
            for (int r = 0; r < p_; ++r)
                while (memory(r) + mem_[kind_i] > room_) put_w(r);
            put_backwards(fill_b);
            put_forwards(fill_f);
        }
        for (int r = 0; r < p_; ++r)
            while (pending(r)) put_w(r);
        return {std::move(rows_), bubble_, max_bubble_};
    }

  private:
    static constexpr int kind_f = 0, kind_i = 1, kind_w = 2;

    [[nodiscard]] static constexpr double max2(double a, double b) noexcept {
        return a < b ? b : a;
    }
    [[nodiscard]] static constexpr std::size_t u(int x) noexcept {
        return static_cast<std::size_t>(x);
    }
    // Counts per rank: index kind * 2 + direction.
    [[nodiscard]] constexpr int& count(int r, int kind, int d) noexcept {
        return count_[u(r * 6 + kind * 2 + d)];
    }
    [[nodiscard]] constexpr int count(int r, int kind, int d) const noexcept {
        return count_[u(r * 6 + kind * 2 + d)];
    }
    // End times of F and I: index ((kind * 2 + d) * p + r) * m + mb; -1 while not planned.
    [[nodiscard]] constexpr double end_of(int kind, int d, int r, int mb) const noexcept {
        if (mb < 0 || mb >= m_) return -1;
        return end_[(u((kind * 2 + d) * p_ + r)) * u(m_) + u(mb)];
    }
    [[nodiscard]] constexpr bool done(int kind, int d, int r, int mb) const noexcept {
        return end_of(kind, d, r, mb) >= 0;
    }
    // The stage of an action of `kind` in direction d on rank r.
    [[nodiscard]] constexpr int stage_of(int kind, int d, int r) const noexcept {
        const int chunk = kind == kind_f ? d : 1 - d;
        return cfg_.rank_to_stage(r, chunk);
    }
    [[nodiscard]] constexpr double duration(int kind, int d, int r) const noexcept {
        const zb_stage_cost& c = cost_[u(stage_of(kind, d, r))];
        return kind == kind_f ? c.f : kind == kind_i ? c.i : c.w;
    }
    // Activation memory of rank r, from its counts (no rounding accumulates).
    [[nodiscard]] constexpr double memory(int r) const noexcept {
        double mem = 0;
        for (int k = 0; k < 3; ++k) mem += (count(r, k, 0) + count(r, k, 1)) * mem_[u(k)];
        return mem;
    }
    [[nodiscard]] constexpr bool pending(int r) const noexcept {
        return head_[u(r)] < pending_[u(r)].size();
    }
    // The largest bubble, or what rank r may still spend of its approved budget.
    [[nodiscard]] constexpr double max_bubble(int r) const noexcept {
        return max2(max_bubble_, max_approved_ - approved_[u(r)]);
    }
    // The upstream rank of an F or I of direction d on rank r, or -1 at the ends of the V.
    [[nodiscard]] constexpr int upstream(int d, int r) const noexcept {
        const int up = d == 0 ? r - 1 : r + 1;
        return up >= 0 && up < p_ ? up : -1;
    }

    constexpr void reset(const std::vector<double>& approved) {
        const std::size_t pu = u(p_);
        count_.assign(6 * pu, 0);
        end_.assign(4 * pu * u(m_), -1.0);
        cur_.assign(pu, 0.0);
        bubble_.assign(pu, 0.0);
        max_bubble_ = 0;
        pending_.assign(pu, {});
        head_.assign(pu, 0);
        rows_.assign(pu, {});
        for (auto& row : rows_) row.reserve(6 * u(m_));
        last_w_end_ = -1;
        if (approved.empty())
            approved_.assign(pu, -1.0);
        else
            approved_ = approved;
        max_approved_ = approved_[0];
        for (double a : approved_) max_approved_ = max2(max_approved_, a);
    }

    constexpr void require(bool ok, const char* what, int kind, int d, int r) const {
        PPSCHED_EXPECTS(ok,
                        "zb_v: the greedy cannot plan this configuration under the memory "
                        "limit (",
                        limit_, "): ", what, " (rank ", r, ", stage ", stage_of(kind, d, r),
                        ", microbatch ", count(r, kind, d), ")");
    }

    constexpr void put(int kind, int d, int r) {
        const int mb = count(r, kind, d);
        require(mb < m_, "no microbatch left for the action it chose", kind, d, r);
        require(memory(r) + mem_[u(kind)] <= room_, "the memory limit is exceeded", kind, d, r);
        // The action before it on the same rank (F[1] after F[0], I[0] after F[1], I[1] after
        // I[0], W after its I) must already be planned, as must the upstream one.
        if (kind < 2 && (kind > 0 || d > 0)) {
            const int prev = kind * 2 + d - 1;
            require(done(prev / 2, prev % 2, r, mb), "its input is not planned", kind, d, r);
        }
        const double dur = duration(kind, d, r);
        const double free_at = cur_[u(r)] + dur;
        double t = free_at;
        if (kind < 2) {
            if (const int up = upstream(d, r); up >= 0) {
                require(done(kind, d, up, mb), "its input is not planned", kind, d, r);
                t = max2(t, end_of(kind, d, up, mb) + comm_ + dur);
            }
            end_[(u((kind * 2 + d) * p_ + r)) * u(m_) + u(mb)] = t;
        }
        // Idle time before a rank's first forward is the warm-up, not a bubble.
        if (count(r, kind_f, 0) > 0) {
            bubble_[u(r)] += t - free_at;
            max_bubble_ = max2(max_bubble_, bubble_[u(r)]);
        }
        if (kind == kind_w && d == 1 && r == p_ - 1 && mb == m_ - 1) last_w_end_ = t;
        cur_[u(r)] = t;
        ++count(r, kind, d);
        const int stage = stage_of(kind, d, r);
        rows_[u(r)].push_back(kind == kind_f   ? action::forward(stage, mb)
                              : kind == kind_i ? action::backward_input(stage, mb)
                                               : action::backward_weight(stage, mb));
        if (kind == kind_i) pending_[u(r)].push_back(static_cast<std::uint8_t>(d));
    }

    // The oldest pending W of rank r (in the order of their I).
    constexpr void put_w(int r) {
        require(pending(r), "no weight gradient is left to free memory", kind_w, 0, r);
        const int d = pending_[u(r)][head_[u(r)]++];
        put(kind_w, d, r);
    }

    // Before an action whose input comes from rank `up` at `up_end` (up < 0: none): W while
    // each ends in time, then one more if the gap exceeds the rank's slack and `flag`.
    constexpr void fill_gap(int r, int up, double up_end, bool flag) {
        while (pending(r) && up >= 0 &&
               up_end + comm_ >= cur_[u(r)] + duration(kind_w, pending_[u(r)][head_[u(r)]], r))
            put_w(r);
        // With no upstream the authors' code reads the end time of the graph's last node (the
        // last rank's final W of direction 1), which is -1 until that W is planned.
        const double arrive = up >= 0 ? up_end : last_w_end_;
        if (pending(r) && arrive + comm_ - cur_[u(r)] > max_bubble(r) - bubble_[u(r)] && flag)
            put_w(r);
    }

    constexpr void warm_up() {
        for (int r = 0; r < p_; ++r) put(kind_f, 0, r);
        // From the last rank back: more chunk-0 forwards on ranks 0..r while rank r would
        // otherwise wait for the chunk-1 forward of microbatch 0 from rank r+1.
        for (int r = p_ - 1; r >= 0; --r) {
            if (r == p_ - 1) {
                put(kind_f, 1, r);
                continue;
            }
            const double arrive = end_of(kind_f, 1, r + 1, 0) + comm_;
            while (memory(r) + mem_[kind_f] * (2 + 2 * r) <= room_ &&
                   cur_[u(r)] + duration(kind_f, 0, r) <= arrive && count(r, kind_f, 0) < m_)
                for (int j = 0; j <= r; ++j) put(kind_f, 0, j);
            put(kind_f, 1, r);
        }
        // Each rank catches up with the previous one, alternating directions across ranks.
        int d = 0;
        for (int r = 1; r < p_; ++r) {
            auto behind = [&] {
                const int mine = count(r, kind_f, 0) + count(r, kind_f, 1);
                const int prev = count(r - 1, kind_f, 0) + count(r - 1, kind_f, 1);
                return mine < prev || (count(r, kind_f, 1) <= count(r - 1, kind_f, 1) &&
                                       count(r - 1, kind_f, 1) < m_);
            };
            while (behind()) {
                for (int j = p_ - 1; j >= r; --j)
                    if (count(j, kind_f, d) < m_) put(kind_f, d, j);
                d = 1 - d;
            }
        }
    }

    // One I per rank: direction 1 (chunk 0) where its input is ready, taken from the last
    // rank down, then direction 0 (chunk 1) from the first rank up.
    constexpr void put_backwards(bool fill_b) {
        plan_.clear();
        second_.clear();
        for (int r = 0; r < p_; ++r) {
            const int i0 = count(r, kind_i, 0), i1 = count(r, kind_i, 1);
            if (i1 >= i0)
                second_.push_back(r);
            else if (r == p_ - 1 || done(kind_i, 1, r + 1, i1) || i0 >= m_)
                plan_.push_back(r);
            else
                second_.push_back(r);
        }
        for (std::size_t k = plan_.size(); k-- > 0;) {
            const int r = plan_[k];
            const int up = upstream(1, r);
            fill_gap(r, up, up >= 0 ? end_of(kind_i, 1, up, count(r, kind_i, 1)) : -1, true);
            put(kind_i, 1, r);
        }
        for (const int r : second_) {
            const int up = upstream(0, r);
            fill_gap(r, up, up >= 0 ? end_of(kind_i, 0, up, count(r, kind_i, 0)) : -1, fill_b);
            put(kind_i, 0, r);
        }
    }

    // At most one F per rank, from the first rank up: chunk 1 when its input is ready,
    // otherwise chunk 0 when its input is ready.
    constexpr void put_forwards(bool fill_f) {
        for (int r = 0; r < p_; ++r) {
            const int f0 = count(r, kind_f, 0), f1 = count(r, kind_f, 1);
            if (f1 >= m_) continue;
            int d = -1;
            if (f1 >= f0)
                d = 0;
            else if (r == p_ - 1 || done(kind_f, 1, r + 1, f1))
                d = 1;
            else if (f0 < m_ && (r == 0 || done(kind_f, 0, r - 1, f0)))
                d = 0;
            if (d < 0) continue;
            while (memory(r) + mem_[kind_f] > room_) put_w(r);
            const int up = upstream(d, r);
            fill_gap(r, up, up >= 0 ? end_of(kind_f, d, up, count(r, kind_f, d)) : -1, fill_f);
            put(kind_f, d, r);
        }
    }

    int p_, m_;
    config cfg_;
    const std::vector<zb_stage_cost>& cost_;
    double comm_;
    double mem_[3];
    double limit_;
    double room_; // the limit up to rounding (memory_limit.hpp)
    std::vector<int> count_;
    std::vector<double> end_;
    std::vector<double> cur_;    // when each rank becomes free
    std::vector<double> bubble_; // idle time after each rank's first forward
    double max_bubble_ = 0;
    std::vector<double> approved_;
    double max_approved_ = -1;
    std::vector<std::vector<std::uint8_t>> pending_; // directions of the W to come, FIFO
    std::vector<std::size_t> head_;
    std::vector<std::vector<action>> rows_;
    std::vector<int> plan_, second_;
    double last_w_end_ = -1;
};

/// A try and, while it improves on the approved bubbles, retries that may spend them (the
/// authors' recursion, capped at `depth` levels; one level is all it takes in practice).
constexpr zbv_try_result zbv_schedule(zbv_greedy& g, bool fill_f, bool fill_b,
                                      const std::vector<double>& approved, int depth) {
    zbv_try_result res = g.run(fill_f, fill_b, approved);
    double max_approved = -1;
    for (double a : approved) max_approved = max_approved < a ? a : max_approved;
    if ((approved.empty() || res.max_bubble < max_approved) && depth > 0) {
        zbv_try_result retry = zbv_schedule(g, fill_f, fill_b, res.bubbles, depth - 1);
        if (retry.max_bubble < res.max_bubble) return retry;
    }
    return res;
}

/// The authors' ZB-V: four tries (fill_b, then fill_f, each true before false), keeping the
/// first with the strictly smallest largest bubble. Complexity: linear in the actions (at most
/// 4 * 33 tries of a linear greedy; in practice 4 to 8).
[[nodiscard]] constexpr order zbv_greedy_order(const config& cfg, const zb_costs& costs,
                                               double limit) {
    const std::vector<zb_stage_cost> stage_cost = zb_stage_costs(costs, cfg.num_stages());
    zbv_greedy planner(cfg, stage_cost, costs.comm, costs.activation, costs.input_grad_frees,
                       limit);
    constexpr int max_retries = 32;
    zbv_try_result best;
    bool have = false;
    for (int b = 0; b < 2; ++b)
        for (int f = 0; f < 2; ++f) {
            zbv_try_result res = zbv_schedule(planner, f == 0, b == 0, {}, max_retries);
            if (!have || res.max_bubble < best.max_bubble) {
                best = std::move(res);
                have = true;
            }
        }
    order o(cfg);
    for (int r = 0; r < cfg.ranks; ++r) {
        auto& row = o.rank(r);
        row.reserve(best.rows[static_cast<std::size_t>(r)].size());
        for (const action& x : best.rows[static_cast<std::size_t>(r)]) row.push_back(x);
    }
    return o;
}

} // namespace ppsched::detail
