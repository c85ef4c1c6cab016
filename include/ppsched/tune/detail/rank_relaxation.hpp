#pragma once
/// \file tune/detail/rank_relaxation.hpp
/// The rank relaxation: a lower bound on the makespan from one rank solved exactly.
///
/// Keep one rank r as it is (one action at a time, its memory room, every action's head and
/// tail) and let every other rank run any number of actions at once. Between two actions of r
/// only the longest chain of durations and message times through the other ranks remains: a
/// *lag* from the first one's end to the second one's start. Any valid order, restricted to r,
/// is a sequence of this smaller problem whose makespan (the latest end + tail of r's actions)
/// is no later than the order's, so the relaxation's optimum is a lower bound. Some optimal
/// order runs each (stage, kind) queue in microbatch order (tune's symmetry), so the chains
/// between consecutive microbatches of a queue are lags too.
///
/// Unlike Jackson's bound and the memory ramp it keeps r's sequence whole: a forward waits
/// until r has freed enough, and a free comes only after its microbatch's round trip through
/// the other ranks, which starts at r's own forward. Under a tight memory limit this is what
/// decides the makespan (e.g. 4 ranks x 2 stages x 8 microbatches with half of 1F1B's memory:
/// 59.03 where Jackson's bound and the ramp give 57.86).
///
/// Solved by a depth-first branch and bound over r's sequences (each action as early as its
/// lags and r allow: the best of any fixed sequence, the makespan being regular): the active
/// rule (an I, W or B that could end by a candidate's start goes first), a memo of dominated
/// prefixes (same actions done, every time no later), and Jackson's pre-emptive bound of what
/// is left. NP-hard, so the search gets a node budget and says whether it finished; `tune`
/// gives it the best makespan found as the incumbent, so it only has to prove that r cannot
/// finish sooner. Preparing costs O(n_r x n) (the lags from each of r's n_r actions over all n
/// actions); a node costs O(n_r log n_r).

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <queue>
#include <utility>
#include <vector>

#include "ppsched/tune/detail/model.hpp"

namespace ppsched::detail::tune {

/// What `rank_relaxation::solve` found.
struct rank_relaxation_result {
    double value = 0;        ///< min(the relaxation's optimum, the cap), when complete
    bool complete = false;   ///< the search finished within its node and time budget
    std::uint64_t nodes = 0; ///< nodes visited
};

/// The rank relaxation of one rank of `m` (see the file comment).
class rank_relaxation {
  public:
    rank_relaxation(const model& m, int rank) : m_(m), rank_(rank) { prepare(); }

    /// The relaxation's optimum, or `cap` when it is not below `cap`; incomplete after
    /// `max_nodes` nodes or at `deadline`.
    [[nodiscard]] rank_relaxation_result solve(double cap, std::uint64_t max_nodes,
                                               std::chrono::steady_clock::time_point deadline =
                                                   std::chrono::steady_clock::time_point::max()) {
        best_ = cap;
        deadline_ = deadline;
        nodes_ = 0;
        max_nodes_ = max_nodes;
        out_of_nodes_ = false;
        seen_.clear();
        memo_doubles_ = 0;
        std::fill(done_.begin(), done_.end(), 0);
        std::fill(next_.begin(), next_.end(), 0);
        search(0, 0, 0, 0);
        return {best_, !out_of_nodes_, nodes_};
    }

  private:
    struct lag_from {
        int action; ///< local index of the earlier action
        double lag; ///< from its end to this action's start
    };

