#pragma once
/// \file algorithms/merge_bw.hpp
/// `merge_bw(order)`: fuses an `I` directly followed by the `W` of the same stage and
/// microbatch into one `B`, as PyTorch's `_merge_bw` does.

#include <cstddef>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/algorithms/detail/lowering.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {
namespace detail {

/// Fuses, in place, each `I` of `acts` directly followed by the `W` of the same stage and
/// microbatch into one `B`. Linear (PyTorch's version pops from the front of a list and is
/// quadratic).
constexpr void merge_bw_in_place(std::vector<action>& acts) {
    std::size_t w = 0;
    for (std::size_t i = 0; i < acts.size(); ++i) {
        const action a = acts[i];
        if (a.kind() == action_kind::backward_input && i + 1 < acts.size()) {
            const action& b = acts[i + 1];
            if (b.kind() == action_kind::backward_weight && b.stage() == a.stage() &&
                b.microbatch() == a.microbatch()) {
                acts[w++] = action::full_backward(a.stage(), a.microbatch());
                ++i;
                continue;
            }
        }
        acts[w++] = a;
    }
    acts.resize(w);
}

/// One rank of `merge_bw`. Idle slots are dropped first, so an `I` and a `W` separated only by
/// idle slots are adjacent (as in PyTorch). Linear in the row length.
template <class Row>
constexpr rank_slots merge_bw_row(const Row& row) {
    std::vector<action> acts;
    compact_into(row, acts);
    merge_bw_in_place(acts);
    return rank_slots(acts.begin(), acts.end());
}

} // namespace detail

/// Replaces each `I` immediately followed (idle slots aside) by the `W` of the same stage and
/// microbatch with one `B`, as PyTorch's `_merge_bw` does; every other action is kept in place
/// and idle slots are dropped. An `I` inside an `OVERLAP_F_B` is not merged.
/// Requires: one row per rank. Complexity: linear in the number of slots.
template <order_range R>
[[nodiscard]] constexpr order merge_bw(const R& rows, const config& cfg) {
    std::vector<rank_slots> out;
    for (const auto& row : rows) out.push_back(detail::merge_bw_row(row));
    PPSCHED_EXPECTS(out.size() == static_cast<std::size_t>(cfg.ranks),
                    "ppsched::merge_bw: the order has ", out.size(),
                    " rows but the configuration has ", cfg.ranks, " ranks");
    return order(cfg, std::move(out));
}

/// `merge_bw(o, o.cfg())`.
[[nodiscard]] constexpr order merge_bw(const order& o) { return merge_bw(o, o.cfg()); }

} // namespace ppsched
