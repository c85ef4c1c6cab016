#pragma once
/// \file schedules/detail/v_greedy.hpp
/// The construction behind `v_half` and `v_min` (Qi et al., "Pipeline Parallelism with
/// Controllable Memory", NeurIPS 2024, arXiv:2405.15362; the authors' `zbv_greedy.py`), written
/// from a description of that algorithm (docs/schedules.md).
///
/// On a grid of unit time slots, every rank repeats a building block of period 6 whose
/// offsets fix the memory: one microbatch enters each of the four computations of a rank per
/// period, F (forward of chunk 0), f (forward of chunk 1), B (input gradient of chunk 1),
/// b (input gradient of chunk 0), and the two free slots of a period take the weight
/// gradients W. Two "squeeze" passes then move actions into earlier free slots as long as no
/// rank's peak memory exceeds the block's: the first (W explicit) tightens the warm-up and the
/// cool-down, the second (W implicit: a free slot retires one pending W) the cool-down again.
/// After each pass an as-soon-as-possible replay with unit times renumbers the slots. The
/// result does not depend on costs.
///
/// The authors' passes recompute a rank's peak memory for every candidate slot, which is
/// quadratic in the microbatches. This implementation finds the same slots faster:
/// - with W explicit, moving an action from slot t to c changes the memory only on [c, t)
///   (+1 for F/f, -1 for W, 0 for B/b), so an F/f fits at c exactly when no slot of [c, t)
///   is already at the limit: a backwards scan over [lo, t) finds the first feasible c;
/// - with W implicit, only cool-down actions move; the walk that retires pending W is kept
///   per slot (memory, pending W, prefix maximum), so a candidate is checked by replaying the
///   rank from c to its last slot, a stretch of O(ranks) slots.
/// The tests compare it with a direct transcription of the authors' passes over a wide sweep.
/// Complexity: O(actions + ranks^3) time (the cool-down is O(ranks) slots per rank, each
/// candidate replays it), O(actions) memory; no sort (the global slot order is read off the
/// per-rank slot arrays).

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched::detail {

/// Which controllable-memory V schedule to build.
enum class v_greedy_kind : std::uint8_t { half, min };

/// The slot plan of one rank: `slot[ty * m + mb]` for the computation types
/// 0 F, 1 f, 2 B, 3 b, then the W: with `split`, 4 is the W of B and 5 the W of b (m each);
/// otherwise type 4 holds all 2m W in slot order.
class v_greedy {
  public:
    static constexpr int period = 6;

    constexpr v_greedy(int ranks, int microbatches, v_greedy_kind kind)
        : p_(ranks), m_(microbatches), kind_(kind) {}

    /// Runs the construction; `slots()` then holds, per rank, the final slot of every
    /// element (4 computation types, then the split W).
    constexpr void build() {
        block();
        reorder_explicit();
        reorder_implicit();
        for (int r = 0; r < p_; ++r) add_w(r, true);
    }
    /// Per rank, the slot of element `ty * microbatches + mb` (after `build`).
    [[nodiscard]] constexpr const std::vector<std::vector<int>>& slots() const noexcept {
        return slots_;
    }

    /// The order of `build()` for `cfg` (two stages per rank, V placement).
    constexpr order make_order(const config& cfg) {
        build();
        fill_occupancy();
        order o(cfg);
        for (int r = 0; r < p_; ++r) {
            const int s0 = cfg.rank_to_stage(r, 0), s1 = cfg.rank_to_stage(r, 1);
            auto& row = o.rank(r);
            row.reserve(6 * static_cast<std::size_t>(m_));
            for (const int e : occ_[u(r)]) {
                if (e < 0) continue;
                const int ty = e / m_, mb = e % m_;
                const action a = ty == 0   ? action::forward(s0, mb)
                                 : ty == 1 ? action::forward(s1, mb)
                                 : ty == 2 ? action::backward_input(s1, mb)
                                 : ty == 3 ? action::backward_input(s0, mb)
                                 : ty == 4 ? action::backward_weight(s1, mb)
                                           : action::backward_weight(s0, mb);
                row.push_back(a);
            }
        }
        return o;
    }

  private:
    [[nodiscard]] static constexpr std::size_t u(int x) noexcept {
        return static_cast<std::size_t>(x);
    }
    [[nodiscard]] static constexpr int max2(int a, int b) noexcept { return a < b ? b : a; }

    [[nodiscard]] constexpr int& at(int r, int ty, int mb) noexcept {
        return slots_[u(r)][u(ty * m_ + mb)];
    }
    [[nodiscard]] constexpr int type_of(int e) const noexcept {
        const int ty = e / m_;
        return ty > 4 && !split_ ? 4 : ty;
    }
    [[nodiscard]] constexpr int mb_of(int e) const noexcept { return e - type_of(e) * m_; }
    [[nodiscard]] constexpr int last_slot(int r) const noexcept {
        int last = -1;
        for (const int x : slots_[u(r)]) last = max2(last, x);
        return last;
    }

    // The building block: mb k of type ty at offset[ty] + 6k. The offsets leave the residues
    // mod 6 of the four types distinct, so two slots of each period stay free for W.
    constexpr void block() {
        // (assign with a value: value-initialising growth is not constexpr on clang 14 with
        // libstdc++ 12)
        slots_.assign(u(p_), {});
        for (auto& row : slots_) row.assign(4 * u(m_), 0);
        for (int r = 0; r < p_; ++r) {
            int off[4];
            if (kind_ == v_greedy_kind::min) {
                const int g = p_ % 3 == 0 ? 2 : 0;
                off[0] = r;
                off[1] = 2 * p_ - 1 - r;
                off[2] = 2 * p_ + g + r;
                off[3] = 4 * p_ + g - 1 - r;
            } else {
                const int g = p_ % 2 == 0 ? 3 : 0;
                off[0] = 2 * r;
                off[1] = 3 * p_ - 2 - r;
                off[2] = 3 * p_ + g + 2 * r - 1;
                off[3] = 6 * p_ + g - 2 - r;
            }
            for (int ty = 0; ty < 4; ++ty)
                for (int k = 0; k < m_; ++k) at(r, ty, k) = off[ty] + period * k;
        }
        split_ = false;
    }

    // occ_[r][x]: the element (ty * m + mb) at slot x of rank r, or -1.
    constexpr void fill_occupancy(int r) {
        auto& occ = occ_[u(r)];
        occ.assign(u(last_slot(r) + 1), -1);
        const auto& s = slots_[u(r)];
        for (std::size_t e = 0; e < s.size(); ++e) occ[u(s[e])] = static_cast<int>(e);
    }
    constexpr void fill_occupancy() {
        occ_.resize(u(p_));
        for (int r = 0; r < p_; ++r) fill_occupancy(r);
    }

    // Adds the W of rank r (drops any W it had): walking the slots, each B or b makes a W
    // pending and each free slot takes one (with `split`, the W of B first); the rest follow
    // the last slot, the W of B first.
    constexpr void add_w(int r, bool split) {
        split_ = split;
        auto& s = slots_[u(r)];
        s.resize(4 * u(m_));
        const int last = last_slot(r);
        std::vector<char> kind(u(last + 1), 0); // 0 free, 1 F/f, 2 B, 3 b
        for (int ty = 0; ty < 4; ++ty)
            for (int k = 0; k < m_; ++k)
                kind[u(s[u(ty * m_ + k)])] = static_cast<char>(ty < 2 ? 1 : ty);
        s.resize(6 * u(m_), 0);
        int pending[2] = {0, 0}, taken[2] = {0, 0};
        // Without split all 2m W form one list (type 4) in slot order.
        auto place = [&](int w, int x) { s[u(4 * m_ + w * m_ + taken[w]++)] = x; };
        for (int x = 0; x <= last; ++x) {
            const char k = kind[u(x)];
            if (k >= 2) {
                ++pending[split && k == 3 ? 1 : 0];
            } else if (k == 0) {
                for (int w = 0; w < 2; ++w)
                    if (pending[w] > 0) {
                        --pending[w];
                        place(w, x);
                        break;
                    }
            }
        }
        int x = last;
        for (int w = 0; w < 2; ++w)
            while (pending[w] > 0) {
                --pending[w];
                place(w, ++x);
            }
    }

    // The as-soon-as-possible replay with unit times and no message cost, in the global slot
    // order (by slot, then rank); the start times become the new slots. Each action waits for
    // the same type and microbatch on the upstream rank (F, B from rank r-1; f, b from r+1),
    // the previous type of its microbatch on its rank (f after F, B after f, b after B), and the
    // previous microbatch of its type. Linear in the slots.
    constexpr void squeeze() {
        fill_occupancy();
        int slots_max = 0;
        for (int r = 0; r < p_; ++r)
            slots_max = max2(slots_max, static_cast<int>(occ_[u(r)].size()));
        std::vector<std::vector<int>> fin(u(p_));
        for (int r = 0; r < p_; ++r) fin[u(r)].assign(slots_[u(r)].size(), -1);
        std::vector<int> free_at(u(p_), 0);
        auto end_of = [&](int r, int ty, int mb) {
            const int e = fin[u(r)][u(ty * m_ + mb)];
            PPSCHED_EXPECTS(e >= 0,
                            "v_half/v_min: internal error: slot order breaks a "
                            "dependency (rank ",
                            r, ", type ", ty, ", microbatch ", mb, ")");
            return e;
        };
        for (int x = 0; x < slots_max; ++x)
            for (int r = 0; r < p_; ++r) {
                const auto& occ = occ_[u(r)];
                if (u(x) >= occ.size() || occ[u(x)] < 0) continue;
                const int e = occ[u(x)], ty = type_of(e), mb = mb_of(e);
                int start = free_at[u(r)];
                if ((ty == 0 || ty == 2) && r > 0) start = max2(start, end_of(r - 1, ty, mb));
                if ((ty == 1 || ty == 3) && r + 1 < p_) start = max2(start, end_of(r + 1, ty, mb));
                if (ty > 0 && ty < 4) start = max2(start, end_of(r, ty - 1, mb));
                if (mb > 0) start = max2(start, end_of(r, ty, mb - 1));
                fin[u(r)][u(e)] = start + 1;
                free_at[u(r)] = start + 1;
            }
        for (int r = 0; r < p_; ++r)
            for (std::size_t e = 0; e < slots_[u(r)].size(); ++e)
                slots_[u(r)][e] = fin[u(r)][e] - 1;
    }

    // Earliest slot an element may take: one after the latest of its dependencies (as in
    // `squeeze`; a W depends on the mb-th backward of its rank in slot order).
    constexpr int lowest_slot(int r, int ty, int mb) {
        int lo = -1;
        if ((ty == 0 || ty == 2) && r > 0) lo = max2(lo, at(r - 1, ty, mb));
        if ((ty == 1 || ty == 3) && r + 1 < p_) lo = max2(lo, at(r + 1, ty, mb));
        if (ty > 0 && ty < 4) lo = max2(lo, at(r, ty - 1, mb));
        if (ty == 4) lo = max2(lo, kth_backward(r, mb));
        if (mb > 0) lo = max2(lo, at(r, ty, mb - 1));
        return lo + 1;
    }

    // Phases of the global order: 0 until rank 0's first b (warm-up), 1 until the first F of
    // the last microbatch (steady state; never moves), 2 after (cool-down).
    constexpr bool steady(int r, int ty, int mb) {
        if (phase_ == 0 && ty == 3 && r == 0) phase_ = 1;
        if (phase_ != 1) return false;
        if (ty == 0 && mb == m_ - 1) phase_ = 2;
        return true;
    }

    // --- Pass 1: W explicit. Memory per slot: F, f +1; W -1.
    constexpr void reorder_explicit() {
        for (int r = 0; r < p_; ++r) add_w(r, false);
        fill_occupancy();
        // prof_[r][x]: memory after slot x; bwd_: Fenwick tree of B/b slots per rank.
        prof_.assign(u(p_), {});
        bwd_.assign(u(p_), {});
        int limit = 0, slots_max = 0;
        for (int r = 0; r < p_; ++r) {
            const auto& occ = occ_[u(r)];
            auto& prof = prof_[u(r)];
            prof.assign(occ.size(), 0);
            bwd_[u(r)].assign(occ.size() + 1, 0);
            int cur = 0;
            for (std::size_t x = 0; x < occ.size(); ++x) {
                if (occ[x] >= 0) {
                    const int ty = type_of(occ[x]);
                    cur += ty < 2 ? 1 : ty == 4 ? -1 : 0;
                    if (ty == 2 || ty == 3) fenwick_add(r, static_cast<int>(x), 1);
                }
                prof[x] = cur;
                limit = max2(limit, cur);
            }
            slots_max = max2(slots_max, static_cast<int>(occ.size()));
        }
        phase_ = 0;
        for (int t = 0; t < slots_max; ++t)
            for (int r = 0; r < p_; ++r) {
                auto& occ = occ_[u(r)];
                if (u(t) >= occ.size() || occ[u(t)] < 0) continue;
                const int e = occ[u(t)], ty = type_of(e), mb = mb_of(e);
                if (steady(r, ty, mb)) continue;
                const int lo = lowest_slot(r, ty, mb);
                PPSCHED_EXPECTS(lo <= t,
                                "v_half/v_min: internal error: an action precedes its "
                                "input (rank ",
                                r, ", slot ", t, ")");
                auto& prof = prof_[u(r)];
                int from = lo;
                if (ty < 2) // an F/f raises [c, t) by one: c must pass every slot at the limit
                    for (int x = t - 1; x >= lo; --x)
                        if (prof[u(x)] >= limit) {
                            from = x + 1;
                            break;
                        }
                int c = from;
                while (c < t && occ[u(c)] >= 0) ++c;
                if (c >= t) continue;
                occ[u(c)] = e;
                occ[u(t)] = -1;
                at(r, ty, mb) = c;
                const int delta = ty < 2 ? 1 : ty == 4 ? -1 : 0;
                if (delta != 0)
                    for (int x = c; x < t; ++x) prof[u(x)] += delta;
                if (ty == 2 || ty == 3) {
                    fenwick_add(r, t, -1);
                    fenwick_add(r, c, 1);
                }
            }
        squeeze();
        for (auto& s : slots_) s.resize(4 * u(m_));
    }

    constexpr void fenwick_add(int r, int x, int v) {
        auto& f = bwd_[u(r)];
        for (std::size_t i = u(x) + 1; i < f.size(); i += i & (~i + 1)) f[i] += v;
    }
    // Slot of the (k+1)-th smallest B/b of rank r.
    constexpr int kth_backward(int r, int k) const {
        const auto& f = bwd_[u(r)];
        std::size_t pos = 0, step = 1;
        while (step * 2 < f.size()) step *= 2;
        int remaining = k + 1;
        for (; step > 0; step /= 2)
            if (pos + step < f.size() && f[pos + step] < remaining) {
                pos += step;
                remaining -= f[pos];
            }
        return static_cast<int>(pos); // 1-based index pos + 1, slot pos
    }

    // --- Pass 2: W implicit (a free slot retires a pending W). Only cool-down actions move.
    // walk_[r][x] = {memory, pending W, peak so far} after slot x.
    struct walk_state {
        int mem = 0, pending = 0, peak = 0;
    };

    // Replays rank r from slot `from` (with the state before it) to its last slot.
    constexpr void rewalk(int r, int from) {
        const auto& occ = occ_[u(r)];
        auto& w = walk_[u(r)];
        walk_state s = from > 0 ? w[u(from - 1)] : walk_state{};
        for (int x = from; x <= last_[u(r)]; ++x) {
            step(s, occ[u(x)]);
            w[u(x)] = s;
        }
    }
    constexpr void step(walk_state& s, int e) const {
        if (e >= 0) {
            const int ty = type_of(e);
            if (ty < 2) ++s.mem;
            if (ty == 2 || ty == 3) ++s.pending;
        } else if (s.pending > 0) {
            --s.mem;
            --s.pending;
        }
        s.peak = max2(s.peak, s.mem);
    }

    constexpr void reorder_implicit() {
        fill_occupancy();
        walk_.assign(u(p_), {});
        last_.assign(u(p_), 0);
        int limit = 0, slots_max = 0;
        for (int r = 0; r < p_; ++r) {
            walk_[u(r)].assign(occ_[u(r)].size(), walk_state{});
            last_[u(r)] = static_cast<int>(occ_[u(r)].size()) - 1;
            rewalk(r, 0);
            limit = max2(limit, walk_[u(r)][u(last_[u(r)])].peak);
            slots_max = max2(slots_max, last_[u(r)] + 1);
        }
        phase_ = 0;
        for (int t = 0; t < slots_max; ++t)
            for (int r = 0; r < p_; ++r) {
                auto& occ = occ_[u(r)];
                if (t > last_[u(r)] || occ[u(t)] < 0) continue;
                const int e = occ[u(t)], ty = type_of(e), mb = mb_of(e);
                if (steady(r, ty, mb) || phase_ == 0) continue;
                const int lo = lowest_slot(r, ty, mb);
                PPSCHED_EXPECTS(lo <= t,
                                "v_half/v_min: internal error: an action precedes its "
                                "input (rank ",
                                r, ", slot ", t, ")");
                for (int c = lo; c < t; ++c) {
                    if (occ[u(c)] >= 0 || !fits(r, e, c, t, limit)) continue;
                    occ[u(c)] = e;
                    occ[u(t)] = -1;
                    at(r, ty, mb) = c;
                    if (t == last_[u(r)])
                        while (occ[u(last_[u(r)])] < 0) --last_[u(r)];
                    rewalk(r, c);
                    break;
                }
            }
        for (int r = 0; r < p_; ++r) add_w(r, false);
        squeeze();
        for (auto& s : slots_) s.resize(4 * u(m_));
    }

    // Whether rank r's peak stays within `limit` with element e moved from slot t to c.
    constexpr bool fits(int r, int e, int c, int t, int limit) const {
        const auto& occ = occ_[u(r)];
        int last = last_[u(r)];
        if (t == last) {
            last = c;
            for (int x = t - 1; x > c; --x)
                if (occ[u(x)] >= 0) {
                    last = x;
                    break;
                }
        }
        walk_state s = c > 0 ? walk_[u(r)][u(c - 1)] : walk_state{};
        for (int x = c; x <= last; ++x) {
            step(s, x == c ? e : x == t ? -1 : occ[u(x)]);
            if (s.peak > limit) return false;
        }
        return true;
    }

    int p_, m_;
    v_greedy_kind kind_;
    bool split_ = false;
    int phase_ = 0;
    std::vector<std::vector<int>> slots_;       // per rank: slot of each element (ty * m + mb)
    std::vector<std::vector<int>> occ_;         // per rank: element of each slot, or -1
    std::vector<std::vector<int>> prof_;        // pass 1: memory after each slot
    std::vector<std::vector<int>> bwd_;         // pass 1: Fenwick trees of B/b slots
    std::vector<std::vector<walk_state>> walk_; // pass 2
    std::vector<int> last_;                     // pass 2: last occupied slot per rank
};

} // namespace ppsched::detail
