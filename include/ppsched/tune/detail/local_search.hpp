#pragma once
/// \file tune/detail/local_search.hpp
/// The improvement phase: a tabu search on the per-rank orders, guided by the critical path.
/// The makespan is the length of a chain of actions in which each one starts when the one
/// before it ends (on its rank, or as its input); only reordering actions that are adjacent on
/// a rank along that chain can shorten it (the classic neighbourhood of job-shop scheduling),
/// so each step times every such swap and takes the best one not tabu (or any that beats the
/// best order found). Each timing is O(n); a step is O(critical path * n).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ppsched/tune/detail/evaluator.hpp"
#include "ppsched/tune/detail/list_scheduler.hpp"
#include "ppsched/tune/detail/model.hpp"

namespace ppsched::detail::tune {

/// What stops a search, shared by every phase.
struct budget {
    std::chrono::steady_clock::time_point deadline;
    std::uint64_t max_evaluations = 0; ///< 0: none
    double target = 0;                 ///< stop once the makespan is <= this (the bound)
    bool out_of_time = false;
    bool out_of_evaluations = false;

    [[nodiscard]] bool spent(const evaluator& ev) {
        if (max_evaluations != 0 && ev.count() >= max_evaluations) out_of_evaluations = true;
        // Reading the clock costs little next to a timing (O(n)).
        else if (std::chrono::steady_clock::now() >= deadline)
            out_of_time = true;
        return out_of_time || out_of_evaluations;
    }
};

/// A swap of two adjacent actions of one rank.
struct swap_move {
    int rank = 0;
    std::size_t at = 0; ///< positions `at` and `at + 1`
};

/// The critical chain of the last recorded run, from its end back to its start.
inline void critical_chain(const model& m, const evaluator& ev, const sequences& seq,
                           std::vector<int>& chain) {
    chain.clear();
    int last = -1;
    double when = -1;
    for (const auto& row : seq)
        if (!row.empty() && ev.end(row.back()) > when) {
            when = ev.end(row.back());
            last = row.back();
        }
    (void)m;
    for (int x = last; x >= 0; x = ev.cause(x)) chain.push_back(x);
}

/// Whether `b` needs `a` directly on the same rank (so they cannot be swapped).
[[nodiscard]] inline bool direct_dependency(const model& m, int a, int b) {
    if ((a >> 2) == (b >> 2)) return true; // F, I, W of one stage and microbatch
    const int ka = model::kind_of(a), kb = model::kind_of(b);
    if (m.mb_of(a) != m.mb_of(b) || ka != kb) return false;
    const int sa = m.stage_of(a), sb = m.stage_of(b);
    const stage_info& st = m.stage[static_cast<std::size_t>(sb)];
    return (kb == kind_forward && st.prev == sa) || (kb == kind_backward && st.next == sa);
}

/// Improves `seq` (whose evaluation is `cur`) in place by tabu search until `patience` steps
/// bring no new best or the budget is spent. Returns the best order's evaluation (left in
/// `seq`).
inline evaluation tabu_search(const model& m, evaluator& ev, sequences& seq, evaluation cur,
                              budget& limit, rng& random, int patience) {
    sequences best_seq = seq;
    evaluation best = cur;
    std::vector<std::size_t> where(m.node_count(), 0);
    auto reindex = [&](std::size_t r) {
        for (std::size_t i = 0; i < seq[r].size(); ++i)
            where[static_cast<std::size_t>(seq[r][i])] = i;
    };
    for (std::size_t r = 0; r < seq.size(); ++r) reindex(r);
    // Tabu: the pair just swapped may not be swapped back for `tenure` steps.
    std::vector<std::pair<std::uint64_t, int>> tabu; // (pair key, expires at step)
    const int tenure = 7;
    std::vector<int> chain;
    std::vector<swap_move> moves;
    int since_best = 0;
    for (int step = 0; since_best < patience; ++step) {
        if (best.makespan <= limit.target || limit.spent(ev)) break;
        (void)ev.run<true>(seq);
        critical_chain(m, ev, seq, chain);
        moves.clear();
        // Adjacent pairs of one rank along the chain: `chain[i+1]` right before `chain[i]`.
        for (std::size_t i = 0; i + 1 < chain.size(); ++i) {
            const int b = chain[i], a = chain[i + 1];
            const int r = m.stage[static_cast<std::size_t>(m.stage_of(a))].rank;
            if (m.stage[static_cast<std::size_t>(m.stage_of(b))].rank != r) continue;
            const std::size_t at = where[static_cast<std::size_t>(a)];
            if (at + 1 >= seq[static_cast<std::size_t>(r)].size() ||
                seq[static_cast<std::size_t>(r)][at + 1] != b || direct_dependency(m, a, b))
                continue;
            moves.push_back({r, at});
        }
        if (moves.empty()) break;
        evaluation pick{};
        swap_move chosen{};
        bool found = false;
        for (const swap_move& mv : moves) {
            auto& row = seq[static_cast<std::size_t>(mv.rank)];
            const int a = row[mv.at], b = row[mv.at + 1];
            const std::uint64_t key =
                (static_cast<std::uint64_t>(static_cast<std::uint32_t>(std::min(a, b))) << 32) |
                static_cast<std::uint32_t>(std::max(a, b));
            bool is_tabu = false;
            for (const auto& t : tabu) is_tabu = is_tabu || (t.first == key && t.second > step);
            std::swap(row[mv.at], row[mv.at + 1]);
            const evaluation e = ev.run(seq);
            std::swap(row[mv.at], row[mv.at + 1]);
            if (!e.ok) continue;
            if (is_tabu && !better(e, best)) continue;
            // Random tie-breaking between equal candidates keeps plateaus from cycling.
            if (!found || better(e, pick) || (!better(pick, e) && random.below(2) == 0)) {
                pick = e;
                chosen = mv;
                found = true;
            }
            if (limit.spent(ev)) break;
        }
        if (!found) break;
        auto& row = seq[static_cast<std::size_t>(chosen.rank)];
        const int a = row[chosen.at], b = row[chosen.at + 1];
        std::swap(row[chosen.at], row[chosen.at + 1]);
        where[static_cast<std::size_t>(a)] = chosen.at + 1;
        where[static_cast<std::size_t>(b)] = chosen.at;
        const std::uint64_t key =
            (static_cast<std::uint64_t>(static_cast<std::uint32_t>(std::min(a, b))) << 32) |
            static_cast<std::uint32_t>(std::max(a, b));
        std::erase_if(tabu, [&](const auto& t) { return t.second <= step; });
        tabu.emplace_back(key, step + 1 + tenure + static_cast<int>(random.below(4)));
        cur = pick;
        if (better(cur, best)) {
            best = cur;
            best_seq = seq;
            since_best = 0;
        } else {
            ++since_best;
        }
    }
    seq = std::move(best_seq);
    return best;
}

} // namespace ppsched::detail::tune
