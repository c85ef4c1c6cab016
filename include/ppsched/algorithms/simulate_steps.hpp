#pragma once
/// \file algorithms/simulate_steps.hpp
/// `simulate_steps(lowered_order)`: the unit-step dry run of a lowered order (PyTorch's
/// `_simulate_comms_compute`): every action takes one step, ranks step together, and a rank
/// waits at a receive until the peer has run the matching send. Returns the spaced timeline,
/// or where the ranks got stuck.

#include <array>
#include <cstddef>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/algorithms/detail/action_table.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// A rank that can never run its next action, and what that action waits for.
struct step_wait {
    int rank = 0;          ///< the stuck rank
    int position = 0;      ///< index of the stuck action in the rank's input row (idle counted)
    action blocked{};      ///< the stuck action (an OVERLAP_F_B as a whole)
    action awaited{};      ///< what it waits for: the peer's SEND, or a local RECV or compute
    int awaited_rank = -1; ///< where `awaited` is in the order; -1 when it is not in the order

    friend constexpr bool operator==(const step_wait&, const step_wait&) noexcept = default;
};

/// The result of `simulate_steps`.
struct step_simulation {
    /// Per rank, slot t is the action run at step t, idle when the rank waits. A rank's row ends
    /// with its last action (no trailing idle). On a deadlock: what ran before it.
    order timeline;
    /// Empty when every rank finished; otherwise every stuck rank (ascending).
    std::vector<step_wait> stuck;

    /// True when every rank ran every action.
    [[nodiscard]] constexpr explicit operator bool() const noexcept { return stuck.empty(); }
    [[nodiscard]] constexpr bool completed() const noexcept { return stuck.empty(); }
    /// Number of steps until the last rank finished (the longest row).
    [[nodiscard]] constexpr std::size_t steps() const noexcept { return timeline.max_row_length(); }
};

namespace detail {

/// The unit-step simulation. Rules (PyTorch's, extended):
/// - F(s, mb) is ready when s has no previous stage, or RECV_F(s, mb) or F(previous, mb) has run
///   on this rank; B or I(s, mb) when s has no next stage, or RECV_B(s, mb), B(next, mb) or
///   I(next, mb) has run on this rank; W, UNSHARD, RESHARD, REDUCE_GRAD always;
/// - SEND_F(s, mb) after F(s, mb) on this rank; SEND_B(s, mb) after B or I(s, mb);
/// - RECV_F(s, mb) once SEND_F(previous, mb) has run, in the same step or earlier (PyTorch's
///   second pass lets a lower rank receive in the step a higher rank sends); RECV_B likewise;
/// - OVERLAP_F_B when both sub-actions are ready (checked before either runs).
/// Only receives depend on other ranks, so an event-driven replay (each rank runs ahead until a
/// receive whose send has not run yet) gives the same steps as PyTorch's step-by-step loop in
/// time linear in the actions instead of steps x ranks.
class step_simulator {
  public:
    constexpr explicit step_simulator(const config& cfg)
        : cfg_(cfg), idx_{cfg.num_stages(), cfg.microbatches} {}

    template <order_range R>
    constexpr step_simulation run(const R& rows) {
        load(rows);
        const auto RR = static_cast<std::size_t>(ranks_);
        ran_at_.assign(idx_.size(), -1);
        ran_on_.assign(idx_.size(), -1);
        waiter_head_.assign(idx_.size(), -1);
        next_waiter_.assign(RR, -1);
        cursor_.assign(begin_.begin(), begin_.end() - 1);
        now_.assign(RR, 0);
        std::vector<rank_slots> out(RR);
        std::vector<int> ready;
        for (int r = ranks_ - 1; r >= 0; --r) ready.push_back(r);
        while (!ready.empty()) {
            const int r = ready.back();
            ready.pop_back();
            advance(r, out[static_cast<std::size_t>(r)], ready);
        }
        step_simulation result{order(cfg_, std::move(out)), {}};
        for (int r = 0; r < ranks_; ++r)
            if (cursor_[static_cast<std::size_t>(r)] < begin_[static_cast<std::size_t>(r) + 1])
                result.stuck.push_back(why_stuck(r));
        return result;
    }

