#pragma once
/// \file algorithms/detail/lowering.hpp
/// Helpers shared by the lowering passes (algorithms/add_*.hpp, merge_bw.hpp, lower.hpp).

#include <array>
#include <ranges>
#include <cstddef>
#include <string_view>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched::detail {

/// Reserves room for the elements of `range` (plus `extra`) when its size is known in advance
/// (a sized range), so that copying it does not grow `v` step by step.
template <class T, class Range>
constexpr void reserve_for(std::vector<T>& v, const Range& range, std::size_t extra = 0) {
    if constexpr (std::ranges::sized_range<const Range>)
        v.reserve(static_cast<std::size_t>(std::ranges::size(range)) + extra);
}

/// Replaces `acts` with the actions of `row`, idle slots dropped (`acts` keeps its capacity,
/// so one buffer serves rank after rank).
template <class Row>
constexpr void compact_into(const Row& row, std::vector<action>& acts) {
    acts.clear();
    reserve_for(acts, row);
    for (const auto& s : row)
        if (const action* a = slot_action(s)) acts.push_back(*a);
}

/// Copies an order range into an `order` for `cfg` (slots kept, idle included), checking that
/// it has one row per rank. `api` names the caller in the error message.
template <order_range R>
[[nodiscard]] constexpr order copy_rows(const R& rows, const config& cfg, std::string_view api) {
    std::vector<rank_slots> out;
    reserve_for(out, rows);
    for (const auto& row : rows) {
        rank_slots r;
        reserve_for(r, row);
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

/// Requires one row per rank: `api` names the caller in the error message.
template <order_range R>
constexpr void expect_row_count(const R& rows, const config& cfg, std::string_view api) {
    std::size_t n = 0;
    for (const auto& row : rows) {
        (void)row;
        ++n;
    }
    PPSCHED_EXPECTS(n == static_cast<std::size_t>(cfg.ranks), api, ": the order has ", n,
                    " rows but the configuration has ", cfg.ranks, " ranks");
}

/// Requires that action `a` (or idle, nullptr) at `position` of rank `r` is a compute action,
/// as PyTorch's `_prepare_schedule_with_comms` does for a compute-only order.
constexpr void expect_compute(const action* a, std::size_t r, std::size_t position,
                              std::string_view api) {
    PPSCHED_EXPECTS(a == nullptr || is_compute(a->kind()), api,
                    ": expected a compute-only order but rank ", r, " has ",
                    code(a ? a->kind() : action_kind::forward), " at position ", position,
                    " (lowered orders cannot be lowered again)");
}

/// Requires that every row holds only compute actions (and idle slots).
template <order_range R>
constexpr void expect_compute_only(const R& rows, std::string_view api) {
    std::size_t r = 0;
    for (const auto& row : rows) {
        std::size_t i = 0;
        for (const auto& s : row) expect_compute(slot_action(s), r, i++, api);
        ++r;
    }
}

} // namespace ppsched::detail
