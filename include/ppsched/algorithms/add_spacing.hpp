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
#include "ppsched/config.hpp"
#include "ppsched/algorithms/detail/action_table.hpp"
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
    const int S = cfg.num_stages(), M = cfg.microbatches;
    // Only the compute planes (F, I, W, B) of the (kind, stage, microbatch) table.
    const detail::action_table_index cell{S, M};

    // Flatten the actions (idle dropped) and note which (kind, stage, mb) exist.
    std::vector<action> acts;
    std::vector<std::size_t> begin{0};
    const std::size_t cells = static_cast<std::size_t>(detail::compute_plane_count) *
                              static_cast<std::size_t>(S) * static_cast<std::size_t>(M);
    std::vector<char> exists(cells, 0);
    for (const auto& row : rows) {
        for (const auto& s : row) {
            const action* a = detail::slot_action(s);
            if (!a) continue;
            std::array<action, 2> parts;
            const int np = a->parts(parts);
            for (int k = 0; k < np; ++k) {
                const action& p = parts[static_cast<std::size_t>(k)];
                PPSCHED_EXPECTS(is_compute(p.kind()),
                                "ppsched::add_spacing: only compute actions (F, I, W, B, "
                                "OVERLAP_F_B) can be spaced; use simulate_steps for lowered "
                                "orders (rank ",
                                begin.size() - 1, ", action #", acts.size(), ")");
                PPSCHED_EXPECTS(p.stage() < S && p.microbatch() < M,
                                "ppsched::add_spacing: stage or microbatch out of range (rank ",
                                begin.size() - 1, ")");
                exists[cell(detail::compute_plane(p.kind()), p.stage(), p.microbatch())] = 1;
            }
            acts.push_back(*a);
        }
        begin.push_back(acts.size());
    }
    const int R_ = static_cast<int>(begin.size()) - 1;
    PPSCHED_EXPECTS(R_ == cfg.ranks, "ppsched::add_spacing: expected one row per rank (", cfg.ranks,
                    "), got ", R_);

    // The cells a sub-action waits for (at most one: F has one producer; B/I one of B or I).
    const auto dependency = [&](const action& p) -> long long {
        const int s = p.stage(), mb = p.microbatch();
        std::size_t c = 0;
        switch (p.kind()) {
        case action_kind::forward: {
            const int prev = cfg.previous_stage(s);
            if (prev < 0) return -1;
            c = cell(detail::plane_f, prev, mb);
            break;
        }
        case action_kind::backward_input:
        case action_kind::full_backward: {
            const int next = cfg.next_stage(s);
            if (next < 0) {
                c = cell(detail::plane_f, s, mb);
            } else {
                c = cell(detail::plane_b, next, mb);
                if (!exists[c]) c = cell(detail::plane_i, next, mb);
            }
            break;
        }
        case action_kind::backward_weight:
            c = cell(detail::plane_i, s, mb);
            break;
        default:
            return -1;
        }
        return exists[c] ? static_cast<long long>(c) : -1;
    };

    // Event-driven lock-step: a rank advances while its head's dependencies are placed (their
    // finish times known); otherwise it parks on the missing cell until that cell is placed.
    std::vector<long long> finish(cells, -1);
    std::vector<int> waiter_head(cells, -1);
    const auto RR = static_cast<std::size_t>(R_);
    std::vector<int> next_waiter(RR, -1);
    std::vector<std::size_t> cursor(begin.begin(), begin.end() - 1);
    std::vector<long long> free_at(RR, 0), start(acts.size(), 0);
    std::vector<int> ready;
    for (int r = R_ - 1; r >= 0; --r) ready.push_back(r);
    long long last_start = -1;
    while (!ready.empty()) {
        const int r = ready.back();
        ready.pop_back();
        const auto ri = static_cast<std::size_t>(r);
        while (cursor[ri] < begin[ri + 1]) {
            const action& a = acts[cursor[ri]];
            std::array<action, 2> parts;
            const int np = a.parts(parts);
            long long t = free_at[ri], wait = -1;
            for (int k = 0; k < np && wait < 0; ++k) {
                const long long d = dependency(parts[static_cast<std::size_t>(k)]);
                if (d < 0) continue;
                const long long f = finish[static_cast<std::size_t>(d)];
                if (f < 0)
                    wait = d;
                else if (f > t)
                    t = f;
            }
            if (wait >= 0) {
                next_waiter[ri] = waiter_head[static_cast<std::size_t>(wait)];
                waiter_head[static_cast<std::size_t>(wait)] = r;
                break;
            }
            start[cursor[ri]] = t;
            if (t > last_start) last_start = t;
            long long done = t;
            for (int k = 0; k < np; ++k) {
                const action& p = parts[static_cast<std::size_t>(k)];
                done += detail::spacing_width(opts, p.kind());
                const std::size_t c =
                    cell(detail::compute_plane(p.kind()), p.stage(), p.microbatch());
                if (finish[c] >= 0) continue; // a duplicate: the first copy counts
                finish[c] = done;
                for (int w = waiter_head[c]; w >= 0; w = next_waiter[static_cast<std::size_t>(w)])
                    ready.push_back(w);
                waiter_head[c] = -1;
            }
            free_at[ri] = t + detail::spacing_width(opts, a.kind());
            ++cursor[ri];
        }
    }
    for (int r = 0; r < R_; ++r)
        PPSCHED_EXPECTS(
            cursor[static_cast<std::size_t>(r)] == begin[static_cast<std::size_t>(r) + 1],
            "ppsched::add_spacing: the order deadlocks (rank ", r, " cannot run its action #",
            cursor[static_cast<std::size_t>(r)] - begin[static_cast<std::size_t>(r)],
            "); check it with validate()");

    // Lay out the slots: idle for each free time unit before an action starts, and up to the
    // last start over all ranks (PyTorch pads every rank until the visualizer's loop ends).
    std::vector<rank_slots> out(RR);
    for (std::size_t r = 0; r < RR; ++r) {
        long long now = 0;
        for (std::size_t i = begin[r]; i < begin[r + 1]; ++i) {
            for (; now < start[i]; ++now) out[r].push_back(slot{});
            out[r].push_back(acts[i]);
            const long long end = start[i] + detail::spacing_width(opts, acts[i].kind());
            if (opts.pad_wide)
                for (long long u = start[i] + 1; u < end; ++u) out[r].push_back(slot{});
            now = end;
        }
        if (!opts.pad_wide)
            for (; now <= last_start; ++now) out[r].push_back(slot{});
    }
    return order(cfg, std::move(out));
}

/// `add_spacing(o, o.cfg(), opts)`.
[[nodiscard]] constexpr order add_spacing(const order& o, const spacing_options& opts = {}) {
    return add_spacing(o, o.cfg(), opts);
}

} // namespace ppsched
