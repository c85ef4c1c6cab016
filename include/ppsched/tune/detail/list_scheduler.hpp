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
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
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
/// O(n * (log n + queues per rank)): a rank's soonest start is recomputed only when the rank
/// acts or receives an action (the ranks wait in a heap by it), its banker's test only when it
/// acts. Each queue (a kind of action on a stage) becomes ready in microbatch order at
/// non-decreasing times (it is fed by one queue of one rank, which runs it in that order), and
/// the rule picks within a queue the oldest: so only each queue's first ready action is a
/// candidate, never a scan of every ready one (m of them on the first rank).
[[nodiscard]] inline bool greedy_order(const model& m, const greedy_rule& rule, sequences& out) {
    const auto ranks = static_cast<std::size_t>(m.ranks);
    const int mbs = m.microbatches;
    const auto per_queue = static_cast<std::size_t>(mbs);
    out.assign(ranks, {});
    // Per queue (kind * stages + stage): when each microbatch's action is ready, and the
    // ready ones not yet run, [first, last). A queue becomes ready in microbatch order, so
    // the next to become ready is always microbatch `last`.
    const auto kinds = static_cast<std::size_t>(m.kinds());
    const auto queue_of = [&](int s, int k) {
        return static_cast<std::size_t>(k) * static_cast<std::size_t>(m.stages) +
               static_cast<std::size_t>(s);
    };
    std::vector<double> ready_at(kinds * static_cast<std::size_t>(m.stages) * per_queue, 0.0);
    std::vector<std::size_t> first(kinds * static_cast<std::size_t>(m.stages), 0),
        last(first.size(), 0);
    auto make_ready = [&](int s, int k, double at) {
        const std::size_t q = queue_of(s, k);
        ready_at[q * per_queue + last[q]++] = at;
    };
    // Per rank: its queues, in a fixed order (which also breaks the rule's exact ties).
    std::vector<std::vector<std::pair<int, int>>> rank_queues(ranks); // (stage, kind)
    for (std::size_t r = 0; r < ranks; ++r)
        for (int s : m.rank_stages[r])
            for (int k = 0; k < m.kinds(); ++k) rank_queues[r].emplace_back(s, k);
    std::vector<double> free(ranks, 0), reserved(ranks, 0), need(ranks, 0), held(ranks, 0);
    std::vector<int> in_flight(ranks, 0);
    for (std::size_t r = 0; r < ranks; ++r)
        for (int s : m.rank_stages[r]) need[r] += m.stage[static_cast<std::size_t>(s)].activation;
    auto first_stage = [&](std::size_t r) { return m.rank_stages[r].front(); };
    // Forwards of stage 0 are ready from the start, in microbatch order.
    for (int j = 0; j < mbs; ++j) make_ready(0, kind_forward, 0);
    std::size_t left = 0;
    for (std::size_t r = 0; r < ranks; ++r) left += m.rank_actions(static_cast<int>(r));

    // Without reservation a microbatch enters a rank only when the banker's test says every
    // microbatch on the rank can still pass all of the rank's stages (some order of them
    // finishing, each needing its remaining stages' activations, exists within the limit).
    // Per rank and microbatch: the rank's stages it has entered and the memory it holds. The
    // microbatches that entered e stages all still need the activations of the stages from e
    // on; the banker serves the least needs first, and within a group the first check is the
    // binding one (what is available only grows): so the test needs only each group's count
    // and held memory, kept per rank (O(V log V) a test instead of a sort of the microbatches).
    const std::size_t per_rank = per_queue;
    std::size_t groups = 1; // stages entered: 0 (holding nothing) to the rank's stage count
    for (const auto& st : m.rank_stages) groups = std::max(groups, st.size() + 1);
    std::vector<int> entered(rule.reserve ? 0 : ranks * per_rank, 0);
    std::vector<double> mb_held(rule.reserve ? 0 : ranks * per_rank, 0.0);
    std::vector<std::size_t> group_count(rule.reserve ? 0 : ranks * groups, 0);
    std::vector<double> group_held(rule.reserve ? 0 : ranks * groups, 0.0);
    std::vector<std::vector<double>> still_needs(ranks); // [r][k]: activations of stages >= k
    for (std::size_t r = 0; r < ranks; ++r) {
        const auto& st = m.rank_stages[r];
        still_needs[r].assign(st.size() + 1, 0);
        for (std::size_t k = st.size(); k-- > 0;)
            still_needs[r][k] =
                still_needs[r][k + 1] + m.stage[static_cast<std::size_t>(st[k])].activation;
    }
    std::vector<char> can_enter(ranks, 1), dirty(ranks, 1);
    std::vector<std::pair<double, double>> claims; // (still needed, held) per group
    auto safe_to_enter = [&](std::size_t r) {
        if (!dirty[r]) return can_enter[r] != 0;
        dirty[r] = 0;
        const double first_activation =
            m.stage[static_cast<std::size_t>(first_stage(r))].activation;
        double avail = m.fit_limit[r] - m.parameters[r] - held[r] - first_activation;
        claims.clear();
        claims.emplace_back(need[r] - first_activation, first_activation); // the one entering
        for (std::size_t e = 1; e < groups; ++e)
            if (group_count[r * groups + e] > 0)
                claims.emplace_back(still_needs[r][e], group_held[r * groups + e]);
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
    // Whether a forward of stage s may run on rank r now (the same for every microbatch of
    // the queue); other kinds always may.
    auto admissible = [&](std::size_t r, int s, int k) {
        if (k != kind_forward) return true;
        const bool enters = s == first_stage(r);
        if (!rule.reserve) {
            if (enters && (in_flight[r] >= rule.cap[r] || !safe_to_enter(r))) return false;
            return m.parameters[r] + held[r] + m.stage[static_cast<std::size_t>(s)].activation <=
                   m.fit_limit[r];
        }
        if (!enters) return true; // already admitted on this rank
        return in_flight[r] < rule.cap[r] &&
               m.parameters[r] + reserved[r] + need[r] <= m.fit_limit[r];
    };
    auto track = [&](std::size_t r, int j, double delta, bool forward) {
        if (rule.reserve) return;
        const std::size_t i = r * per_rank + static_cast<std::size_t>(j);
        // Out of its group, changed, and back in (a microbatch holding nothing is in none).
        auto group = [&](double sign) {
            if (!(mb_held[i] > 0)) return;
            const std::size_t g = r * groups + static_cast<std::size_t>(entered[i]);
            group_count[g] += sign > 0 ? 1 : std::size_t(-1);
            group_held[g] = group_count[g] == 0 ? 0.0 : group_held[g] + sign * mb_held[i];
        };
        group(-1);
        if (forward) ++entered[i];
        mb_held[i] += delta;
        group(+1);
        dirty[r] = 1;
    };
    auto front_at = [&](int s, int k) {
        const std::size_t q = queue_of(s, k);
        return first[q] < last[q] ? ready_at[q * per_queue + first[q]] : -1.0;
    };
    // The ranks by when each can start its soonest admissible action, least first (at a tie
    // the lower rank). That time changes only when the rank acts or receives an action; then
    // the rank is pushed again with a new version, and entries of older versions are dropped
    // when they come up.
    struct rank_start {
        double at;
        std::size_t rank;
        std::uint64_t version;
        bool operator>(const rank_start& o) const { return at != o.at ? at > o.at : rank > o.rank; }
    };
    std::priority_queue<rank_start, std::vector<rank_start>, std::greater<>> starts;
    std::vector<std::uint64_t> version(ranks, 0);
    auto refresh = [&](std::size_t r) {
        ++version[r];
        double soonest = -1;
        for (const auto& [s, k] : rank_queues[r]) {
            const double at = front_at(s, k);
            if (at >= 0 && (soonest < 0 || at < soonest) && admissible(r, s, k)) soonest = at;
        }
        if (soonest >= 0) starts.push({std::max(soonest, free[r]), r, version[r]});
    };
    for (std::size_t r = 0; r < ranks; ++r) refresh(r);
    std::array<std::size_t, 2> touched{}; // the ranks an action changes: its own, the one it feeds
    while (left > 0) {
        // The rank that can start something soonest.
        while (!starts.empty() && starts.top().version != version[starts.top().rank]) starts.pop();
        if (starts.empty()) return false;
        const std::size_t best_rank = starts.top().rank;
        const double best_t = starts.top().at;
        starts.pop();
        const std::size_t r = best_rank;
        // The rule's pick among the queues' first actions ready by then.
        auto rank_of = [&](int k) {
            if (k == kind_weight) return rule.eager_weight ? 0 : 3;
            if (k == kind_backward) return rule.backward_first ? 1 : 2;
            return rule.backward_first ? 2 : 1;
        };
        int ps = -1, pk = -1, pj = 0;
        double pat = 0;
        for (const auto& [s, k] : rank_queues[r]) {
            const double at = front_at(s, k);
            if (at < 0 || at > best_t || !admissible(r, s, k)) continue;
            const int j = static_cast<int>(first[queue_of(s, k)]);
            bool take = ps < 0;
            if (!take && rank_of(k) != rank_of(pk)) {
                take = rank_of(k) < rank_of(pk);
            } else if (!take) {
                if (k == kind_forward && rule.deep_first)
                    take = s != ps ? s > ps : j < pj;
                else if (k == kind_forward)
                    take = j != pj ? j < pj : s > ps;
                else // backwards and Ws: the oldest input first
                    take = at != pat ? at < pat : j < pj;
            }
            if (take) {
                ps = s;
                pk = k;
                pj = j;
                pat = at;
            }
        }
        const int k = pk, s = ps, j = pj;
        ++first[queue_of(s, k)];
        std::size_t changed = 0;
        touched[changed++] = r;
        const int x = m.node(s, j, k);
        const stage_info& st = m.stage[static_cast<std::size_t>(s)];
        const double finish = best_t + st.dur[k];
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
                make_ready(st.next, kind_forward, finish + n.msg_from_prev);
                touched[changed++] = static_cast<std::size_t>(n.rank);
            } else {
                make_ready(s, kind_backward, finish);
            }
        } else if (k == kind_backward) {
            reserved[r] -= m.split ? st.activation * m.frees_by_i : st.activation;
            held[r] -= m.split ? st.activation * m.frees_by_i : st.activation;
            track(r, j, -(m.split ? st.activation * m.frees_by_i : st.activation), false);
            if (m.split) {
                make_ready(s, kind_weight, finish);
            } else if (s == first_stage(r)) {
                --in_flight[r];
            }
            if (st.prev >= 0) {
                const stage_info& p = m.stage[static_cast<std::size_t>(st.prev)];
                make_ready(st.prev, kind_backward, finish + p.msg_from_next);
                touched[changed++] = static_cast<std::size_t>(p.rank);
            }
        } else {
            reserved[r] -= st.activation * (1 - m.frees_by_i);
            held[r] -= st.activation * (1 - m.frees_by_i);
            track(r, j, -(st.activation * (1 - m.frees_by_i)), false);
            if (s == first_stage(r)) --in_flight[r];
        }
        for (std::size_t i = 0; i < changed; ++i) refresh(touched[i]);
    }
    return true;
}

} // namespace ppsched::detail::tune
