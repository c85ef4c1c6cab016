#pragma once
/// \file detail/lowering.hpp
/// Helpers shared by the lowering passes (algorithms/add_*.hpp, merge_bw.hpp, lower.hpp).

#include <array>
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched::detail {

/// Copies an order range into an `order` for `cfg` (slots kept, idle included), checking that
/// it has one row per rank. `api` names the caller in the error message.
template <order_range R>
[[nodiscard]] constexpr order copy_rows(const R& rows, const config& cfg, std::string_view api) {
    std::vector<rank_slots> out;
    for (const auto& row : rows) {
        rank_slots r;
        for (const auto& s : row) {
            const action* a = slot_action(s);
            r.push_back(a ? slot(*a) : slot());
        }
        out.push_back(std::move(r));
    }
    PPSCHED_EXPECTS(out.size() == static_cast<std::size_t>(cfg.ranks), api, ": the order has ",
                    out.size(), " rows but the configuration has ", cfg.ranks, " ranks");
    return order(cfg, std::move(out));
}

/// Visits `a` itself, or both sub-actions of an OVERLAP_F_B (forward first, as PyTorch's
/// `sub_actions`).
template <class F>
constexpr void for_each_part(const action& a, F&& f) {
    std::array<action, 2> parts;
    const int n = a.parts(parts);
    for (int i = 0; i < n; ++i) f(parts[static_cast<std::size_t>(i)]);
}

/// Requires that a row holds only compute actions (and idle slots), as PyTorch's
/// `_prepare_schedule_with_comms` does for a compute-only order.
constexpr void expect_compute_only(const order& o, std::string_view api) {
    for (std::size_t r = 0; r < o.size(); ++r) {
        for (std::size_t i = 0; i < o[r].size(); ++i) {
            const action* a = o[r][i].get();
            PPSCHED_EXPECTS(a == nullptr || is_compute(a->kind()), api,
                            ": expected a compute-only order but rank ", r, " has ",
                            code(a ? a->kind() : action_kind::forward), " at position ", i,
                            " (lowered orders cannot be lowered again)");
        }
    }
}

} // namespace ppsched::detail