    // The whole action graph in a topological order (microbatch by microbatch: forwards down
    // the path, backwards up it, then the weights), its longest paths to and from each action,
    // and the lags between this rank's actions.
    void prepare() {
        const int S = m_.stages, Mb = m_.microbatches, K = m_.kinds();
        std::vector<int> path; // stages in the microbatch's path
        for (int s = 0; s >= 0; s = m_.stage[static_cast<std::size_t>(s)].next) path.push_back(s);
        std::vector<int> order;
        order.reserve(static_cast<std::size_t>(S * Mb * K));
        for (int j = 0; j < Mb; ++j) {
            for (int s : path) order.push_back(m_.node(s, j, kind_forward));
            for (auto it = path.rbegin(); it != path.rend(); ++it)
                order.push_back(m_.node(*it, j, kind_backward));
            if (m_.split)
                for (int s : path) order.push_back(m_.node(s, j, kind_weight));
        }
        const std::size_t nodes = m_.node_count();
        std::vector<std::vector<std::pair<int, double>>> out(nodes); // (node, lag after end)
        for (int x : order) {
            const int s = m_.stage_of(x), j = m_.mb_of(x), k = model::kind_of(x);
            const stage_info& st = m_.stage[static_cast<std::size_t>(s)];
            auto edge = [&](int from, double lag) {
                out[static_cast<std::size_t>(from)].push_back({x, lag});
            };
            if (j > 0) edge(m_.node(s, j - 1, k), 0);
            if (k == kind_forward && st.prev >= 0)
                edge(m_.node(st.prev, j, kind_forward), st.msg_from_prev);
            if (k == kind_backward) {
                edge(m_.node(s, j, kind_forward), 0);
                if (st.next >= 0) edge(m_.node(st.next, j, kind_backward), st.msg_from_next);
            }
            if (k == kind_weight) edge(m_.node(s, j, kind_backward), 0);
        }
        std::vector<double> head(nodes, 0), tail(nodes, 0);
        for (int x : order)
            for (auto [y, lag] : out[static_cast<std::size_t>(x)])
                head[static_cast<std::size_t>(y)] =
                    std::max(head[static_cast<std::size_t>(y)],
                             head[static_cast<std::size_t>(x)] + m_.duration(x) + lag);
        for (auto it = order.rbegin(); it != order.rend(); ++it)
            for (auto [y, lag] : out[static_cast<std::size_t>(*it)])
                tail[static_cast<std::size_t>(*it)] =
                    std::max(tail[static_cast<std::size_t>(*it)],
                             lag + m_.duration(y) + tail[static_cast<std::size_t>(y)]);
        // This rank's actions, as queues of (stage, kind) in microbatch order.
        std::vector<int> local(nodes, -1);
        for (int s : m_.rank_stages[static_cast<std::size_t>(rank_)])
            for (int k = 0; k < K; ++k) {
                queue_start_.push_back(static_cast<int>(dur_.size()));
                for (int j = 0; j < Mb; ++j) {
                    const int x = m_.node(s, j, k);
                    local[static_cast<std::size_t>(x)] = static_cast<int>(dur_.size());
                    dur_.push_back(m_.duration(x));
                    head_.push_back(head[static_cast<std::size_t>(x)]);
                    tail_.push_back(tail[static_cast<std::size_t>(x)]);
                    const double a = m_.stage[static_cast<std::size_t>(s)].activation;
                    mem_.push_back(k == kind_forward    ? a
                                   : !m_.split          ? -a
                                   : k == kind_backward ? -a * m_.frees_by_i
                                                        : -a * (1 - m_.frees_by_i));
                }
            }
        const std::size_t n = dur_.size();
        preds_.assign(n, {});
        std::vector<std::size_t> pos(nodes);
        for (std::size_t i = 0; i < order.size(); ++i) pos[static_cast<std::size_t>(order[i])] = i;
        constexpr double none = -std::numeric_limits<double>::infinity();
        std::vector<double> d(nodes);
        for (int x : order) {
            const int from = local[static_cast<std::size_t>(x)];
            if (from < 0) continue;
            std::fill(d.begin(), d.end(), none);
            for (auto [y, lag] : out[static_cast<std::size_t>(x)])
                d[static_cast<std::size_t>(y)] = std::max(d[static_cast<std::size_t>(y)], lag);
            for (std::size_t i = pos[static_cast<std::size_t>(x)] + 1; i < order.size(); ++i) {
                const int y = order[i];
                const double dy = d[static_cast<std::size_t>(y)];
                if (dy == none) continue;
                if (const int to = local[static_cast<std::size_t>(y)]; to >= 0)
                    preds_[static_cast<std::size_t>(to)].push_back({from, dy});
                for (auto [z, lag] : out[static_cast<std::size_t>(y)])
                    d[static_cast<std::size_t>(z)] =
                        std::max(d[static_cast<std::size_t>(z)], dy + m_.duration(y) + lag);
            }
        }
        const auto ru = static_cast<std::size_t>(rank_);
        parameters_ = m_.parameters[ru];
        limit_ = m_.fit_limit[ru]; // a relaxation: whatever the search admits
        done_.assign(n, 0);
        end_.assign(n, 0);
        next_.assign(queue_start_.size(), 0);
        left_.assign(n, 0);
    }

    // The earliest start of local action i from its done predecessors and its head; with
    // `need_all`, -1 when a predecessor is not done.
    [[nodiscard]] double release(std::size_t i, bool need_all) const {
        double t = head_[i];
        for (const lag_from& p : preds_[i]) {
            if (!done_[static_cast<std::size_t>(p.action)]) {
                if (need_all) return -1;
                continue;
            }
            t = std::max(t, end_[static_cast<std::size_t>(p.action)] + p.lag);
        }
        return t;
    }

    // Jackson's pre-emptive schedule of the actions not done, from time t.
    [[nodiscard]] double jackson(double t) {
        open_.clear();
        for (std::size_t i = 0; i < dur_.size(); ++i)
            if (!done_[i]) open_.push_back({std::max(t, release(i, false)), i});
        std::sort(open_.begin(), open_.end());
        std::priority_queue<std::pair<double, std::size_t>> ready; // (tail, action)
        double lb = 0;
        std::size_t k = 0;
        while (k < open_.size() || !ready.empty()) {
            if (ready.empty()) t = std::max(t, open_[k].first);
            while (k < open_.size() && open_[k].first <= t) {
                const std::size_t i = open_[k++].second;
                left_[i] = dur_[i];
                ready.push({tail_[i], i});
            }
            const std::size_t i = ready.top().second;
            const double run = k < open_.size() ? std::min(left_[i], open_[k].first - t) : left_[i];
            t += run;
            left_[i] -= run;
            if (left_[i] <= 0) {
                ready.pop();
                lb = std::max(lb, t + tail_[i]);
            }
        }
        return lb;
    }

