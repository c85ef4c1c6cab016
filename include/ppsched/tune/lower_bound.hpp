#pragma once
/// \file tune/lower_bound.hpp
/// `lower_bound(problem)`: a makespan no valid order of the problem can beat, and the least
/// memory any order needs. `tune` reports its result's gap to this bound; a gap of 0 proves
/// the order optimal.
///
/// How it is derived (each part is a relaxation, so each is a sound bound):
/// - Heads and tails. Ignoring that a rank runs one action at a time, an action cannot start
///   before the longest chain of its predecessors (its head: durations plus a message time for
///   every hop between ranks) and the step cannot end sooner than the longest chain of its
///   successors after it ends (its tail). Microbatches are interchangeable, so the
///   microbatches may be numbered in the order rank 0 runs their first forward; then
///   microbatch j's forward on stage 0 starts no earlier than j * F(stage 0), and that delay
///   adds to the head of every action of microbatch j. Numbered instead in the order rank 0
///   runs their last action (W, or B when fused, of stage 0), microbatch j still has
///   (m - 1 - j) of them to run after it, which adds to the tail of every action that leads to
///   it. Each numbering gives its own bound; both are kept.
/// - One rank at a time. A rank runs its actions one after another, each no earlier than its
///   head and followed by its tail: the best makespan of that one-machine problem, even with
///   pre-emption allowed, bounds the real one. Pre-emptive, it is solved exactly by Jackson's
///   rule (always run the released action with the longest tail), in O(n log n) per rank.
/// - Memory and time. A rank's activation memory never exceeds its limit (minus its
///   parameters) at any time, so the integral of its memory over the step is at most
///   limit * makespan. Each microbatch holds a stage's activation at least from its forward's
///   start to the end of the backward that frees it, at least the shortest round trip through
///   the later stages: the integral is at least the sum of these over stages and
///   microbatches, which bounds the makespan from below.
///
/// The bound is the largest of these over all ranks. Complexity: O(n log n) in the number of
/// actions.

#include <algorithm>
#include <cstddef>
#include <limits>
#include <queue>
#include <vector>

#include "ppsched/tune/detail/model.hpp"
#include "ppsched/tune/problem.hpp"

