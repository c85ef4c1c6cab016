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
///   rule (always run the released action with the longest tail), in O(n K) per rank for its K
///   (stage, kind) queues.
/// - Memory and time. A rank's activation memory never exceeds its limit (minus its
///   parameters) at any time, so the integral of its memory over the step is at most
///   limit * makespan. Each microbatch holds a stage's activation at least from its forward's
///   start to the end of the backward that frees it, at least the shortest round trip through
///   the later stages: the integral is at least the sum of these over stages and
///   microbatches, which bounds the makespan from below.
/// - Memory ramp. An F may start only when everything the rank took, this F included, less
///   what it freed before, fits its room. Ramp up: so the forwards that start before any time
///   t take at most room + the frees that end before t, each free ending no earlier than its
///   head plus its duration. Up to t the rank does at most the work of those forwards (whole
///   ones, exact for at most two activation sizes, else a fractional knapsack) and of the
///   other actions as released (run without a gap), and never more than it could with no
///   limit: it idles at least t minus that. Ramp down: the rank's last F (on its last stage in
///   the path) leaves only itself and the backward-side work of the activations it holds, at
///   most its room's worth, after its start; the rest and that idle come before it, and the
///   step lasts its duration and tail after it. The best t among the frees' earliest ends.
///
/// The bound is the largest of these over all ranks. Complexity: O(n log n) in the number of
/// actions, except the memory ramp: O(k n log n) with k <= 128 the candidate times per rank.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

#include "ppsched/tune/detail/model.hpp"
#include "ppsched/tune/problem.hpp"

namespace ppsched {
namespace detail::tune {

/// A run of one rank's actions in a one-machine relaxation: `count` actions of one duration;
/// action j is released at `release + j * release_step` and followed by a tail of
/// max(`tail`, `tail_last + (count - 1 - j) * tail_step`). The steps are not negative, so
/// releases never fall and tails never rise with j (as a stage's actions of one kind over the
/// microbatches, numbered either way: see the file comment).
struct job_queue {
    double duration = 0;
    std::size_t count = 0;
    double release = 0, release_step = 0;
    double tail = 0, tail_last = -std::numeric_limits<double>::infinity(), tail_step = 0;

