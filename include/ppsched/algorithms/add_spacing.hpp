#pragma once
/// \file algorithms/add_spacing.hpp
/// `add_spacing(order)`: inserts idle slots into a compute-only order so that, stepping all ranks
/// together, no action starts before the actions it depends on have finished. This is what
/// PyTorch's schedule visualizer does before drawing (`add_schedule_op_spacing`), including its
/// cost model: `B` lasts two time units and `OVERLAP_F_B` three.

#include <array>
#include <cstddef>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/algorithms/detail/action_table.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// Durations (in time units) and layout of `add_spacing`. The defaults are PyTorch's visualizer.
struct spacing_options {
    int forward = 1;         ///< F
    int backward_input = 1;  ///< I
    int backward_weight = 1; ///< W
    int full_backward = 2;   ///< B
    /// OVERLAP_F_B: how long the rank is busy. Its sub-actions finish one after the other
    /// (the forward after `forward` units, the backward `full_backward` or `backward_input`
    /// units later), as in PyTorch.
    int overlap = 3;
    /// false (PyTorch's layout): a wide action takes one slot, so slot index and time differ
    /// once a wide action has run. true: a wide action is followed by idle slots for the rest of
    /// its duration, so slot t of every rank is time t.
    bool pad_wide = false;
};

namespace detail {

[[nodiscard]] constexpr int spacing_width(const spacing_options& o, action_kind k) noexcept {
    switch (k) {
    case action_kind::forward:
        return o.forward;
    case action_kind::backward_input:
        return o.backward_input;
    case action_kind::backward_weight:
        return o.backward_weight;
    case action_kind::full_backward:
        return o.full_backward;
    case action_kind::overlap_f_b:
        return o.overlap;
    default:
        return 1;
    }
}

/// The state of one `add_spacing` call: the actions flattened (idle dropped), which (kind,
/// stage, microbatch) exist, and each action's start in lock-step.
class spacer {
  public:
    constexpr spacer(const config& cfg, const spacing_options& opts)
        : cfg_(cfg), opts_(opts), cell_{cfg.num_stages(), cfg.microbatches},
          cells_(static_cast<std::size_t>(compute_plane_count) *
                 static_cast<std::size_t>(cfg.num_stages()) *
                 static_cast<std::size_t>(cfg.microbatches)) {}

    template <order_range R>
    constexpr order run(const R& rows) {
        flatten(rows);
        place();
        return lay_out();
    }

  private:
    /// Copies the actions (idle dropped) and notes which (kind, stage, mb) exist.
    template <order_range R>
    constexpr void flatten(const R& rows) {
        const int S = cfg_.num_stages(), M = cfg_.microbatches;
        exists_.assign(cells_, 0);
        for (const auto& row : rows) {
            for (const auto& s : row) {
                const action* a = slot_action(s);
                if (!a) continue;
                for_each_part(*a, [&](const action& p) {
                    PPSCHED_EXPECTS(is_compute(p.kind()),
                                    "ppsched::add_spacing: only compute actions (F, I, W, B, "
                                    "OVERLAP_F_B) can be spaced; use simulate_steps for lowered "
                                    "orders (rank ",
                                    begin_.size() - 1, ", action #", acts_.size(), ")");
                    PPSCHED_EXPECTS(p.stage() < S && p.microbatch() < M,
                                    "ppsched::add_spacing: stage or microbatch out of range (rank ",
                                    begin_.size() - 1, ")");
                    exists_[cell_(compute_plane(p.kind()), p.stage(), p.microbatch())] = 1;
                });
                acts_.push_back(*a);
            }
            begin_.push_back(acts_.size());
        }
        ranks_ = static_cast<int>(begin_.size()) - 1;
        PPSCHED_EXPECTS(ranks_ == cfg_.ranks, "ppsched::add_spacing: expected one row per rank (",
                        cfg_.ranks, "), got ", ranks_);
    }

