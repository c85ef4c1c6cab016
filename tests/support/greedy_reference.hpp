#pragma once
// A plain reference of the auto-scheduler's greedy list scheduler (tune/detail/
// list_scheduler.hpp), written from its rules rather than its code: at every step it looks at
// every ready action of every rank and runs the banker's test over every microbatch from
// scratch. O(n * ready actions * microbatches): for tests only. The library's version keeps one
// candidate per queue and the banker's test per group of microbatches; the tests require both
// to give the same orders.

#include <ppsched/tune/detail/list_scheduler.hpp>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace ppsched_test {

namespace dt = ppsched::detail::tune;

/// The greedy rule `rule` run on `m` step by step; false when some action never becomes
/// admissible.
inline bool reference_greedy_order(const dt::model& m, const dt::greedy_rule& rule,
                                   dt::sequences& out) {
    const auto ranks = static_cast<std::size_t>(m.ranks);
    const int mbs = m.microbatches;
    out.assign(ranks, {});
    struct ready_action {
        int stage, mb, kind;
        double at;
    };
    std::vector<std::vector<ready_action>> ready(ranks);
    auto rank_of_stage = [&](int s) {
        return static_cast<std::size_t>(m.stage[static_cast<std::size_t>(s)].rank);
    };
    for (int j = 0; j < mbs; ++j) ready[rank_of_stage(0)].push_back({0, j, dt::kind_forward, 0});
    // Per rank: free time, memory held, memory reserved (with reservation), microbatches in
    // flight; per rank and microbatch: stages entered and memory held.
    std::vector<double> free(ranks, 0), held(ranks, 0), reserved(ranks, 0), need(ranks, 0);
    std::vector<int> in_flight(ranks, 0);
    std::vector<std::vector<int>> entered(ranks, std::vector<int>(static_cast<std::size_t>(mbs)));
    std::vector<std::vector<double>> mb_held(ranks,
                                             std::vector<double>(static_cast<std::size_t>(mbs)));
    for (std::size_t r = 0; r < ranks; ++r)
        for (int s : m.rank_stages[r]) need[r] += m.stage[static_cast<std::size_t>(s)].activation;
    auto activation = [&](int s) { return m.stage[static_cast<std::size_t>(s)].activation; };
    // What a microbatch that entered e of rank r's stages still needs: their activations from
    // the e-th on.
    auto still_needs = [&](std::size_t r, int e) {
        double total = 0;
        const auto& st = m.rank_stages[r];
        for (std::size_t k = static_cast<std::size_t>(e); k < st.size(); ++k)
            total += activation(st[k]);
        return total;
    };
    // The banker: a new microbatch may enter rank r when the microbatches there, least needs
    // first, can each finish with what the others before it gave back.
    auto banker = [&](std::size_t r) {
        const double first = activation(m.rank_stages[r].front());
        double avail = m.fit_limit[r] - m.parameters[r] - held[r] - first;
        std::vector<std::pair<double, double>> claims{{need[r] - first, first}};
        for (int j = 0; j < mbs; ++j) {
            const auto ju = static_cast<std::size_t>(j);
            if (entered[r][ju] > 0 && mb_held[r][ju] > 0)
                claims.emplace_back(still_needs(r, entered[r][ju]), mb_held[r][ju]);
        }
        std::sort(claims.begin(), claims.end());
        if (avail < 0) return false;
        for (const auto& [needs, holds] : claims) {
            if (needs > avail + 1e-12 * (1 + avail)) return false;
            avail += holds;
        }
        return true;
    };
    auto admissible = [&](std::size_t r, const ready_action& a) {
        if (a.kind != dt::kind_forward) return true;
        const bool enters = a.stage == m.rank_stages[r].front();
        if (!rule.reserve) {
            if (enters && (in_flight[r] >= rule.cap[r] || !banker(r))) return false;
            return m.parameters[r] + held[r] + activation(a.stage) <= m.fit_limit[r];
        }
        return !enters || (in_flight[r] < rule.cap[r] &&
                           m.parameters[r] + reserved[r] + need[r] <= m.fit_limit[r]);
    };
    // The rule's order of preference; an exact tie goes to the stage listed first on the
    // rank, then the lower kind.
    auto class_of = [&](int kind) {
        if (kind == dt::kind_weight) return rule.eager_weight ? 0 : 3;
        if (kind == dt::kind_backward) return rule.backward_first ? 1 : 2;
        return rule.backward_first ? 2 : 1;
    };
    auto place = [&](std::size_t r, int s) {
        const auto& st = m.rank_stages[r];
        return std::find(st.begin(), st.end(), s) - st.begin();
    };
    auto prefers = [&](std::size_t r, const ready_action& a, const ready_action& b) {
        if (class_of(a.kind) != class_of(b.kind)) return class_of(a.kind) < class_of(b.kind);
        if (a.kind == dt::kind_forward && b.kind == dt::kind_forward) {
            if (rule.deep_first && a.stage != b.stage) return a.stage > b.stage;
            if (a.mb != b.mb) return a.mb < b.mb;
            if (a.stage != b.stage) return a.stage > b.stage;
        } else if (a.kind != dt::kind_forward && b.kind != dt::kind_forward) {
            if (a.at != b.at) return a.at < b.at;
            if (a.mb != b.mb) return a.mb < b.mb;
        }
        if (place(r, a.stage) != place(r, b.stage)) return place(r, a.stage) < place(r, b.stage);
        return a.kind < b.kind;
    };
    std::size_t left = 0;
    for (std::size_t r = 0; r < ranks; ++r) left += m.rank_actions(static_cast<int>(r));
    for (; left > 0; --left) {
        std::size_t best = ranks;
        double best_t = 0;
        for (std::size_t r = 0; r < ranks; ++r) {
            double soonest = -1;
            for (const ready_action& a : ready[r])
                if (admissible(r, a) && (soonest < 0 || a.at < soonest)) soonest = a.at;
            if (soonest < 0) continue;
            const double t = std::max(soonest, free[r]);
            if (best == ranks || t < best_t) {
                best = r;
                best_t = t;
            }
        }
        if (best == ranks) return false;
        const std::size_t r = best;
        std::size_t pick = ready[r].size();
        for (std::size_t i = 0; i < ready[r].size(); ++i)
            if (ready[r][i].at <= best_t && admissible(r, ready[r][i]) &&
                (pick == ready[r].size() || prefers(r, ready[r][i], ready[r][pick])))
                pick = i;
        const ready_action a = ready[r][pick];
        ready[r].erase(ready[r].begin() + static_cast<std::ptrdiff_t>(pick));
        const dt::stage_info& st = m.stage[static_cast<std::size_t>(a.stage)];
        const double finish = best_t + st.dur[a.kind];
        free[r] = finish;
        out[r].push_back(m.node(a.stage, a.mb, a.kind));
        const auto j = static_cast<std::size_t>(a.mb);
        const bool first_stage = a.stage == m.rank_stages[r].front();
        double freed = 0;
        if (a.kind == dt::kind_forward) {
            held[r] += st.activation;
            ++entered[r][j];
            mb_held[r][j] += st.activation;
            if (first_stage) {
                ++in_flight[r];
                reserved[r] += need[r];
            }
            if (st.next >= 0)
                ready[rank_of_stage(st.next)].push_back(
                    {st.next, a.mb, dt::kind_forward,
                     finish + m.stage[static_cast<std::size_t>(st.next)].msg_from_prev});
            else
                ready[r].push_back({a.stage, a.mb, dt::kind_backward, finish});
        } else if (a.kind == dt::kind_backward) {
            freed = m.split ? st.activation * m.frees_by_i : st.activation;
            if (m.split)
                ready[r].push_back({a.stage, a.mb, dt::kind_weight, finish});
            else if (first_stage)
                --in_flight[r];
            if (st.prev >= 0)
                ready[rank_of_stage(st.prev)].push_back(
                    {st.prev, a.mb, dt::kind_backward,
                     finish + m.stage[static_cast<std::size_t>(st.prev)].msg_from_next});
        } else {
            freed = st.activation * (1 - m.frees_by_i);
            if (first_stage) --in_flight[r];
        }
        held[r] -= freed;
        reserved[r] -= freed;
        mb_held[r][j] -= freed;
    }
    return true;
}

} // namespace ppsched_test