    [[nodiscard]] double release_of(std::size_t j) const {
        return release + static_cast<double>(j) * release_step;
    }
    [[nodiscard]] double tail_of(std::size_t j) const {
        return std::max(tail, tail_last + static_cast<double>(count - 1 - j) * tail_step);
    }
};

/// One queue of a one-machine relaxation as `jackson_over_queues` runs it: the caller's queue
/// `q`, its actions `first` to `count` - 1 (each `duration` long).
struct jackson_run {
    std::size_t q = 0;
    std::size_t first = 0; ///< its first unfinished action
    std::size_t next = 0;  ///< its first unreleased one (start it at `first`)
    std::size_t count = 0; ///< one past its last action
    double duration = 0;
    double left = 0; ///< the time its first unfinished action still needs (start: `duration`)
    double front = -std::numeric_limits<double>::infinity(); ///< that action's tail if released
};

/// The optimal pre-emptive makespan (max of completion + tail) of one machine running the
/// actions of `runs`: Jackson's pre-emptive schedule (always the released action with the
/// longest tail; at a tie, the most time left, as a heap of (tail, left) pairs would).
/// `release_of(q, j)` and `tail_of(q, j)` give action j of queue q. Within a queue, releases
/// must never fall and tails never rise with j: then the released and unfinished actions of a
/// queue are a run whose first has the longest tail, so the schedule merges the queues
/// instead of sorting the actions and keeping a heap. O(n K) for n actions in K queues,
/// reading each queue in order. An infinite release gives an infinite bound (the action can
/// never start). Used by `lower_bound` and by the exact phase at each node.
template <class ReleaseOf, class TailOf>
[[nodiscard]] double jackson_over_queues(std::vector<jackson_run>& runs, ReleaseOf release_of,
                                         TailOf tail_of) {
    constexpr double never = std::numeric_limits<double>::infinity();
    double t = never, best = 0;
    for (const jackson_run& x : runs)
        if (x.next < x.count) t = std::min(t, release_of(x.q, x.next));
    // Releases happen only when the clock reaches the next arrival: only then are the queues
    // scanned for them (and the next arrival found again).
    double arrival = never;
    bool pending = false;
    auto release = [&] {
        arrival = never;
        pending = false;
        for (jackson_run& x : runs) {
            while (x.next < x.count && release_of(x.q, x.next) <= t) ++x.next;
            if (x.first < x.next) x.front = tail_of(x.q, x.first);
            if (x.next < x.count) {
                pending = true;
                arrival = std::min(arrival, release_of(x.q, x.next));
            }
        }
    };
    release();
    for (;;) {
        if (t >= arrival) release();
        double best_tail = -never, best_left = never;
        std::size_t pick = runs.size();
        for (std::size_t i = 0; i < runs.size(); ++i) {
            const jackson_run& x = runs[i];
            if (x.front > best_tail || (x.front == best_tail && x.left > best_left)) {
                best_tail = x.front;
                best_left = x.left;
                pick = i;
            }
        }
        if (pick == runs.size()) {
            if (!pending) break;          // all done
            if (t == never) return never; // (a release that is not a number: never released)
            t = arrival;                  // (an infinite release: run at infinity)
            continue;
        }
        jackson_run& x = runs[pick];
        const double step = arrival < never ? std::min(x.left, arrival - t) : x.left;
        t += step;
        if (step >= x.left) {
            best = std::max(best, t + best_tail);
            ++x.first;
            x.left = x.duration;
            x.front = x.first < x.next ? tail_of(x.q, x.first) : -never;
        } else {
            x.left -= step;
        }
    }
    return best;
}

/// Jackson's pre-emptive bound of the actions of `queues` (`jackson_over_queues`).
[[nodiscard]] inline double one_machine_bound(const std::vector<job_queue>& queues) {
    std::vector<jackson_run> runs;
    for (std::size_t i = 0; i < queues.size(); ++i)
        if (queues[i].count > 0)
            runs.push_back({i, 0, 0, queues[i].count, queues[i].duration, queues[i].duration});
    return jackson_over_queues(
        runs, [&](std::size_t q, std::size_t j) { return queues[q].release_of(j); },
        [&](std::size_t q, std::size_t j) { return queues[q].tail_of(j); });
}

/// One action of a rank for the memory ramp: its head, duration, the activation it takes (a
/// forward) or gives back (a backward-side action that frees memory).
struct ramp_job {
    double release = 0, duration = 0, take = 0, give = 0;
};

/// The most work forwards can do before some time within `budget` activation: `items` are
/// (activation, work before the time) of the forwards released before it. A forward is taken
/// whole or not at all: exactly (by counts) when the forwards have at most two activation
/// sizes, else the fractional knapsack's greedy value, which is never below the whole one.
/// Reorders and overwrites `items`. O(n log n).
[[nodiscard]] inline double forward_work_within(std::vector<std::pair<double, double>>& items,
                                                double budget) {
    if (items.empty() || budget <= 0) return 0;
    // How many of size a fit in `left` (a hair more than exact: rounding never lowers it).
    auto fit = [](double left, double a, std::size_t have) {
        if (left < 0) return std::size_t{0};
        const double k = std::floor(left / a * (1 + 1e-12) + 1e-12);
        return k >= static_cast<double>(have) ? have : static_cast<std::size_t>(k);
    };
    const double a = items.front().first;
    if (std::all_of(items.begin(), items.end(), [&](const auto& x) { return x.first == a; })) {
        // One size: the k largest works (no sort when all fit).
        const std::size_t k = fit(budget, a, items.size());
        if (k < items.size())
            std::nth_element(items.begin(), items.begin() + static_cast<std::ptrdiff_t>(k),
                             items.end(),
                             [](const auto& x, const auto& y) { return x.second > y.second; });
        double work = 0;
        for (std::size_t i = 0; i < k; ++i) work += items[i].second;
        return work;
    }
    // By activation, then by work, largest first.
    std::sort(items.begin(), items.end(), [](const auto& x, const auto& y) {
        return x.first != y.first ? x.first < y.first : x.second > y.second;
    });
    std::size_t split = 0; // first item of the second size
    while (split < items.size() && items[split].first == a) ++split;
    const double b = items[split].first;
    if (std::all_of(items.begin() + static_cast<std::ptrdiff_t>(split), items.end(),
                    [&](const auto& x) { return x.first == b; })) {
        // Two sizes: every count of the first, the rest of the budget to the second. Each
        // group's works become their running sums (the best c of a group: its c-th sum).
        for (std::size_t i = 1; i < items.size(); ++i)
            if (i != split) items[i].second += items[i - 1].second;
        const std::size_t n2 = items.size() - split;
        auto sum2 = [&](std::size_t c) { return c == 0 ? 0.0 : items[split + c - 1].second; };
        double best = sum2(fit(budget, b, n2));
        for (std::size_t c = 1; c <= split; ++c) {
            const double left = budget - static_cast<double>(c) * a;
            if (left < -1e-12 * budget) break;
            best = std::max(best, items[c - 1].second + sum2(fit(left, b, n2)));
        }
        return best;
    }
    std::sort(items.begin(), items.end(), [](const auto& x, const auto& y) {
        return x.second * y.first > y.second * x.first; // work per activation, largest first
    });
    double work = 0;
    for (const auto& [take, w] : items) {
        if (budget <= 0) break;
        work += take <= budget ? w : w * (budget / take);
        budget -= take;
    }
    return work;
}

/// The end of a rank's step after its last forward: `late_work` bounds the work the rank can
/// still have when its last forward starts (that forward, and the backward-side actions of
/// the activations it holds then, which fit its room), `reach` the least time from that start
/// to the end of the step (the forward's duration and tail).
struct ramp_end {
    double late_work = std::numeric_limits<double>::infinity();
    double reach = 0;
    double earliest = 0; ///< the least start of the last forward (its head)
};

/// Scratch space of `memory_ramp_bound`, reused between calls (it runs at every node of the
/// exact phase).
struct ramp_scratch {
    std::vector<double> ends;                        // earliest ends of the frees
    std::vector<std::pair<double, double>> forwards; // (activation, work before t)
};

/// The memory ramp of one rank (see the file comment): a lower bound on the makespan, from
/// the actions `jobs` it has still to run (sorted here; none starts before `now`), the room
/// they may take (`room`: the rank's room less what it holds), the least tail of any of them
/// and `end`. At most `max_times` candidate times t (the earliest ends of the frees, in
/// increasing order) are tried: each costs O(n log n), so this is O(max_times n log n).

[[nodiscard]] inline double memory_ramp_bound(std::vector<ramp_job>& jobs, ramp_scratch& scratch,
                                              double room, double least_tail, const ramp_end& end,
                                              double now = 0, std::size_t max_times = 128) {
    if (jobs.empty() || !(room >= 0)) return 0;
    std::sort(jobs.begin(), jobs.end(),
              [](const ramp_job& a, const ramp_job& b) { return a.release < b.release; });
    double work = 0;
    std::vector<double>& ends = scratch.ends;
    ends.clear();
    for (const ramp_job& j : jobs) {
        work += j.duration;
        if (j.give > 0) ends.push_back(j.release + j.duration);
    }
    std::sort(ends.begin(), ends.end());
    ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
    if (ends.size() > max_times) ends.resize(max_times);
    // The last forward starts after all but `late_work` of the rank's work, and the step ends
    // `reach` after it.
    const double early_work = work - end.late_work;
    double best = std::max(end.earliest, now + std::max(0.0, early_work)) + end.reach;
    std::vector<std::pair<double, double>>& forwards = scratch.forwards;
    for (double t : ends) {
        // Frees whose earliest end is before t; the slack makes rounding harmless: an end a few
        // ulps below t left out only lowers the bound by the slack subtracted below.
        const double slack = 1e-9 * std::max(1.0, t);
        double freed = 0, others = 0, all = 0, clock_others = now, clock_all = now;
        forwards.clear();
        for (const ramp_job& j : jobs) {
            if (j.release >= t) break;
            if (j.give > 0 && j.release + j.duration < t - slack) freed += j.give;
            // Run without a gap, as released: the most work any order does before t.
            clock_all = std::max(clock_all, j.release);
            all += std::max(0.0, std::min(j.duration, t - clock_all));
            clock_all += j.duration;
            if (j.take > 0) {
                forwards.push_back({j.take, std::min(j.duration, t - j.release)});
            } else {
                clock_others = std::max(clock_others, j.release);
                others += std::max(0.0, std::min(j.duration, t - clock_others));
                clock_others += j.duration;
            }
        }
        const double done = std::min(all, others + forward_work_within(forwards, room + freed));
        const double idle = t - slack - done; // the rank is idle at least this long before t
        best = std::max(best, work + idle + least_tail);
        // More work than can be done before t precedes the last forward, so it starts after t,
        // and after this idle time too. "More" by more than rounding: where the two are equal
        // (the last forward may then start before t) a sum in another order must not decide.
        if (early_work > done + 1e-9 * std::max(1.0, work))
            best = std::max(best, early_work + idle + end.reach);
    }
    return best;
}

/// The most backward-side work rank r can still owe for activations that take at most `cap`
/// of its memory together (up to one per microbatch and stage). Whole activations when they all
/// have one size, else a fractional knapsack (never less). With I freeing part, an activation whose
/// I has run holds the rest and owes its W only. O(V log V).
[[nodiscard]] inline double held_work(const model& m, int r, double cap) {
    struct item {
        double weight, value, count;
    };
    std::vector<item> items;
    const auto ru = static_cast<std::size_t>(r);
    const double count = m.microbatches;
    for (int s : m.rank_stages[ru]) {
        const stage_info& st = m.stage[static_cast<std::size_t>(s)];
        const double rest = m.split ? st.dur[kind_weight] : 0;
        items.push_back({st.activation, st.dur[kind_backward] + rest, count});
        if (m.split && m.frees_by_i > 0)
            items.push_back({st.activation * (1 - m.frees_by_i), rest, count});
    }
    double work = 0;
    for (const item& it : items)
        if (it.weight <= 0) work += it.value * it.count; // held for free
    std::erase_if(items, [](const item& it) { return it.weight <= 0; });
    if (items.empty() || cap <= 0) return work;
    const bool one_size = std::all_of(items.begin(), items.end(),
                                      [&](const item& it) { return it.weight == items[0].weight; });
    std::sort(items.begin(), items.end(), [](const item& a, const item& b) {
        return a.value * b.weight > b.value * a.weight; // work per unit of memory, most first
    });
    // Whole activations of one size: as many as fit (a hair more: rounding never lowers it).
    double left =
        one_size ? std::floor(cap / items[0].weight * (1 + 1e-12) + 1e-12) * items[0].weight : cap;
    for (const item& it : items) {
        if (left <= 0) break;
        const double take = std::min(it.count, left / it.weight);
        work += take * it.value;
        left -= take * it.weight;
    }
    return work;
}

/// `ramp_end::late_work` of rank r with `room` for activations: its last forward (on its last
/// stage in the path), that activation's backward-side actions, and those of the others it can
/// hold beside it.
[[nodiscard]] inline double last_forward_late_work(const model& m, int r, double room) {
    const stage_info& ls =
        m.stage[static_cast<std::size_t>(m.rank_stages[static_cast<std::size_t>(r)].back())];
    return ls.dur[kind_forward] + ls.dur[kind_backward] + (m.split ? ls.dur[kind_weight] : 0) +
           held_work(m, r, room - ls.activation);
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
    std::vector<job_queue> queues;
    std::vector<ramp_job> ramp;
    ramp_scratch scratch;
    for (int r = 0; r < m.ranks; ++r) {
        for (int numbering = 0; numbering < 2; ++numbering) {
            queues.clear();
            for (int s : m.rank_stages[static_cast<std::size_t>(r)]) {
                const auto su = static_cast<std::size_t>(s);
                for (int k = 0; k < m.kinds(); ++k) {
                    job_queue q;
                    q.duration = m.stage[su].dur[k];
                    q.count = static_cast<std::size_t>(m.microbatches);
                    q.release = c.head[k][su];
                    q.tail = c.tail[k][su];
                    if (numbering == 0) {
                        q.release_step = first_forward;
                    } else {
                        q.tail_last = c.to_last[k][su];
                        q.tail_step = last_action;
                    }
                    queues.push_back(q);
                }
            }
            const double b = one_machine_bound(queues);
            if (b > out.one_machine) {
                out.one_machine = b;
                out.one_machine_rank = r;
            }
        }
        // Memory-time: each microbatch holds a stage's activation at least for the round trip
        // from its forward's start to the end of what frees it.
        const auto ru = static_cast<std::size_t>(r);
        // (What an order may hold, `fit_limit`: the limit up to rounding.)
        const double room = m.fit_limit[ru] - m.parameters[ru];
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
        // The memory ramp, with the first numbering's heads (microbatch j's first forward
        // after j others).
        ramp.clear();
        double least_tail = std::numeric_limits<double>::infinity();
        for (int s : m.rank_stages[ru]) {
            const auto su = static_cast<std::size_t>(s);
            const stage_info& st = m.stage[su];
            for (int k = 0; k < m.kinds(); ++k) {
                ramp_job job{0, st.dur[k], 0, 0};
                if (k == kind_forward)
                    job.take = st.activation;
                else if (k == kind_backward)
                    job.give = st.activation * (m.split ? m.frees_by_i : 1);
                else
                    job.give = st.activation * (1 - m.frees_by_i);
                least_tail = std::min(least_tail, c.tail[k][su]);
                for (int j = 0; j < m.microbatches; ++j) {
                    job.release = c.head[k][su] + j * first_forward;
                    ramp.push_back(job);
                }
            }
        }
        // The last forward of the rank is on its last stage in the path (an earlier stage's
        // forward precedes that stage's forward of the same microbatch).
        const int last = m.rank_stages[ru].back();
        const stage_info& ls = m.stage[static_cast<std::size_t>(last)];
        ramp_end end;
        end.reach = ls.dur[kind_forward] + c.tail[kind_forward][static_cast<std::size_t>(last)];
        // It is the last of the m forwards of that stage, so it starts after the latest of
        // their heads, and after the first plus m - 1 of them.
        end.earliest = c.head[kind_forward][static_cast<std::size_t>(last)] +
                       (m.microbatches - 1) * std::max(first_forward, ls.dur[kind_forward]);
        end.late_work = last_forward_late_work(m, r, room);
        const double rb = memory_ramp_bound(ramp, scratch, room, least_tail, end);
        if (rb > out.memory_ramp) {
            out.memory_ramp = rb;
            out.memory_ramp_rank = r;
        }
    }
    out.value = std::max({out.one_machine, out.memory, out.memory_ramp});
    return out;
}

} // namespace detail::tune

/// A lower bound on the makespan of every valid order of `p`, with its parts and the least
/// memory any order needs per rank; with a split backward it also holds for orders that run
/// some backwards as `B`, and for orders with `OVERLAP_F_B` actions timed with an
/// `overlap_f_b` below their parts (see `detail::tune::bound_model`). Throws `config_error` for a
/// malformed problem (as `tune` does). Complexity: O(n log n) in the number of compute actions.
[[nodiscard]] inline makespan_bound lower_bound(const tune_problem& p) {
    bool relaxed = false;
    return detail::tune::bound(detail::tune::bound_model(detail::tune::make_model(p), p, relaxed));
}

} // namespace ppsched
