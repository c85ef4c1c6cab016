#pragma once
/// \file algorithms/detail/action_table.hpp
/// Dense tables indexed by (kind plane, stage, microbatch), so that per-action bookkeeping in
/// constexpr algorithms (validation, simulation) needs no hash map.

#include <cstddef>
#include <iterator>
#include <ranges>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"

namespace ppsched::detail {

/// The planes of a (kind, stage, microbatch) table, the compute kinds first: a table of the
/// first `compute_plane_count` planes serves compute-only orders, and the SEND/RECV planes
/// can be appended after them (planes are outermost).
enum action_plane_id : int {
    plane_f = 0,  ///< F
    plane_i,      ///< I
    plane_w,      ///< W
    plane_b,      ///< B
    plane_send_f, ///< SEND_F
    plane_recv_f, ///< RECV_F
    plane_send_b, ///< SEND_B
    plane_recv_b, ///< RECV_B
};

/// Number of planes: F, I, W, B, SEND_F, RECV_F, SEND_B, RECV_B.
inline constexpr int action_plane_count = 8;
/// Number of compute planes: F, I, W, B.
inline constexpr int compute_plane_count = 4;

/// The plane of a kind that names a microbatch (OVERLAP_F_B excluded: use its parts), or -1.
[[nodiscard]] constexpr int action_plane(action_kind k) noexcept {
    switch (k) {
    case action_kind::forward:
        return plane_f;
    case action_kind::backward_input:
        return plane_i;
    case action_kind::backward_weight:
        return plane_w;
    case action_kind::full_backward:
        return plane_b;
    case action_kind::send_f:
        return plane_send_f;
    case action_kind::recv_f:
        return plane_recv_f;
    case action_kind::send_b:
        return plane_send_b;
    case action_kind::recv_b:
        return plane_recv_b;
    default:
        return -1;
    }
}

/// The plane of a compute kind (F, I, W, B), or -1 for any other kind.
[[nodiscard]] constexpr int compute_plane(action_kind k) noexcept {
    const int p = action_plane(k);
    return p < compute_plane_count ? p : -1;
}

/// Tables with at most this many (stage, microbatch) cells are always affordable.
inline constexpr std::size_t small_table_cells = std::size_t{1} << 16;

/// The bounded-resources rule for dense (stage, microbatch) tables (docs/design.md): an
/// algorithm allocates `cells` = stages x microbatches of its configuration only when that is
/// small or when the order holds at least as many slots (`slots`: actions and idle slots, what
/// the input holds). A valid order always does (a forward and a backward per cell, one per
/// cell with the dual placement's halves), so a configuration naming far more microbatches
/// than the order holds is rejected before any table is sized from it.
[[nodiscard]] constexpr bool table_affordable(std::size_t cells, std::size_t slots) noexcept {
    return cells <= small_table_cells || cells <= slots;
}

/// `table_affordable` for an order range under `cfg`: reads only the row sizes (for sized
/// rows, O(ranks)), and only while the table is not known to be affordable.
template <class Rows>
[[nodiscard]] constexpr bool tables_affordable(const Rows& rows, const config& cfg) noexcept {
    const std::size_t cells =
        static_cast<std::size_t>(cfg.num_stages()) * static_cast<std::size_t>(cfg.microbatches);
    if (cells <= small_table_cells) return true;
    std::size_t slots = 0;
    for (const auto& row : rows) {
        slots += static_cast<std::size_t>(std::ranges::distance(row));
        if (slots >= cells) return true;
    }
    return false;
}

/// Index arithmetic of a (plane, stage, microbatch) table.
struct action_table_index {
    int stages = 0;
    int microbatches = 0;
    [[nodiscard]] constexpr std::size_t size() const noexcept {
        return static_cast<std::size_t>(action_plane_count) * static_cast<std::size_t>(stages) *
               static_cast<std::size_t>(microbatches);
    }
    [[nodiscard]] constexpr std::size_t operator()(int plane, int stage, int mb) const noexcept {
        return (static_cast<std::size_t>(plane) * static_cast<std::size_t>(stages) +
                static_cast<std::size_t>(stage)) *
                   static_cast<std::size_t>(microbatches) +
               static_cast<std::size_t>(mb);
    }
    /// Whether an action part can be indexed (stage and microbatch in range).
    [[nodiscard]] constexpr bool fits(const action& a) const noexcept {
        return a.stage() < stages && a.microbatch() >= 0 && a.microbatch() < microbatches &&
               action_plane(a.kind()) >= 0;
    }
    [[nodiscard]] constexpr std::size_t operator()(const action& a) const noexcept {
        return (*this)(action_plane(a.kind()), a.stage(), a.microbatch());
    }
};

} // namespace ppsched::detail
