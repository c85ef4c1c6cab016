#pragma once
/// \file tune/detail/list_scheduler.hpp
/// Start points for the search: a family of greedy list schedulers. Time runs forward; the rank
/// that can start something soonest picks, among its actions whose inputs have arrived, one by
/// a rule (backward first or forward first, W as filler or right after its I, deeper stage or
/// older microbatch first). Memory is reserved when a microbatch enters a rank (its activations
/// on every stage of the rank), so every admitted microbatch can finish: the orders never
/// deadlock and always fit the limit. Also the trivial one-microbatch-at-a-time order, which
/// fits the least memory any order needs.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ppsched/tune/detail/evaluator.hpp"
#include "ppsched/tune/detail/model.hpp"

namespace ppsched::detail::tune {

/// A small deterministic generator (splitmix64): the search must not depend on the standard
/// library's distributions, which differ between implementations.
class rng {
  public:
    explicit rng(std::uint64_t seed) noexcept : s_(seed) {}
    std::uint64_t next() noexcept {
        std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
    }
    /// Uniform in [0, n) for n > 0.
    std::size_t below(std::size_t n) noexcept { return static_cast<std::size_t>(next() % n); }
    /// Uniform in [0, 1).
    double unit() noexcept { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  private:
    std::uint64_t s_;
};

/// The rule of one greedy run.
struct greedy_rule {
    bool backward_first = true; ///< a ready backward beats a ready forward
    bool eager_weight = false;  ///< W right after its I (as a B would); else W fills gaps
    bool deep_first = true;     ///< among forwards, the later stage first; else older microbatch
    std::vector<int> cap;       ///< per rank: microbatches in flight at most (>= 1)
    /// Reserve a microbatch's memory on every stage of a rank when it enters the rank (never
    /// deadlocks); else admit a forward whenever the memory held now allows it (overlaps more,
    /// but may run into a deadlock, which fails the run).
    bool reserve = true;
};

/// Every microbatch through the whole pipeline before the next: fits the least memory.
[[nodiscard]] inline sequences sequential_order(const model& m) {
    sequences seq(static_cast<std::size_t>(m.ranks));
    for (int j = 0; j < m.microbatches; ++j) {
        for (int s = 0; s < m.stages; ++s)
            seq[static_cast<std::size_t>(m.stage[static_cast<std::size_t>(s)].rank)].push_back(
                m.node(s, j, kind_forward));
        for (int s = m.stages - 1; s >= 0; --s) {
            auto& row = seq[static_cast<std::size_t>(m.stage[static_cast<std::size_t>(s)].rank)];
            row.push_back(m.node(s, j, kind_backward));
            if (m.split) row.push_back(m.node(s, j, kind_weight));
        }
    }
    return seq;
}

/// One greedy run; false when it could not place every action (it then leaves `out` partial).
/// O(n * (ranks + ready actions per rank + microbatches)): a rank's soonest start is recomputed
/// only when the rank acts or receives an action, its banker's test only when it acts.
[[nodiscard]] inline bool greedy_order(const model& m, const greedy_rule& rule, sequences& out) {
    const auto ranks = static_cast<std::size_t>(m.ranks);
    const int mbs = m.microbatches;
    out.assign(ranks, {});
    std::vector<double> end(m.node_count(), -1.0);
    struct ready_node {
        int node;
        double at;
    };
    std::vector<std::vector<ready_node>> ready(ranks);
    std::vector<double> free(ranks, 0), reserved(ranks, 0), need(ranks, 0), held(ranks, 0);
    std::vector<int> in_flight(ranks, 0);
    for (std::size_t r = 0; r < ranks; ++r)
        for (int s : m.rank_stages[r]) need[r] += m.stage[static_cast<std::size_t>(s)].activation;
    auto first_stage = [&](std::size_t r) { return m.rank_stages[r].front(); };
    // Forwards of stage 0 are ready from the start, in microbatch order.
    for (int j = 0; j < mbs; ++j)
        ready[static_cast<std::size_t>(m.stage[0].rank)].push_back({m.node(0, j, kind_forward), 0});
    std::size_t left = 0;
    for (std::size_t r = 0; r < ranks; ++r) left += m.rank_actions(static_cast<int>(r));

    // Without reservation a microbatch enters a rank only when the banker's test says every
    // microbatch on the rank can still pass all of the rank's stages (some order of them
    // finishing, each needing its remaining stages' activations, exists within the limit).
    // Per rank and microbatch: the rank's stages it has entered and the memory it holds.
    const auto per_rank = static_cast<std::size_t>(mbs);
    std::vector<int> entered(rule.reserve ? 0 : ranks * per_rank, 0);
    std::vector<double> mb_held(rule.reserve ? 0 : ranks * per_rank, 0.0);
    std::vector<std::vector<double>> still_needs(ranks); // [r][k]: activations of stages >= k
    for (std::size_t r = 0; r < ranks; ++r) {
        const auto& st = m.rank_stages[r];
        still_needs[r].assign(st.size() + 1, 0);
        for (std::size_t k = st.size(); k-- > 0;)
            still_needs[r][k] =
                still_needs[r][k + 1] + m.stage[static_cast<std::size_t>(st[k])].activation;
    }
    std::vector<char> can_enter(ranks, 1), dirty(ranks, 1);
    std::vector<std::pair<double, double>> claims; // (still needed, held)
    auto safe_to_enter = [&](std::size_t r) {
        if (!dirty[r]) return can_enter[r] != 0;
        dirty[r] = 0;
        const double first = m.stage[static_cast<std::size_t>(first_stage(r))].activation;
        double avail = m.limit[r] - m.parameters[r] - held[r] - first;
        claims.clear();
        claims.emplace_back(need[r] - first, first);
        for (std::size_t j = 0; j < per_rank; ++j) {
            const std::size_t i = r * per_rank + j;
            if (entered[i] == 0 || mb_held[i] <= 0) continue;
            claims.emplace_back(still_needs[r][static_cast<std::size_t>(entered[i])], mb_held[i]);
        }
        std::sort(claims.begin(), claims.end());
        bool ok = avail >= 0;
        for (const auto& [needs, holds] : claims) {
            if (!ok || needs > avail + 1e-12 * (1 + avail)) {
                ok = false;
                break;
            }
            avail += holds;
        }
        can_enter[r] = ok ? 1 : 0;
        return ok;
    };
    auto admissible = [&](std::size_t r, int node) {
        if (model::kind_of(node) != kind_forward) return true;
        const bool enters = m.stage_of(node) == first_stage(r);
        if (!rule.reserve) {
            if (enters && (in_flight[r] >= rule.cap[r] || !safe_to_enter(r))) return false;
            return m.parameters[r] + held[r] +
                       m.stage[static_cast<std::size_t>(m.stage_of(node))].activation <=
                   m.limit[r];
        }
        if (!enters) return true; // already admitted on this rank
        return in_flight[r] < rule.cap[r] && m.parameters[r] + reserved[r] + need[r] <= m.limit[r];
    };
    auto track = [&](std::size_t r, int j, double delta, bool forward) {
        if (rule.reserve) return;
        const std::size_t i = r * per_rank + static_cast<std::size_t>(j);
        if (forward) ++entered[i];
        mb_held[i] += delta;
        dirty[r] = 1;
    };
    std::vector<std::size_t> choice;
    // Per rank: when its soonest admissible action is ready (-1: none), kept until the rank
    // acts or receives an action (nothing else changes it).
    std::vector<double> soonest(ranks, -1);
    std::vector<char> stale(ranks, 1);
    while (left > 0) {
        // The rank that can start something soonest.
        std::size_t best_rank = ranks;
        double best_t = 0;
        for (std::size_t r = 0; r < ranks; ++r) {
            if (stale[r]) {
                stale[r] = 0;
                soonest[r] = -1;
                for (const ready_node& c : ready[r])
                    if ((soonest[r] < 0 || c.at < soonest[r]) && admissible(r, c.node))
                        soonest[r] = c.at;
            }
            if (soonest[r] < 0) continue;
            const double t = soonest[r] > free[r] ? soonest[r] : free[r];
            if (best_rank == ranks || t < best_t) {
                best_rank = r;
                best_t = t;
            }
        }
        if (best_rank == ranks) return false;
        const std::size_t r = best_rank;
        // Candidates ready by then, and the rule's pick among them.
        choice.clear();
        for (std::size_t i = 0; i < ready[r].size(); ++i)
            if (ready[r][i].at <= best_t && admissible(r, ready[r][i].node)) choice.push_back(i);
        auto rank_of = [&](std::size_t i) {
            const int n = ready[r][i].node;
            const int k = model::kind_of(n);
            if (k == kind_weight) return rule.eager_weight ? 0 : 3;
            if (k == kind_backward) return rule.backward_first ? 1 : 2;
            return rule.backward_first ? 2 : 1;
        };
        std::size_t pick = choice.front();
        for (std::size_t i : choice) {
            const int a = rank_of(i), b = rank_of(pick);
            if (a != b) {
                if (a < b) pick = i;
                continue;
            }
            const int ni = ready[r][i].node, np = ready[r][pick].node;
            const int si = m.stage_of(ni), sp = m.stage_of(np);
            const int ji = m.mb_of(ni), jp = m.mb_of(np);
            bool take;
            if (model::kind_of(ni) == kind_forward && rule.deep_first)
                take = si != sp ? si > sp : ji < jp;
            else if (model::kind_of(ni) == kind_forward)
                take = ji != jp ? ji < jp : si > sp;
            else // backwards and Ws: the oldest input first
                take = ready[r][i].at != ready[r][pick].at ? ready[r][i].at < ready[r][pick].at
                                                           : ji < jp;
            if (take) pick = i;
        }
        const int x = ready[r][pick].node;
        stale[r] = 1;
        ready[r][pick] = ready[r].back();
        ready[r].pop_back();
        const int k = model::kind_of(x);
        const int s = m.stage_of(x), j = m.mb_of(x);
        const stage_info& st = m.stage[static_cast<std::size_t>(s)];
        const double finish = best_t + st.dur[k];
        end[static_cast<std::size_t>(x)] = finish;
        free[r] = finish;
        out[r].push_back(x);
        --left;
        if (k == kind_forward) {
            held[r] += st.activation;
            track(r, j, st.activation, true);
            if (s == first_stage(r)) {
                ++in_flight[r];
                reserved[r] += need[r];
            }
            if (st.next >= 0) {
                const stage_info& n = m.stage[static_cast<std::size_t>(st.next)];
                ready[static_cast<std::size_t>(n.rank)].push_back(
                    {m.node(st.next, j, kind_forward), finish + n.msg_from_prev});
                stale[static_cast<std::size_t>(n.rank)] = 1;
            } else {
                ready[r].push_back({m.node(s, j, kind_backward), finish});
            }
        } else if (k == kind_backward) {
            reserved[r] -= m.split ? st.activation * m.frees_by_i : st.activation;
            held[r] -= m.split ? st.activation * m.frees_by_i : st.activation;
            track(r, j, -(m.split ? st.activation * m.frees_by_i : st.activation), false);
            if (m.split) {
                ready[r].push_back({m.node(s, j, kind_weight), finish});
            } else if (s == first_stage(r)) {
                --in_flight[r];
            }
            if (st.prev >= 0) {
                const stage_info& p = m.stage[static_cast<std::size_t>(st.prev)];
                ready[static_cast<std::size_t>(p.rank)].push_back(
                    {m.node(st.prev, j, kind_backward), finish + p.msg_from_next});
                stale[static_cast<std::size_t>(p.rank)] = 1;
            }
        } else {
            reserved[r] -= st.activation * (1 - m.frees_by_i);
            held[r] -= st.activation * (1 - m.frees_by_i);
            track(r, j, -(st.activation * (1 - m.frees_by_i)), false);
            if (s == first_stage(r)) --in_flight[r];
        }
    }
    return true;
}

} // namespace ppsched::detail::tune