    void search(double t, double held, double makespan, std::size_t depth) {
        if (++nodes_ > max_nodes_ ||
            ((nodes_ & 1023) == 0 && std::chrono::steady_clock::now() >= deadline_))
            out_of_nodes_ = true;
        if (out_of_nodes_) return;
        if (depth == dur_.size()) {
            best_ = std::min(best_, makespan);
            return;
        }
        if (std::max(makespan, jackson(t)) >= best_) return;
        // Dominance: the same actions done, every time that matters no later and no more
        // memory held (the same set, but summed in another order it may differ by rounding).
        signature_.assign({t, makespan, held});
        for (std::size_t i = 0; i < dur_.size(); ++i)
            if (!done_[i]) signature_.push_back(release(i, false));
        const std::size_t w = signature_.size();
        auto it = seen_.find(next_);
        if (it != seen_.end()) {
            const std::vector<double>& stored = it->second;
            for (std::size_t at = 0; at + w <= stored.size(); at += w) {
                bool dominated = true;
                for (std::size_t x = 0; x < w && dominated; ++x)
                    dominated = stored[at + x] <= signature_[x];
                if (dominated) return;
            }
        }
        // At most 128 prefixes per set of actions, and 64 MB in all.
        if (memo_doubles_ + w <= (std::size_t{64} << 20) / 8) {
            if (it == seen_.end()) it = seen_.emplace(next_, std::vector<double>{}).first;
            if (it->second.size() < 128 * w) {
                it->second.insert(it->second.end(), signature_.begin(), signature_.end());
                memo_doubles_ += w;
            }
        }
        // Candidates: each queue's next action, its predecessors done, within memory.
        struct candidate {
            double start;
            std::size_t queue, action;
        };
        std::vector<candidate> cands;
        for (std::size_t q = 0; q < next_.size(); ++q) {
            const int j = next_[q];
            if (j >= m_.microbatches) continue;
            const auto i = static_cast<std::size_t>(queue_start_[q] + j);
            const double r = release(i, true);
            if (r < 0) continue;
            // After every F, parameters + held <= limit, summed as `simulate` does (held is
            // the running sum in the rank's order), with a relative slack: the active rule's
            // exchange is exact only in real arithmetic, and a looser test is still a bound.
            if (is_forward(q) && parameters_ + (held + mem_[i]) > limit_ * (1 + 1e-9) + 1e-9)
                continue;
            cands.push_back({std::max(t, r), q, i});
        }
        std::sort(cands.begin(), cands.end(),
                  [](const candidate& a, const candidate& b) { return a.start < b.start; });
        for (const candidate& c : cands) {
            // The active rule: another backward-side action that could start earlier and end
            // by c's start goes first (it frees memory no later and delays nothing). Strict
            // on the start, so that actions of no duration do not cut each other.
            bool shift = false;
            for (const candidate& y : cands)
                shift = shift || (y.action != c.action && !is_forward(y.queue) &&
                                  y.start < c.start && y.start + dur_[y.action] <= c.start);
            if (shift) continue;
            done_[c.action] = 1;
            end_[c.action] = c.start + dur_[c.action];
            ++next_[c.queue];
            search(end_[c.action], held + mem_[c.action],
                   std::max(makespan, end_[c.action] + tail_[c.action]), depth + 1);
            --next_[c.queue];
            done_[c.action] = 0;
            if (out_of_nodes_) return;
        }
    }

    [[nodiscard]] bool is_forward(std::size_t q) const noexcept {
        return q % static_cast<std::size_t>(m_.kinds()) == kind_forward;
    }

    const model& m_;
    int rank_;
    std::vector<int> queue_start_; // per queue: its first local action
    std::vector<double> dur_, head_, tail_, mem_;
    std::vector<std::vector<lag_from>> preds_;
    double parameters_ = 0, limit_ = 0;
    // Search state.
    std::vector<char> done_;
    std::vector<double> end_, left_, signature_;
    std::vector<int> next_; // per queue: the next microbatch
    std::vector<std::pair<double, std::size_t>> open_;
    std::map<std::vector<int>, std::vector<double>> seen_; // dominance memo: per set, signatures
    std::size_t memo_doubles_ = 0;
    double best_ = 0;
    std::uint64_t nodes_ = 0, max_nodes_ = 0;
    bool out_of_nodes_ = false; // out of nodes or time
    std::chrono::steady_clock::time_point deadline_;
};

} // namespace ppsched::detail::tune
