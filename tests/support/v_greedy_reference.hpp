#pragma once
// A direct transcription of the controllable-memory V construction (V-Half, V-Min) as the
// authors' `zbv_greedy.py` runs it, from the description in docs/schedules.md: every candidate
// slot is checked by recomputing the rank's whole peak memory, a W's dependency by sorting
// the rank's backwards. Quadratic and slow on purpose: it is the oracle the fast
// implementation (ppsched/schedules/detail/v_greedy.hpp) is compared with.

#include <algorithm>
#include <array>
#include <cstddef>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace ppsched_test {

/// Per rank, per type (0 F, 1 f, 2 B, 3 b, then W), the slot of each microbatch.
using v_plan = std::vector<std::vector<std::vector<int>>>;

namespace detail {

inline int last_slot(const std::vector<std::vector<int>>& lists) {
    int last = -1;
    for (const auto& l : lists)
        for (int x : l) last = std::max(last, x);
    return last;
}

// The W of one rank: each B/b makes one pending, each free slot takes one (with `split`, a W
// of B first); the rest after the last slot, W of B first.
inline std::vector<std::vector<int>> with_w(std::vector<std::vector<int>> lists, bool split) {
    lists.resize(4);
    std::map<int, int> type_at;
    for (int ty = 0; ty < 4; ++ty)
        for (int x : lists[static_cast<std::size_t>(ty)]) type_at[x] = ty;
    const int last = last_slot(lists);
    const int kinds = split ? 2 : 1;
    std::vector<std::vector<int>> ws(static_cast<std::size_t>(kinds));
    std::array<int, 2> pending{0, 0};
    for (int t = 0; t <= last; ++t) {
        const auto it = type_at.find(t);
        if (it != type_at.end()) {
            if (it->second >= 2) ++pending[split ? static_cast<std::size_t>(it->second - 2) : 0];
            continue;
        }
        for (std::size_t w = 0; w < ws.size(); ++w)
            if (pending[w] > 0) {
                ws[w].push_back(t);
                --pending[w];
                break;
            }
    }
    int t = last;
    for (std::size_t w = 0; w < ws.size(); ++w)
        while (pending[w] > 0) {
            ws[w].push_back(++t);
            --pending[w];
        }
    for (auto& w : ws) lists.push_back(w);
    return lists;
}

// Peak memory of one rank: F/f +1, W -1; without W lists a free slot retires a pending W.
inline int peak(const std::vector<std::vector<int>>& lists) {
    const bool explicit_w = lists.size() > 4;
    std::map<int, int> type_at;
    for (std::size_t ty = 0; ty < lists.size(); ++ty)
        for (int x : lists[ty]) type_at[x] = static_cast<int>(ty);
    const int last = last_slot(lists);
    int cur = 0, pk = 0, pending = 0;
    for (int t = 0; t <= last; ++t) {
        const auto it = type_at.find(t);
        if (it != type_at.end()) {
            const int ty = it->second;
            cur += ty < 2 ? 1 : ty >= 4 ? -1 : 0;
            if (ty == 2 || ty == 3) ++pending;
        } else if (!explicit_w && pending > 0) {
            --cur;
            --pending;
        }
        pk = std::max(pk, cur);
    }
    return pk;
}

// Every element by (slot, rank, type, microbatch).
inline std::vector<std::array<int, 4>> global_order(const v_plan& plan) {
    std::vector<std::array<int, 4>> items;
    for (std::size_t r = 0; r < plan.size(); ++r)
        for (std::size_t ty = 0; ty < plan[r].size(); ++ty)
            for (std::size_t mb = 0; mb < plan[r][ty].size(); ++mb)
                items.push_back({plan[r][ty][mb], static_cast<int>(r), static_cast<int>(ty),
                                 static_cast<int>(mb)});
    std::sort(items.begin(), items.end());
    return items;
}

// As-soon-as-possible start times with unit durations, in the global order.
inline v_plan squeeze(const v_plan& plan) {
    const int p = static_cast<int>(plan.size());
    std::map<std::tuple<int, int, int>, int> fin;
    std::vector<int> free_at(plan.size(), 0);
    v_plan start = plan;
    for (const auto& [t, r, ty, mb] : global_order(plan)) {
        int s = free_at[static_cast<std::size_t>(r)];
        auto dep = [&](int rr, int tt, int mm) { s = std::max(s, fin.at({rr, tt, mm})); };
        if ((ty == 0 || ty == 2) && r > 0) dep(r - 1, ty, mb);
        if ((ty == 1 || ty == 3) && r + 1 < p) dep(r + 1, ty, mb);
        if (ty > 0 && ty < 4) dep(r, ty - 1, mb);
        if (mb > 0) dep(r, ty, mb - 1);
        fin[{r, ty, mb}] = s + 1;
        free_at[static_cast<std::size_t>(r)] = s + 1;
        start[static_cast<std::size_t>(r)][static_cast<std::size_t>(ty)]
             [static_cast<std::size_t>(mb)] = s;
    }
    return start;
}

inline v_plan reorder(v_plan plan, bool explicit_w, int m) {
    if (explicit_w)
        for (auto& lists : plan) lists = with_w(lists, false);
    int limit = 0;
    for (const auto& lists : plan) limit = std::max(limit, peak(lists));
    const int p = static_cast<int>(plan.size());
    std::vector<std::set<int>> occupied(plan.size());
    int phase = 0;
    for (const auto& [t, r, ty, mb] : global_order(plan)) {
        auto& lists = plan[static_cast<std::size_t>(r)];
        auto slot = [&](int rr, int tt, int mm) -> int& {
            return plan[static_cast<std::size_t>(rr)][static_cast<std::size_t>(tt)]
                       [static_cast<std::size_t>(mm)];
        };
        if (ty == 3 && r == 0 && phase == 0) phase = 1;
        if (phase == 1) {
            if (ty == 0 && mb == m - 1) phase = 2;
            occupied[static_cast<std::size_t>(r)].insert(t);
            continue;
        }
        if (phase == 0 && !explicit_w) {
            occupied[static_cast<std::size_t>(r)].insert(t);
            continue;
        }
        int lo = -1;
        if ((ty == 0 || ty == 2) && r > 0) lo = std::max(lo, slot(r - 1, ty, mb));
        if ((ty == 1 || ty == 3) && r + 1 < p) lo = std::max(lo, slot(r + 1, ty, mb));
        if (ty > 0 && ty < 4) lo = std::max(lo, slot(r, ty - 1, mb));
        if (ty == 4) {
            std::vector<int> backwards = lists[2];
            backwards.insert(backwards.end(), lists[3].begin(), lists[3].end());
            std::sort(backwards.begin(), backwards.end());
            lo = std::max(lo, backwards[static_cast<std::size_t>(mb)]);
        }
        if (mb > 0) lo = std::max(lo, slot(r, ty, mb - 1));
        ++lo;
        int placed = t;
        for (int c = lo; c < t; ++c) {
            if (occupied[static_cast<std::size_t>(r)].count(c)) continue;
            slot(r, ty, mb) = c;
            if (peak(lists) <= limit) {
                placed = c;
                break;
            }
        }
        slot(r, ty, mb) = placed;
        occupied[static_cast<std::size_t>(r)].insert(placed);
    }
    if (!explicit_w)
        for (auto& lists : plan) lists = with_w(lists, false);
    return squeeze(plan);
}

} // namespace detail

/// The final slot plan of V-Half (`half`) or V-Min: 4 computation types, then the W of B and
/// the W of b.
inline v_plan v_greedy_reference(int p, int m, bool half) {
    v_plan plan(static_cast<std::size_t>(p));
    for (int r = 0; r < p; ++r) {
        std::array<int, 4> off{};
        if (half) {
            const int g = p % 2 == 0 ? 3 : 0;
            off = {2 * r, 3 * p - 2 - r, 3 * p + g + 2 * r - 1, 6 * p + g - 2 - r};
        } else {
            const int g = p % 3 == 0 ? 2 : 0;
            off = {r, 2 * p - 1 - r, 2 * p + g + r, 4 * p + g - 1 - r};
        }
        auto& lists = plan[static_cast<std::size_t>(r)];
        lists.resize(4);
        for (std::size_t ty = 0; ty < 4; ++ty)
            for (int k = 0; k < m; ++k) lists[ty].push_back(off[ty] + 6 * k);
    }
    plan = detail::reorder(plan, true, m);
    for (auto& lists : plan) lists.resize(4);
    plan = detail::reorder(plan, false, m);
    for (auto& lists : plan) lists = detail::with_w(lists, true);
    return plan;
}

} // namespace ppsched_test
