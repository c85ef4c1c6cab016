#pragma once
/// \file algorithms/add_unshard_reshard.hpp
/// `add_unshard_reshard(order, prefetch = 3)`: inserts FSDP `UNSHARD`/`RESHARD` actions the way
/// PyTorch's `_add_unshard_reshard` does.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/detail/lowering.hpp"
#include "ppsched/detail/py_int_set.hpp"
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
class lookahead_windows {
  public:
    constexpr lookahead_windows(const std::vector<action>& acts, int prefetch)
        : cap_(window_capacity(acts, prefetch)), stages_(acts.size() * cap_, 0),
          sizes_(acts.size(), 0) {
        // group[k]: the action index at which stage k of a window first appears. A window is
        // cut only between groups, which is PyTorch's "stop after this action" rule.
        std::vector<std::size_t> groups(acts.size() * cap_, 0);
        const auto limit = static_cast<std::size_t>(prefetch);
        for (std::size_t i = acts.size(); i-- > 0;) {
            std::size_t n = 0;
            std::size_t* g = &groups[i * cap_];
            int* w = &stages_[i * cap_];
            auto take = [&](int stage, std::size_t group) {
                if (n >= limit && group != g[n - 1]) return false;
                w[n] = stage;
                g[n] = group;
                ++n;
                return true;
            };
            int own[2] = {-1, -1};
            int own_count = 0;
            for_each_part(acts[i], [&](const action& p) {
                if (own_count == 0 || own[0] != p.stage()) own[own_count++] = p.stage();
            });
            for (int k = 0; k < own_count; ++k) (void)take(own[k], i);
            if (i + 1 < acts.size()) {
                const int* nw = &stages_[(i + 1) * cap_];
                const std::size_t* ng = &groups[(i + 1) * cap_];
                for (std::size_t k = 0; k < sizes_[i + 1]; ++k) {
                    if (nw[k] == own[0] || nw[k] == own[1]) continue;
                    if (!take(nw[k], ng[k])) break;
                }
            }
            sizes_[i] = n;
        }
    }

    /// The window of action `i`: `size(i)` stages starting at `data(i)`.
    [[nodiscard]] constexpr const int* data(std::size_t i) const noexcept {
        return &stages_[i * cap_];
    }
    [[nodiscard]] constexpr std::size_t size(std::size_t i) const noexcept { return sizes_[i]; }

  private:
    // A window never holds more than the rank's distinct stages, so a huge `prefetch` costs no
    // more memory than "all of them"; otherwise prefetch + 1 (an overlapped pair at the cut).
    static constexpr std::size_t window_capacity(const std::vector<action>& acts, int prefetch) {
        std::vector<std::uint8_t> seen;
        std::size_t distinct = 0;
        for (const action& a : acts)
            for_each_part(a, [&](const action& p) {
                const auto st = static_cast<std::size_t>(p.stage());
                if (st >= seen.size()) seen.resize(st + 1, 0);
                distinct += seen[st] ? 0 : 1;
                seen[st] = 1;
            });
        const auto want = static_cast<std::size_t>(prefetch) + 1;
        return want < distinct + 1 ? want : distinct + 1;
    }

    std::size_t cap_;
    std::vector<int> stages_;
    std::vector<std::size_t> sizes_;
};

/// One rank of `add_unshard_reshard`: drops idle slots, emits before each action the RESHARDs
/// of the active stages that left its window (in CPython set order, as PyTorch) and then the
/// UNSHARDs of the window's stages not yet active (in window order); at the end, reshards what
/// is still active. Linear in the row length for a fixed `prefetch`.
template <class Row>
constexpr rank_slots unshard_reshard_row(const Row& row, int prefetch) {
    std::vector<action> acts;
    reserve_for(acts, row);
    for (const auto& s : row)
        if (const action* a = slot_action(s)) acts.push_back(*a);
    const lookahead_windows windows(acts, prefetch);

    rank_slots out;
    out.reserve(acts.size() + acts.size() / 2 + 8);
    py_int_set active;
    std::vector<int> fetch, evict;
    for (std::size_t i = 0; i < acts.size(); ++i) {
        const int* w = windows.data(i);
        const std::size_t n = windows.size(i);
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
            out.push_back(action::reshard(stage));
        }
        for (const int stage : fetch) {
            active.insert(stage);
            out.push_back(action::unshard(stage));
        }
        out.push_back(acts[i]);
    }
    evict.clear();
    active.for_each([&](int stage) { evict.push_back(stage); });
    for (const int stage : evict) out.push_back(action::reshard(stage));
    return out;
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
    for (const auto& row : rows) out.push_back(detail::unshard_reshard_row(row, prefetch));
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