    /// The cell a sub-action waits for, or -1 (at most one: F has one producer; B/I one of B
    /// or I; absent producers are not waited for).
    [[nodiscard]] constexpr long long dependency(const action& p) const {
        const int s = p.stage(), mb = p.microbatch();
        std::size_t c = 0;
        switch (p.kind()) {
        case action_kind::forward: {
            const int prev = cfg_.previous_stage(s);
            if (prev < 0) return -1;
            c = cell_(plane_f, prev, mb);
            break;
        }
        case action_kind::backward_input:
        case action_kind::full_backward: {
            const int next = cfg_.next_stage(s);
            if (next < 0) {
                c = cell_(plane_f, s, mb);
            } else {
                c = cell_(plane_b, next, mb);
                if (!exists_[c]) c = cell_(plane_i, next, mb);
            }
            break;
        }
        case action_kind::backward_weight:
            c = cell_(plane_i, s, mb);
            break;
        default:
            return -1;
        }
        return exists_[c] ? static_cast<long long>(c) : -1;
    }

    /// Event-driven lock-step: a rank advances while its head's dependencies are placed (their
    /// finish times known); otherwise it parks on the missing cell until that cell is placed.
    constexpr void place() {
        finish_.assign(cells_, -1);
        waiter_head_.assign(cells_, -1);
        const auto RR = static_cast<std::size_t>(ranks_);
        next_waiter_.assign(RR, -1);
        cursor_.assign(begin_.begin(), begin_.end() - 1);
        free_at_.assign(RR, 0);
        start_.assign(acts_.size(), 0);
        for (int r = ranks_ - 1; r >= 0; --r) ready_.push_back(r);
        while (!ready_.empty()) {
            const int r = ready_.back();
            ready_.pop_back();
            advance(r);
        }
        for (int r = 0; r < ranks_; ++r)
            PPSCHED_EXPECTS(
                cursor_[static_cast<std::size_t>(r)] == begin_[static_cast<std::size_t>(r) + 1],
                "ppsched::add_spacing: the order deadlocks (rank ", r, " cannot run its action #",
                cursor_[static_cast<std::size_t>(r)] - begin_[static_cast<std::size_t>(r)],
                "); check it with validate()");
    }

    /// Places rank `r`'s actions until one waits for a cell not yet placed.
    constexpr void advance(int r) {
        const auto ri = static_cast<std::size_t>(r);
        while (cursor_[ri] < begin_[ri + 1]) {
            const action& a = acts_[cursor_[ri]];
            std::array<action, 2> parts;
            const int np = a.parts(parts);
            long long t = free_at_[ri], wait = -1;
            for (int k = 0; k < np && wait < 0; ++k) {
                const long long d = dependency(parts[static_cast<std::size_t>(k)]);
                if (d < 0) continue;
                const long long f = finish_[static_cast<std::size_t>(d)];
                if (f < 0)
                    wait = d;
                else if (f > t)
                    t = f;
            }
            if (wait >= 0) {
                next_waiter_[ri] = waiter_head_[static_cast<std::size_t>(wait)];
                waiter_head_[static_cast<std::size_t>(wait)] = r;
                return;
            }
            start_[cursor_[ri]] = t;
            if (t > last_start_) last_start_ = t;
            long long done = t;
            for (int k = 0; k < np; ++k) {
                const action& p = parts[static_cast<std::size_t>(k)];
                done += spacing_width(opts_, p.kind());
                const std::size_t c = cell_(compute_plane(p.kind()), p.stage(), p.microbatch());
                if (finish_[c] >= 0) continue; // a duplicate: the first copy counts
                finish_[c] = done;
                for (int w = waiter_head_[c]; w >= 0; w = next_waiter_[static_cast<std::size_t>(w)])
                    ready_.push_back(w);
                waiter_head_[c] = -1;
            }
            free_at_[ri] = t + spacing_width(opts_, a.kind());
            ++cursor_[ri];
        }
    }

