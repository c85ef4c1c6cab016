#pragma once
/// \file algorithms/add_unshard_reshard.hpp
/// `add_unshard_reshard(order, prefetch = 3)`: inserts FSDP `UNSHARD`/`RESHARD` actions the way
/// PyTorch's `_add_unshard_reshard` does.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/algorithms/detail/lowering.hpp"
#include "ppsched/algorithms/detail/py_int_set.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {
namespace detail {

/// The look-ahead windows of one rank: for each action i, the stages PyTorch's
/// `next_stage_indices(prefetch, actions[i:])` returns. That is the distinct stages of the
/// suffix in order of first appearance, cut after the action that brings the count to
/// `prefetch` (an OVERLAP_F_B brings in both its stages at once, so a window can hold
/// prefetch + 1). PyTorch rescans the suffix at every action (quadratic when a rank has fewer
/// than `prefetch` stages); here each window is derived from the next one, walking backwards,
/// in O(prefetch) per action.
///
/// Only the windows that hold other stages than the previous action's are kept (the pass has
/// nothing to do at the others: its active stages are already the window's), as a list of
/// changes, last action first. One object serves rank after rank (`compute` reuses its
/// buffers, so lowering many ranks allocates them once).
class lookahead_windows {
  public:
    /// Computes the windows of `acts` (replacing the previous ones).
    constexpr void compute(const std::vector<action>& acts, int prefetch) {
        cap_ = window_capacity(acts, prefetch);
        change_at_.clear();
        change_size_.clear();
        change_stages_.clear();
        // group[k]: the action index at which stage k of a window first appears. A window is
        // cut only between groups, which is PyTorch's "stop after this action" rule. Window i
        // is built in place from window i + 1 (`stage`, `group`: `size` entries).
        if (window_.size() < 2 * cap_) window_.resize(2 * cap_, 0);
        if (groups_.size() < 2 * cap_) groups_.resize(2 * cap_, 0);
        int* stage = window_.data();
        int* old_stage = window_.data() + cap_;
        std::size_t* group = groups_.data();
        std::size_t* old_group = groups_.data() + cap_;
        std::size_t size = 0;
        const auto limit = static_cast<std::size_t>(prefetch);
        for (std::size_t i = acts.size(); i-- > 0;) {
            const action& a = acts[i];
            int own[2] = {a.stage(), -1};
            if (a.is_overlap() && a.backward_part().stage() != own[0])
                own[1] = a.backward_part().stage();
            if (own[1] < 0 && size <= limit) {
                // The common case: one stage, already in the window, which is not over its
                // limit (so nothing can be cut). The window keeps its stages; this one moves
                // to the front.
                std::size_t k = 0;
                while (k < size && stage[k] != own[0]) ++k;
                if (k < size) {
                    for (; k > 0; --k) {
                        stage[k] = stage[k - 1];
                        group[k] = group[k - 1];
                    }
                    stage[0] = own[0];
                    group[0] = i;
                    continue;
                }
            }
            // In general: the action's own stages, then the next window's others, up to the
            // limit.
            const std::size_t old_size = size;
            for (std::size_t k = 0; k < old_size; ++k) {
                old_stage[k] = stage[k];
                old_group[k] = group[k];
            }
            size = 0;
            auto take = [&](int st, std::size_t grp) {
                if (size >= limit && grp != group[size - 1]) return false;
                stage[size] = st;
                group[size] = grp;
                ++size;
                return true;
            };
            const std::size_t own_count = own[1] >= 0 ? 2 : 1;
            (void)take(own[0], i);
            if (own[1] >= 0) (void)take(own[1], i);
            // The same stages as the next window iff that holds this action's own stages and
            // none of its stages is cut.
            std::size_t found = 0;
            bool cut = false;
            for (std::size_t k = 0; k < old_size; ++k) {
                if (old_stage[k] == own[0] || old_stage[k] == own[1]) {
                    ++found;
                    continue;
                }
                if (!take(old_stage[k], old_group[k])) {
                    cut = true;
                    break;
                }
            }
            if (i + 1 < acts.size() && (found != own_count || cut))
                record(i + 1, old_stage, old_size);
        }
        if (!acts.empty()) record(0, stage, size);
    }

