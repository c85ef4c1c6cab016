#pragma once
/// \file io/detail/chart_colors.hpp
/// How the pictures colour and name action kinds: one colour-blind-friendly hue per kind, a
/// lighter shade per stage chunk, a colour per rank on memory charts, the legend's names and
/// order.

#include <string>
#include <string_view>

#include "ppsched/action.hpp"

namespace ppsched::detail::svg {

struct rgb {
    int r = 0, g = 0, b = 0;
};

// Colour-blind-friendly hues (Tableau 10), one per kind.
[[nodiscard]] inline rgb kind_color(action_kind k) noexcept {
    switch (k) {
    case action_kind::forward:
        return {0x4c, 0x78, 0xa8};
    case action_kind::backward_input:
        return {0xf5, 0x85, 0x18};
    case action_kind::backward_weight:
        return {0x54, 0xa2, 0x4b};
    case action_kind::full_backward:
        return {0xe4, 0x57, 0x56};
    case action_kind::overlap_f_b:
        return {0x8e, 0x5a, 0x9e};
    case action_kind::send_f:
    case action_kind::send_b:
        return {0x44, 0x44, 0x44};
    case action_kind::recv_f:
    case action_kind::recv_b:
        return {0xbb, 0xbb, 0xbb};
    case action_kind::unshard:
        return {0x3a, 0x9c, 0x96};
    case action_kind::reshard:
        return {0x9f, 0xd4, 0xcf};
    default: // reduce_grad
        return {0xe0, 0xb1, 0x2a};
    }
}

/// `c` mixed with white: `t` = 0 keeps it, 1 gives white.
[[nodiscard]] inline rgb lighten(rgb c, double t) noexcept {
    auto mix = [t](int v) { return v + static_cast<int>((255 - v) * t + 0.5); };
    return {mix(c.r), mix(c.g), mix(c.b)};
}

/// The shade of stage chunk `chunk` of `chunks`: the first is the kind's own colour, the last
/// half-way to white, so chunks stay apart and text stays readable.
[[nodiscard]] inline rgb chunk_color(action_kind k, int chunk, int chunks) noexcept {
    const double t = chunks > 1 ? 0.5 * chunk / (chunks - 1) : 0.0;
    return lighten(kind_color(k), t);
}

[[nodiscard]] inline std::string hex(rgb c) {
    constexpr char digits[] = "0123456789abcdef";
    std::string s = "#";
    for (const int v : {c.r, c.g, c.b}) {
        s += digits[(v >> 4) & 0xF];
        s += digits[v & 0xF];
    }
    return s;
}

/// True when white text reads better than dark text on `c` (relative luminance, roughly).
[[nodiscard]] inline bool is_dark(rgb c) noexcept {
    return 0.299 * c.r + 0.587 * c.g + 0.114 * c.b < 150;
}

/// The colour of rank `r` of `ranks` on a memory chart: from blue through green to red.
[[nodiscard]] inline rgb rank_color(int r, int ranks) noexcept {
    const double t = ranks > 1 ? static_cast<double>(r) / (ranks - 1) : 0.0;
    const rgb a{0x1f, 0x77, 0xb4}, m{0x2c, 0xa0, 0x2c}, b{0xd6, 0x27, 0x28};
    auto mix = [](rgb p, rgb q, double u) {
        auto ch = [u](int x, int z) { return x + static_cast<int>((z - x) * u + 0.5); };
        return rgb{ch(p.r, q.r), ch(p.g, q.g), ch(p.b, q.b)};
    };
    return t < 0.5 ? mix(a, m, 2 * t) : mix(m, b, 2 * t - 1);
}

/// The legend name of a kind.
[[nodiscard]] inline std::string_view kind_name(action_kind k) noexcept {
    switch (k) {
    case action_kind::forward:
        return "forward (F)";
    case action_kind::backward_input:
        return "backward input (I)";
    case action_kind::backward_weight:
        return "backward weight (W)";
    case action_kind::full_backward:
        return "full backward (B)";
    case action_kind::overlap_f_b:
        return "overlapped F+B";
    case action_kind::send_f:
    case action_kind::send_b:
        return "SEND";
    case action_kind::recv_f:
    case action_kind::recv_b:
        return "RECV (posted to data arrival)";
    case action_kind::unshard:
        return "UNSHARD";
    case action_kind::reshard:
        return "RESHARD";
    default:
        return "REDUCE_GRAD";
    }
}

// Legend slots: the five compute kinds, then SEND, RECV, UNSHARD, RESHARD, REDUCE_GRAD.
[[nodiscard]] inline int legend_slot(action_kind k) noexcept {
    switch (k) {
    case action_kind::send_f:
    case action_kind::send_b:
        return 5;
    case action_kind::recv_f:
    case action_kind::recv_b:
        return 6;
    case action_kind::unshard:
        return 7;
    case action_kind::reshard:
        return 8;
    case action_kind::reduce_grad:
        return 9;
    default:
        return static_cast<int>(k);
    }
}

} // namespace ppsched::detail::svg