  private:
    template <order_range R>
    constexpr void load(const R& rows) {
        begin_.push_back(0);
        for (const auto& row : rows) {
            int pos = 0;
            for (const auto& s : row) {
                const action* a = slot_action(s);
                if (a) {
                    acts_.push_back(*a);
                    position_.push_back(pos);
                    std::array<action, 2> parts;
                    const int n = a->parts(parts);
                    for (int k = 0; k < n; ++k) {
                        const action& p = parts[static_cast<std::size_t>(k)];
                        PPSCHED_EXPECTS(p.stage() < idx_.stages &&
                                            p.microbatch() < idx_.microbatches,
                                        "ppsched::simulate_steps: stage or microbatch out of "
                                        "range (rank ",
                                        begin_.size() - 1, ", slot ", pos, ")");
                    }
                }
                ++pos;
            }
            begin_.push_back(acts_.size());
        }
        ranks_ = static_cast<int>(begin_.size()) - 1;
        PPSCHED_EXPECTS(ranks_ == cfg_.ranks,
                        "ppsched::simulate_steps: expected one row per rank (", cfg_.ranks,
                        "), got ", ranks_);
        // Where each (plane, stage, mb) first appears, to tell "not yet" from "never".
        home_.assign(idx_.size(), -1);
        for (int r = 0; r < ranks_; ++r) {
            for (std::size_t i = begin_[static_cast<std::size_t>(r)];
                 i < begin_[static_cast<std::size_t>(r) + 1]; ++i) {
                std::array<action, 2> parts;
                const int n = acts_[i].parts(parts);
                for (int k = 0; k < n; ++k) {
                    const action& p = parts[static_cast<std::size_t>(k)];
                    if (idx_.fits(p) && home_[idx_(p)] < 0) home_[idx_(p)] = r;
                }
            }
        }
    }

    [[nodiscard]] constexpr bool ran_here(int plane, int stage, int mb, int r) const {
        if (stage < 0) return false;
        const std::size_t c = idx_(plane, stage, mb);
        return ran_on_[c] == r;
    }

    /// Readiness of one part that depends only on this rank's past.
    [[nodiscard]] constexpr bool locally_ready(const action& p, int r) const {
        const int s = p.stage(), mb = p.microbatch();
        switch (p.kind()) {
        case action_kind::forward: {
            const int prev = cfg_.previous_stage(s);
            return prev < 0 || ran_here(5, s, mb, r) || ran_here(0, prev, mb, r);
        }
        case action_kind::backward_input:
        case action_kind::full_backward: {
            const int next = cfg_.next_stage(s);
            return next < 0 || ran_here(7, s, mb, r) || ran_here(3, next, mb, r) ||
                   ran_here(1, next, mb, r);
        }
        case action_kind::send_f:
            return ran_here(0, s, mb, r);
        case action_kind::send_b:
            return ran_here(3, s, mb, r) || ran_here(1, s, mb, r);
        default:
            return true; // W, UNSHARD, RESHARD, REDUCE_GRAD; receives are handled apart
        }
    }

    /// The send a receive waits for, as a table cell, or -1 when there is no such stage.
    [[nodiscard]] constexpr long long send_cell(const action& p) const {
        if (p.kind() == action_kind::recv_f) {
            const int prev = cfg_.previous_stage(p.stage());
            return prev < 0 ? -1 : static_cast<long long>(idx_(4, prev, p.microbatch()));
        }
        const int next = cfg_.next_stage(p.stage());
        return next < 0 ? -1 : static_cast<long long>(idx_(6, next, p.microbatch()));
    }

    /// Runs rank `r` until it finishes or must wait.
    constexpr void advance(int r, rank_slots& row, std::vector<int>& ready) {
        const auto ri = static_cast<std::size_t>(r);
        while (cursor_[ri] < begin_[ri + 1]) {
            const action& a = acts_[cursor_[ri]];
            std::array<action, 2> parts;
            const int n = a.parts(parts);
            long long step = now_[ri];
            for (int k = 0; k < n; ++k) {
                const action& p = parts[static_cast<std::size_t>(k)];
                if (!is_recv(p.kind())) {
                    if (!locally_ready(p, r)) return; // stuck for good
                    continue;
                }
                const long long c = send_cell(p);
                if (c < 0 || home_[static_cast<std::size_t>(c)] < 0) return; // never sent
                const long long at = ran_at_[static_cast<std::size_t>(c)];
                if (at < 0) {
                    if (home_[static_cast<std::size_t>(c)] == r) return; // later on this rank
                    const auto w = static_cast<std::size_t>(c);
                    next_waiter_[ri] = waiter_head_[w];
                    waiter_head_[w] = r;
                    return;
                }
                if (at > step) step = at;
            }
            for (; now_[ri] < step; ++now_[ri]) row.push_back(slot{});
            row.push_back(a);
            for (int k = 0; k < n; ++k) {
                const action& p = parts[static_cast<std::size_t>(k)];
                if (!idx_.fits(p)) continue;
                const std::size_t c = idx_(p);
                if (ran_at_[c] >= 0) continue; // a duplicate: the first run counts
                ran_at_[c] = step;
                ran_on_[c] = r;
                for (int w = waiter_head_[c]; w >= 0; w = next_waiter_[static_cast<std::size_t>(w)])
                    ready.push_back(w);
                waiter_head_[c] = -1;
            }
            now_[ri] = step + 1;
            ++cursor_[ri];
        }
    }