    /// The number of windows kept (actions whose window differs from the previous action's,
    /// and the first action).
    [[nodiscard]] constexpr std::size_t changes() const noexcept { return change_at_.size(); }
    /// The `c`-th window kept, counting from the last action: the window of action `at(c)`,
    /// `size(c)` stages starting at `data(c)`.
    [[nodiscard]] constexpr std::size_t at(std::size_t c) const noexcept { return change_at_[c]; }
    [[nodiscard]] constexpr const int* data(std::size_t c) const noexcept {
        return &change_stages_[c * cap_];
    }
    [[nodiscard]] constexpr std::size_t size(std::size_t c) const noexcept {
        return change_size_[c];
    }

  private:
    // A window holds at most prefetch + 1 stages (an overlapped pair at the cut), and never
    // more than the rank's distinct stages, so a huge `prefetch` costs no more memory than
    // "all of them". Only a large `prefetch` is worth the scan that counts them (a rank with
    // fewer stages than `prefetch` is scanned to its end). Counting stops at `prefetch`
    // distinct stages, and only the marks set are cleared, so the cost does not grow with the
    // number of stages of the whole pipeline.
    constexpr std::size_t window_capacity(const std::vector<action>& acts, int prefetch) {
        const auto want = static_cast<std::size_t>(prefetch) + 1;
        if (want <= 16) return want;
        touched_.clear();
        for (const action& a : acts) {
            for_each_part(a, [&](const action& p) {
                const auto st = static_cast<std::size_t>(p.stage());
                if (st >= seen_.size()) seen_.resize(st + 1, 0);
                if (!seen_[st]) touched_.push_back(st);
                seen_[st] = 1;
            });
            if (touched_.size() + 1 >= want) break;
        }
        for (const std::size_t st : touched_) seen_[st] = 0;
        const std::size_t distinct = touched_.size();
        return want < distinct + 1 ? want : distinct + 1;
    }

    constexpr void record(std::size_t at, const int* w, std::size_t n) {
        change_at_.push_back(at);
        change_size_.push_back(n);
        for (std::size_t k = 0; k < cap_; ++k) change_stages_.push_back(k < n ? w[k] : -1);
    }

