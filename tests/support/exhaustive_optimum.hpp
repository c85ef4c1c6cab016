#pragma once
// The optimum of a tiny tune problem by brute force: every combination of per-rank orders is
// timed by the search's evaluator (the same timing as simulate). Exponential: for problems of
// a few actions per rank only. Shared by the tests of tune and of its lower bound.

#include <ppsched/tune/detail/evaluator.hpp>
#include <ppsched/tune/detail/model.hpp>
#include <ppsched/tune/problem.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <vector>

namespace ppsched_test {

namespace exhaustive_detail {
namespace dt = ppsched::detail::tune;
// Every order of a tiny problem: the per-rank permutations of its actions that keep each
// stage and microbatch's F before I before W (others deadlock and are skipped by the timing).
inline void each_rank_order(const dt::model& m, int rank,
                            const std::function<void(std::vector<int>&)>& f) {
    std::vector<int> nodes;
    for (int s : m.rank_stages[static_cast<std::size_t>(rank)])
        for (int j = 0; j < m.microbatches; ++j)
            for (int k = 0; k < m.kinds(); ++k) nodes.push_back(m.node(s, j, k));
    std::vector<int> row;
    std::vector<char> used(nodes.size(), 0);
    std::function<void()> rec = [&] {
        if (row.size() == nodes.size()) {
            f(row);
            return;
        }
        for (std::size_t i = 0; i < nodes.size(); ++i) {
            if (used[i]) continue;
            const int k = dt::model::kind_of(nodes[i]);
            if (k > 0 && !used[i - 1]) continue; // its F (or I) first
            used[i] = 1;
            row.push_back(nodes[i]);
            rec();
            row.pop_back();
            used[i] = 0;
        }
    };
    rec();
}

} // namespace exhaustive_detail

/// The least makespan of any valid order of `p` (infinity when none fits its memory limit).
inline double exhaustive_optimum(const ppsched::tune_problem& p) {
    namespace dt = ppsched::detail::tune;
    using exhaustive_detail::each_rank_order;
    const dt::model m = dt::make_model(p);
    std::vector<std::vector<std::vector<int>>> per_rank(static_cast<std::size_t>(m.ranks));
    for (int r = 0; r < m.ranks; ++r)
        each_rank_order(m, r, [&](std::vector<int>& row) {
            per_rank[static_cast<std::size_t>(r)].push_back(row);
        });
    dt::evaluator ev(m);
    dt::sequences seq(static_cast<std::size_t>(m.ranks));
    double best = std::numeric_limits<double>::infinity();
    std::function<void(std::size_t)> rec = [&](std::size_t r) {
        if (r == per_rank.size()) {
            const dt::evaluation e = ev.run(seq);
            if (e.ok) best = std::min(best, e.makespan);
            return;
        }
        for (const auto& row : per_rank[r]) {
            seq[r] = row;
            rec(r + 1);
        }
    };
    rec(0);
    return best;
}

} // namespace ppsched_test