    /// What rank `r`'s next action waits for.
    [[nodiscard]] constexpr step_wait why_stuck(int r) const {
        const auto ri = static_cast<std::size_t>(r);
        step_wait w;
        w.rank = r;
        w.position = position_[cursor_[ri]];
        w.blocked = acts_[cursor_[ri]];
        std::array<action, 2> parts;
        const int n = w.blocked.parts(parts);
        for (int k = 0; k < n; ++k) {
            const action& p = parts[static_cast<std::size_t>(k)];
            const int s = p.stage(), mb = p.microbatch();
            if (is_recv(p.kind())) {
                const long long c = send_cell(p);
                if (c >= 0 && ran_at_[static_cast<std::size_t>(c)] >= 0) continue;
                const bool fwd = p.kind() == action_kind::recv_f;
                const int peer = fwd ? cfg_.previous_stage(s) : cfg_.next_stage(s);
                w.awaited = fwd ? action::send_f(peer < 0 ? 0 : peer, mb)
                                : action::send_b(peer < 0 ? 0 : peer, mb);
                w.awaited_rank = c < 0 ? -1 : home_[static_cast<std::size_t>(c)];
                return w;
            }
            if (locally_ready(p, r)) continue;
            // The local input it lacks: the receive when the producer is remote, else the
            // producing compute; or the compute a send forwards.
            action need = p;
            int plane = -1;
            switch (p.kind()) {
            case action_kind::forward: {
                const int prev = cfg_.previous_stage(s);
                const bool remote = cfg_.stage_to_rank(prev) != r;
                need = remote ? action::recv_f(s, mb) : action::forward(prev, mb);
                plane = remote ? 5 : 0;
                break;
            }
            case action_kind::backward_input:
            case action_kind::full_backward: {
                const int next = cfg_.next_stage(s);
                if (cfg_.stage_to_rank(next) != r) {
                    need = action::recv_b(s, mb);
                    plane = 7;
                } else {
                    const bool b = home_[idx_(3, next, mb)] >= 0;
                    need = b ? action::full_backward(next, mb) : action::backward_input(next, mb);
                    plane = b ? 3 : 1;
                }
                break;
            }
            case action_kind::send_f:
                need = action::forward(s, mb);
                plane = 0;
                break;
            default: {
                const bool b = home_[idx_(3, s, mb)] >= 0;
                need = b ? action::full_backward(s, mb) : action::backward_input(s, mb);
                plane = b ? 3 : 1;
                break;
            }
            }
            w.awaited = need;
            w.awaited_rank = home_[idx_(plane, need.stage(), need.microbatch())];
            return w;
        }
        return w;
    }

    config cfg_;
    action_table_index idx_;
    int ranks_ = 0;
    std::vector<action> acts_;
    std::vector<int> position_;
    std::vector<std::size_t> begin_, cursor_;
    std::vector<long long> ran_at_, now_;
    std::vector<int> ran_on_, home_, waiter_head_, next_waiter_;
};

} // namespace detail

/// Runs a lowered order one action per step on every rank together (see `detail::step_simulator`
/// for the exact readiness rules). Unlike PyTorch's `_simulate_comms_compute`, it takes
/// OVERLAP_F_B (ready when both parts are), UNSHARD, RESHARD and REDUCE_GRAD (one step each,
/// always ready), and returns a deadlock instead of raising. Idle slots in the input are
/// ignored. A compute-only order with more than one rank gets stuck at the first forward that
/// needs another rank's data: lower it first.
/// Requires: one row per rank, stage and microbatch indices in range, at least as many compute
/// slots as stages x microbatches when that exceeds 2^16 (else `config_error`).
/// Complexity: linear in the slots, stages x microbatches and the steps produced.
template <order_range R>
[[nodiscard]] constexpr step_simulation simulate_steps(const R& rows, const config& cfg) {
    check(cfg);
    // Bounded resources (docs/design.md): no table sized by a configuration far larger than
    // the order.
    PPSCHED_EXPECTS(detail::tables_affordable(rows, cfg),
                    "ppsched::simulate_steps: the configuration names far more stages x "
                    "microbatches (",
                    cfg.num_stages(), " x ", cfg.microbatches,
                    ") than the order has slots; check it with validate()");
    detail::step_simulator sim(cfg);
    return sim.run(rows);
}

/// `simulate_steps(o, o.cfg())`.
[[nodiscard]] constexpr step_simulation simulate_steps(const order& o) {
    return simulate_steps(o, o.cfg());
}

} // namespace ppsched