namespace ppsched {
namespace detail::tune {

/// One action of a one-machine relaxation.
struct relaxed_job {
    double release = 0, duration = 0, tail = 0;
};

/// The optimal pre-emptive makespan (max of completion + tail) of one machine (Jackson's
/// pre-emptive schedule). Sorts `jobs`. O(n log n).
[[nodiscard]] inline double one_machine_bound(std::vector<relaxed_job>& jobs) {
    std::sort(jobs.begin(), jobs.end(),
              [](const relaxed_job& a, const relaxed_job& b) { return a.release < b.release; });
    std::vector<double> remaining(jobs.size());
    for (std::size_t i = 0; i < jobs.size(); ++i) remaining[i] = jobs[i].duration;
    auto by_tail = [&](std::size_t a, std::size_t b) { return jobs[a].tail < jobs[b].tail; };
    std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(by_tail)> ready(by_tail);
    double t = 0, best = 0;
    std::size_t next = 0;
    while (next < jobs.size() || !ready.empty()) {
        if (ready.empty()) t = std::max(t, jobs[next].release);
        while (next < jobs.size() && jobs[next].release <= t) ready.push(next++);
        const std::size_t j = ready.top();
        const double release =
            next < jobs.size() ? jobs[next].release : std::numeric_limits<double>::infinity();
        if (t + remaining[j] <= release) {
            t += remaining[j];
            ready.pop();
            best = std::max(best, t + jobs[j].tail);
        } else {
            remaining[j] -= release - t;
            t = release;
        }
    }
    return best;
}

/// Per stage and kind: heads and tails ignoring the ranks' one-at-a-time rule, and the paths
/// to the microbatch's last action on stage 0 (for the second numbering).
struct chains {
    std::vector<double> head[3], tail[3], to_last[3];
};

[[nodiscard]] inline chains chain_lengths(const model& m) {
    const auto n = static_cast<std::size_t>(m.stages);
    constexpr double none = -std::numeric_limits<double>::infinity();
    chains c;
    for (int k = 0; k < 3; ++k) {
        c.head[k].assign(n, 0);
        c.tail[k].assign(n, 0);
        c.to_last[k].assign(n, none);
    }
    auto st = [&](int s) -> const stage_info& { return m.stage[static_cast<std::size_t>(s)]; };
    // The single direction's path is stage 0, 1, ..., S-1 (loop and v placements).
    for (int s = 0; s < m.stages; ++s) {
        const auto su = static_cast<std::size_t>(s);
        const int p = st(s).prev;
        c.head[0][su] = p < 0 ? 0
                              : c.head[0][static_cast<std::size_t>(p)] + st(p).dur[kind_forward] +
                                    st(s).msg_from_prev;
    }
    for (int s = m.stages - 1; s >= 0; --s) {
        const auto su = static_cast<std::size_t>(s);
        const int nx = st(s).next;
        double h = c.head[0][su] + st(s).dur[kind_forward];
        if (nx >= 0)
            h = std::max(h, c.head[1][static_cast<std::size_t>(nx)] + st(nx).dur[kind_backward] +
                                st(s).msg_from_next);
        c.head[1][su] = h;
        c.head[2][su] = h + st(s).dur[kind_backward];
    }
    // Tails: W has none; I (or B) leads to its W and to the previous stage's I (or B).
    for (int s = 0; s < m.stages; ++s) {
        const auto su = static_cast<std::size_t>(s);
        const int p = st(s).prev;
        double t = m.split ? st(s).dur[kind_weight] : 0;
        double last = s == 0 ? (m.split ? st(s).dur[kind_weight] : 0) : none;
        if (p >= 0) {
            const auto pu = static_cast<std::size_t>(p);
            const double hop = st(p).msg_from_next + st(p).dur[kind_backward];
            t = std::max(t, hop + c.tail[1][pu]);
            if (c.to_last[1][pu] > none) last = std::max(last, hop + c.to_last[1][pu]);
        }
        c.tail[1][su] = t;
        c.to_last[1][su] = last;
        if (s == 0 && m.split) c.to_last[2][su] = 0;
        if (s == 0 && !m.split) c.to_last[1][su] = 0;
    }
    for (int s = m.stages - 1; s >= 0; --s) {
        const auto su = static_cast<std::size_t>(s);
        const int nx = st(s).next;
        double t = st(s).dur[kind_backward] + c.tail[1][su];
        double last = c.to_last[1][su] > none ? st(s).dur[kind_backward] + c.to_last[1][su] : none;
        if (nx >= 0) {
            const auto nu = static_cast<std::size_t>(nx);
            const double hop = st(nx).msg_from_prev + st(nx).dur[kind_forward];
            t = std::max(t, hop + c.tail[0][nu]);
            if (c.to_last[0][nu] > none) last = std::max(last, hop + c.to_last[0][nu]);
        }
        c.tail[0][su] = t;
        c.to_last[0][su] = last;
    }
    return c;
}

/// The bound of `m` (see the file comment).
[[nodiscard]] inline makespan_bound bound(const model& m) {
    makespan_bound out;
    out.least_memory = least_memory(m);
    const chains c = chain_lengths(m);
    const double first_forward = m.stage[0].dur[kind_forward];
    const double last_action = m.stage[0].dur[m.split ? kind_weight : kind_backward];
    // The shortest time from a forward's end to its backward's start on each stage: the round
    // trip through the later stages.
    std::vector<double> round_trip(static_cast<std::size_t>(m.stages), 0);
    for (int s = m.stages - 1; s >= 0; --s) {
        const stage_info& st = m.stage[static_cast<std::size_t>(s)];
        if (st.next < 0) continue;
        const stage_info& n = m.stage[static_cast<std::size_t>(st.next)];
        round_trip[static_cast<std::size_t>(s)] = n.msg_from_prev + n.dur[kind_forward] +
                                                  round_trip[static_cast<std::size_t>(st.next)] +
                                                  n.dur[kind_backward] + st.msg_from_next;
    }
    std::vector<relaxed_job> jobs;
    for (int r = 0; r < m.ranks; ++r) {
        for (int numbering = 0; numbering < 2; ++numbering) {
            jobs.clear();
            for (int s : m.rank_stages[static_cast<std::size_t>(r)]) {
                const auto su = static_cast<std::size_t>(s);
                for (int k = 0; k < m.kinds(); ++k) {
                    const double d = m.stage[su].dur[k];
                    for (int j = 0; j < m.microbatches; ++j) {
                        relaxed_job job{c.head[k][su], d, c.tail[k][su]};
                        if (numbering == 0) {
                            job.release += j * first_forward;
                        } else if (c.to_last[k][su] > -std::numeric_limits<double>::infinity()) {
                            job.tail =
                                std::max(job.tail,
                                         c.to_last[k][su] + (m.microbatches - 1 - j) * last_action);
                        }
                        jobs.push_back(job);
                    }
                }
            }
            const double b = one_machine_bound(jobs);
            if (b > out.one_machine) {
                out.one_machine = b;
                out.one_machine_rank = r;
            }
        }
        // Memory-time: each microbatch holds a stage's activation at least for the round trip
        // from its forward's start to the end of what frees it.
        const auto ru = static_cast<std::size_t>(r);
        const double room = m.limit[ru] - m.parameters[ru];
        if (m.limit[ru] >= 1e299 || room <= 0) continue;
        double held = 0;
        for (int s : m.rank_stages[ru]) {
            const stage_info& st = m.stage[static_cast<std::size_t>(s)];
            const double gap = round_trip[static_cast<std::size_t>(s)];
            const double until_i = st.dur[kind_forward] + gap + st.dur[kind_backward];
            const double until_w = until_i + (m.split ? st.dur[kind_weight] : 0);
            held += st.activation * (m.frees_by_i * until_i + (1 - m.frees_by_i) * until_w);
        }
        const double b = held * m.microbatches / room;
        if (b > out.memory) {
            out.memory = b;
            out.memory_rank = r;
        }
    }
    out.value = std::max(out.one_machine, out.memory);
    return out;
}

} // namespace detail::tune

/// A lower bound on the makespan of every valid order of `p`, with its parts and the least
/// memory any order needs per rank. Throws `config_error` for a malformed problem (as `tune`
/// does). Complexity: O(n log n) in the number of compute actions.
[[nodiscard]] inline makespan_bound lower_bound(const tune_problem& p) {
    return detail::tune::bound(detail::tune::make_model(p));
}

} // namespace ppsched
