#pragma once
// Constexpr properties of generated orders, shared by the per-schedule tests. Each is computed
// from the order alone, independently of how the schedule builds it.

#include <ppsched/action.hpp>
#include <ppsched/order.hpp>

#include <array>
#include <cstddef>

namespace ppsched_test {

/// Number of (sub-)actions of kind `k` on `rank` (an overlapped slot counts as its parts).
constexpr int count_kind(const ppsched::order& o, int rank, ppsched::action_kind k) {
    int n = 0;
    for (const auto& s : o.rank(rank)) {
        if (!s) continue;
        std::array<ppsched::action, 2> parts;
        const int c = s->parts(parts);
        for (int i = 0; i < c; ++i) n += parts[static_cast<std::size_t>(i)].kind() == k ? 1 : 0;
    }
    return n;
}

/// Number of (sub-)actions of kind `k` over all ranks.
constexpr int count_kind(const ppsched::order& o, ppsched::action_kind k) {
    int n = 0;
    for (int r = 0; r < o.cfg().ranks; ++r) n += count_kind(o, r, k);
    return n;
}

/// Number of overlapped (OVERLAP_F_B) slots on `rank`.
constexpr int overlap_count(const ppsched::order& o, int rank) {
    int n = 0;
    for (const auto& s : o.rank(rank)) n += (s && s->is_overlap()) ? 1 : 0;
    return n;
}

/// Peak number of microbatch activations alive on `rank`: a forward stores one, the backward
/// that completes the weight gradient (B, or W after I) frees it.
constexpr int peak_activations(const ppsched::order& o, int rank) {
    int live = 0, peak = 0;
    for (const auto& s : o.rank(rank)) {
        if (!s) continue;
        std::array<ppsched::action, 2> parts;
        const int c = s->parts(parts);
        for (int i = 0; i < c; ++i) {
            const auto k = parts[static_cast<std::size_t>(i)].kind();
            if (k == ppsched::action_kind::forward) ++live;
            if (k == ppsched::action_kind::full_backward ||
                k == ppsched::action_kind::backward_weight)
                --live;
            peak = live > peak ? live : peak;
        }
    }
    return peak;
}

/// Number of idle slots before the first action of `rank`.
constexpr int leading_idle(const ppsched::order& o, int rank) {
    int n = 0;
    for (const auto& s : o.rank(rank)) {
        if (s) break;
        ++n;
    }
    return n;
}

/// Number of idle slots on `rank` (trailing ones included).
constexpr int idle_count(const ppsched::order& o, int rank) {
    int n = 0;
    for (const auto& s : o.rank(rank)) n += s ? 0 : 1;
    return n;
}

} // namespace ppsched_test