    std::size_t cap_ = 0;
    std::vector<int> window_;         // the window being built, and a copy of the next one
    std::vector<std::size_t> groups_; // their groups
    std::vector<std::size_t> change_at_, change_size_;
    std::vector<int> change_stages_; // `cap_` per window kept
    std::vector<std::uint8_t> seen_;
    std::vector<std::size_t> touched_;
};

/// Buffers of the UNSHARD/RESHARD pass, kept from one rank to the next.
struct unshard_reshard_scratch {
    lookahead_windows windows;
    std::vector<int> fetch, evict;
    std::vector<action> acts; // for `unshard_reshard_row`
    rank_slots items;         // for `unshard_reshard_row`
};

/// One rank of `add_unshard_reshard` over its actions `acts` (idle slots already dropped):
/// calls `emit` with, before each action, the RESHARDs of the active stages that left its
/// window (in CPython set order, as PyTorch) and then the UNSHARDs of the window's stages not
/// yet active (in window order), then the action itself; at the end, the RESHARDs of what is
/// still active. Linear in the row length for a fixed `prefetch`.
template <class Emit>
constexpr void unshard_reshard_into(const std::vector<action>& acts, int prefetch,
                                    unshard_reshard_scratch& scratch, Emit&& emit) {
    lookahead_windows& windows = scratch.windows;
    windows.compute(acts, prefetch);
    std::vector<int>& fetch = scratch.fetch;
    std::vector<int>& evict = scratch.evict;
    py_int_set active;
    // After each step the active stages are exactly the window's, so only where the window
    // changes is there anything to do: the actions in between are passed through.
    std::size_t i = 0;
    for (std::size_t c = windows.changes(); c-- > 0;) {
        for (const std::size_t at = windows.at(c); i < at; ++i) emit(acts[i]);
        const int* w = windows.data(c);
        const std::size_t n = windows.size(c);
        auto in_window = [&](int stage) {
            for (std::size_t k = 0; k < n; ++k)
                if (w[k] == stage) return true;
            return false;
        };
        fetch.clear();
        evict.clear();
        for (std::size_t k = 0; k < n; ++k)
            if (!active.contains(w[k])) fetch.push_back(w[k]);
        // Every active stage outside the window is evicted; skip the table walk when none is.
        if (active.size() > n - fetch.size())
            active.for_each([&](int stage) {
                if (!in_window(stage)) evict.push_back(stage);
            });
        for (const int stage : evict) {
            active.erase(stage);
            emit(action::reshard(stage));
        }
        for (const int stage : fetch) {
            active.insert(stage);
            emit(action::unshard(stage));
        }
    }
    for (; i < acts.size(); ++i) emit(acts[i]);
    evict.clear();
    active.for_each([&](int stage) { evict.push_back(stage); });
    for (const int stage : evict) emit(action::reshard(stage));
}

/// One rank of `add_unshard_reshard`: drops idle slots, then `unshard_reshard_into`. The row
/// is built in `scratch` and returned at its exact size.
template <class Row>
constexpr rank_slots unshard_reshard_row(const Row& row, int prefetch,
                                         unshard_reshard_scratch& scratch) {
    compact_into(row, scratch.acts);
    rank_slots& items = scratch.items;
    items.clear();
    unshard_reshard_into(scratch.acts, prefetch, scratch,
                         [&](const action& a) { items.push_back(a); });
    return rank_slots(items.begin(), items.end());
}

} // namespace detail

/// Inserts FSDP `UNSHARD`/`RESHARD` actions into each rank, as PyTorch's
/// `_add_unshard_reshard(actions, max_active_stages = prefetch)` does: before each compute
/// action, the rank keeps unsharded exactly the next `prefetch` distinct stages it will compute
/// (one more when an `OVERLAP_F_B` brings in two at once), resharding stages that left that
/// window and then unsharding the ones that entered it; after the last action it reshards the
/// rest. Idle slots are dropped. The RESHARD order of one step follows CPython's set iteration,
/// so the result equals PyTorch's in every case.
/// Requires: one row per rank, `prefetch >= 1`. The input is normally compute-only; other
/// actions are kept and count as actions of their stage.
/// Complexity: O(actions * prefetch).
template <order_range R>
[[nodiscard]] constexpr order add_unshard_reshard(const R& rows, const config& cfg,
                                                  int prefetch = 3) {
    PPSCHED_EXPECTS(prefetch >= 1, "ppsched::add_unshard_reshard: prefetch must be >= 1 (got ",
                    prefetch, ")");
    std::vector<rank_slots> out;
    detail::reserve_for(out, rows);
    detail::unshard_reshard_scratch scratch;
    for (const auto& row : rows) out.push_back(detail::unshard_reshard_row(row, prefetch, scratch));
    PPSCHED_EXPECTS(out.size() == static_cast<std::size_t>(cfg.ranks),
                    "ppsched::add_unshard_reshard: the order has ", out.size(),
                    " rows but the configuration has ", cfg.ranks, " ranks");
    return order(cfg, std::move(out));
}

/// `add_unshard_reshard(o, o.cfg(), prefetch)`.
[[nodiscard]] constexpr order add_unshard_reshard(const order& o, int prefetch = 3) {
    return add_unshard_reshard(o, o.cfg(), prefetch);
}

} // namespace ppsched