    /// The slots: idle for each free time unit before an action starts, and up to the last
    /// start over all ranks (PyTorch pads every rank until the visualizer's loop ends).
    [[nodiscard]] constexpr order lay_out() const {
        const auto RR = static_cast<std::size_t>(ranks_);
        std::vector<rank_slots> out(RR);
        for (std::size_t r = 0; r < RR; ++r) {
            long long now = 0;
            for (std::size_t i = begin_[r]; i < begin_[r + 1]; ++i) {
                for (; now < start_[i]; ++now) out[r].push_back(slot{});
                out[r].push_back(acts_[i]);
                const long long end = start_[i] + spacing_width(opts_, acts_[i].kind());
                if (opts_.pad_wide)
                    for (long long u = start_[i] + 1; u < end; ++u) out[r].push_back(slot{});
                now = end;
            }
            if (!opts_.pad_wide)
                for (; now <= last_start_; ++now) out[r].push_back(slot{});
        }
        return order(cfg_, std::move(out));
    }

    config cfg_;
    spacing_options opts_;
    action_table_index cell_; // the compute planes (F, I, W, B) only
    std::size_t cells_;
    int ranks_ = 0;
    std::vector<action> acts_;          // every action, rank after rank
    std::vector<std::size_t> begin_{0}; // rank r's actions: acts_[begin_[r], begin_[r + 1])
    std::vector<char> exists_;          // per cell: the order has that action
    std::vector<long long> finish_;     // per cell: when it ends (-1: not placed yet)
    std::vector<int> waiter_head_;      // per cell: the first rank waiting for it
    std::vector<int> next_waiter_;      // per rank: the next rank waiting on the same cell
    std::vector<std::size_t> cursor_;   // per rank: its next action
    std::vector<long long> free_at_;    // per rank: when it is free
    std::vector<long long> start_;      // per action: when it starts
    std::vector<int> ready_;            // ranks that may advance
    long long last_start_ = -1;         // the latest start over all ranks
};

} // namespace detail

/// The order with idle slots inserted so that, running every rank's actions in order and all
/// ranks in lock-step, each action starts at the earliest time when its rank is free and its
/// dependencies have finished:
/// - `F` of a stage needs the previous stage's `F` of the microbatch;
/// - `B`/`I` needs the next stage's `B` or `I` (the last stage: its own `F`);
/// - `W` needs its `I`; an `OVERLAP_F_B` needs what both sub-actions need.
/// Durations come from `opts` (PyTorch's visualizer: `B` = 2, `OVERLAP_F_B` = 3, others 1).
/// With the default layout the result is PyTorch's `add_schedule_op_spacing` cell for cell:
/// a wide action is one slot, and every rank is padded with idle slots up to the step at which
/// the last action starts. Idle slots already in the input are dropped first.
///
/// Differences from PyTorch, on purpose: the last stage's backward waits for its own forward
/// (PyTorch waits for the previous stage's forward, which never exists with a single stage, so
/// PyTorch reports a deadlock there); ranks keep their rows when a lower rank finishes early
/// (PyTorch's visualizer then shifts later ranks' actions into lower rows, visible in its
/// ZBVZeroBubble output); dependencies that are absent from the order are not waited for
/// (`validate` reports them).
///
/// Requires: a compute-only order (F, I, W, B, OVERLAP_F_B) whose ranks cannot wait on each
/// other forever; otherwise throws `config_error` (a compile error in constant evaluation).
/// Complexity: linear in the actions, stages x microbatches and the slots produced.
template <order_range R>
[[nodiscard]] constexpr order add_spacing(const R& rows, const config& cfg,
                                          const spacing_options& opts = {}) {
    check(cfg);
    PPSCHED_EXPECTS(opts.forward >= 1 && opts.backward_input >= 1 && opts.backward_weight >= 1 &&
                        opts.full_backward >= 1 && opts.overlap >= 1,
                    "ppsched::add_spacing: every duration must be >= 1");
    // Bounded resources (docs/design.md): no table sized by a configuration far larger than
    // the order.
    PPSCHED_EXPECTS(detail::tables_affordable(rows, cfg),
                    "ppsched::add_spacing: the configuration names far more stages x "
                    "microbatches (",
                    cfg.num_stages(), " x ", cfg.microbatches,
                    ") than the order has slots; check it with validate()");
    return detail::spacer(cfg, opts).run(rows);
}

/// `add_spacing(o, o.cfg(), opts)`.
[[nodiscard]] constexpr order add_spacing(const order& o, const spacing_options& opts = {}) {
    return add_spacing(o, o.cfg(), opts);
}

} // namespace ppsched
