#pragma once
/// \file tune/detail/local_search.hpp
/// The improvement phase: a tabu search on the per-rank orders, guided by the critical path.
/// The makespan is the length of a chain of actions in which each one starts when the one
/// before it ends (on its rank, or as its input); only reordering the chain's blocks (its runs
/// of actions adjacent on one rank) can shorten it, so each step times the moves of a block's
/// actions to the block's start or end (the N6 neighbourhood of job-shop scheduling; see
/// `tabu_search`) and takes the best one not tabu (or any that beats the best order found). Each
/// timing is O(n) (from the moved actions on: `run_changed`); a step is O(critical path * n).

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "ppsched/tune/detail/evaluator.hpp"
#include "ppsched/tune/detail/list_scheduler.hpp"
#include "ppsched/tune/detail/model.hpp"
#include "ppsched/tune/detail/thread_team.hpp"
#include "ppsched/tune/problem.hpp"

namespace ppsched::detail::tune {

/// What stops a search, shared by every phase.
struct budget {
    std::chrono::steady_clock::time_point deadline;
    std::uint64_t max_evaluations = 0; ///< 0: none
    double target = 0;                 ///< stop once the makespan is <= this (the bound)
    bool out_of_time = false;
    bool out_of_evaluations = false;
    /// Progress reports: every second from `next_report` on, with the best makespan so far.
    std::function<void(const tune_progress&)> progress{};
    std::chrono::steady_clock::time_point started, next_report;
    double best_so_far = 0, bound = 0;

    [[nodiscard]] bool spent(const evaluator& ev) {
        if (max_evaluations != 0 && ev.count() >= max_evaluations) {
            out_of_evaluations = true;
            return true;
        }
        // Reading the clock costs little next to a timing (O(n)).
        const auto now = std::chrono::steady_clock::now();
        if (now >= deadline) out_of_time = true;
        if (progress && now >= next_report) {
            next_report = now + std::chrono::seconds(1);
            progress({std::chrono::duration<double>(now - started).count(), ev.count(), best_so_far,
                      bound});
        }
        return out_of_time || out_of_evaluations;
    }

    /// Records a better makespan (for the progress reports, and when the best was found:
    /// now, or at `when`).
    void improved(double makespan,
                  std::chrono::steady_clock::time_point when = std::chrono::steady_clock::now()) {
        if (makespan < best_so_far || best_so_far == 0) {
            best_so_far = makespan;
            best_at = std::chrono::duration<double>(when - started).count();
        }
    }
    double best_at = 0; ///< seconds from the start to the best makespan so far
};

/// A move of one action of a rank from one position to another (the actions between shift by
/// one): an adjacent swap when the positions differ by one.
struct shift_move {
    int rank = 0;
    std::size_t from = 0, to = 0;
};

/// Applies `mv` to `row`; `shift_move{r, to, from}` undoes it.
inline void apply_move(std::vector<int>& row, const shift_move& mv) {
    const auto first = row.begin();
    const auto f = static_cast<std::ptrdiff_t>(mv.from), t = static_cast<std::ptrdiff_t>(mv.to);
    if (f < t)
        std::rotate(first + f, first + f + 1, first + t + 1);
    else if (t < f)
        std::rotate(first + t, first + f, first + f + 1);
}

/// The critical chain of the last recorded run, from its end back to its start.
inline void critical_chain(const evaluator& ev, const sequences& seq, std::vector<int>& chain) {
    chain.clear();
    int last = -1;
    double when = -1;
    for (const auto& row : seq)
        if (!row.empty() && ev.end(row.back()) > when) {
            when = ev.end(row.back());
            last = row.back();
        }
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

/// Times a tabu step's moves on several threads (`tabu_search`). Each thread but the caller's
/// has its own evaluator, rebased on the step's order, and its own copy of that order; each
/// move's timing is a pure function of the order and the move (`run_changed` gives `run`'s
/// result to the last bit), so the search is the same for any number of threads.
class move_timer {
  public:
    /// `min_work`: the least moves x actions of a step worth sharing out. A job handed to the
    /// other threads costs a few microseconds, a move's timing about 2 ns per action it times
    /// again (about half of them); at 192 actions (4 ranks x 2 stages x 8 microbatches) the
    /// default shares steps of 86 moves or more, and restarts ran 1.45x faster on 2 cores.
    move_timer(const model& m, std::size_t threads, std::size_t min_work = 16384)
        : m_(m), threads_(std::max<std::size_t>(1, threads)), min_work_(min_work) {}

    /// Whether `moves` moves on an order of `actions` actions are worth sharing out.
    [[nodiscard]] bool worth(std::size_t moves, std::size_t actions) const {
        return threads_ > 1 && moves >= 8 && moves * actions >= min_work_;
    }

    /// Times each of `moves` applied alone to `seq`, the order `ev` last recorded (`run<true>`),
    /// into `out`, and sets `done[k]` for each move timed: all of them, unless `deadline`
    /// passed first (a step on millions of actions can take seconds). `seq` and `ev`'s base
    /// are as they were when it returns (`ev`'s count grows by the moves it timed itself).
    void time_moves(evaluator& ev, sequences& seq, const std::vector<shift_move>& moves,
                    std::vector<evaluation>& out, std::vector<char>& done,
                    std::chrono::steady_clock::time_point deadline) {
        out.resize(moves.size());
        done.assign(moves.size(), 0);
        std::size_t actions = 0;
        for (const auto& row : seq) actions += row.size();
        // The clock is read before every few moves: about every 4096 actions timed again.
        const std::size_t every =
            std::bit_floor(std::max<std::size_t>(1, 4096 / std::max<std::size_t>(actions, 1)));
        const std::size_t runs = std::min(threads_, moves.size() / 4);
        if (!team_) team_.emplace(threads_ - 1);
        while (evs_.size() + 1 < runs) evs_.push_back(std::make_unique<evaluator>(m_));
        seqs_.resize(evs_.size());
        for (std::size_t t = 1; t < runs; ++t) seqs_[t - 1] = seq;
        const std::size_t pieces = 8 * runs;
        std::atomic<std::size_t> next{0};
        std::atomic<bool> stop{false};
        const std::function<void(std::size_t)> work = [&](std::size_t t) {
            evaluator& e = t == 0 ? ev : *evs_[t - 1];
            sequences& s = t == 0 ? seq : seqs_[t - 1];
            if (t > 0) e.rebase(ev); // reads only the base, which `run_changed` leaves alone
            for (std::size_t i = next++; i < pieces; i = next++)
                for (std::size_t k = moves.size() * i / pieces, seen = 0;
                     k < moves.size() * (i + 1) / pieces; ++k, ++seen) {
                    if (seen % every == 0 && (stop.load(std::memory_order_relaxed) ||
                                              std::chrono::steady_clock::now() >= deadline)) {
                        stop = true;
                        return;
                    }
                    const shift_move& mv = moves[k];
                    auto& row = s[static_cast<std::size_t>(mv.rank)];
                    apply_move(row, mv);
                    out[k] = e.run_changed(s, static_cast<std::size_t>(mv.rank),
                                           std::min(mv.from, mv.to));
                    apply_move(row, {mv.rank, mv.to, mv.from});
                    done[k] = 1;
                }
        };
        (void)team_->run(runs, stop, work);
    }

  private:
    const model& m_;
    std::size_t threads_, min_work_;
    std::optional<thread_team> team_;
    std::vector<std::unique_ptr<evaluator>> evs_;
    std::vector<sequences> seqs_;
};

/// Improves `seq` (whose evaluation is `cur`) in place by tabu search until `patience` steps
/// bring no new best or the budget is spent. Returns the best order's evaluation (left in
/// `seq`).
///
/// Moves (the N6 neighbourhood of job-shop scheduling): the critical chain splits into blocks,
/// runs of actions adjacent on one rank each starting when the one before ends; an action of a
/// block moves to just before the block's first action or just after its last (the makespan
/// can only shrink if a block's first or last action changes). At most `reach` positions per
/// block end are tried, so a step costs O(chain * reach * n).
///
/// With `timer`, a step's moves are timed together on its threads where that pays
/// (`move_timer::worth`), then taken in their order as here: the same search, counts included.
inline evaluation tabu_search(const model& m, evaluator& ev, sequences& seq, evaluation cur,
                              budget& limit, rng& random, int patience, bool wide_moves = true,
                              move_timer* timer = nullptr) {
    sequences best_seq = seq;
    evaluation best = cur;
    std::vector<std::size_t> where(m.node_count(), 0);
    auto reindex = [&](std::size_t r, std::size_t lo, std::size_t hi) {
        for (std::size_t i = lo; i <= hi && i < seq[r].size(); ++i)
            where[static_cast<std::size_t>(seq[r][i])] = i;
    };
    for (std::size_t r = 0; r < seq.size(); ++r) reindex(r, 0, seq[r].size());
    // Tabu: an action just moved may not move again for a few steps (unless it gives a new
    // best order).
    std::vector<int> tabu_until(m.node_count(), -1);
    const int tenure = 5;
    std::size_t total = 0;
    for (const auto& row : seq) total += row.size();
    // Fewer positions per block on large problems: each try is a timing of the whole order.
    const std::size_t reach = total <= 2000 ? 8 : total <= 20000 ? 4 : 2;
    // The wide neighbourhood only where a step stays cheap.
    const bool wide = wide_moves && total <= 4000;
    const std::size_t wide_reach = 4;
    std::vector<int> chain;
    std::vector<shift_move> moves, runnable;
    std::vector<evaluation> timed;
    std::vector<char> timed_done;
    int since_best = 0;
    for (int step = 0; since_best < patience; ++step) {
        if (best.makespan <= limit.target || limit.spent(ev)) break;
        (void)ev.run<true>(seq);
        critical_chain(ev, seq, chain);
        std::reverse(chain.begin(), chain.end()); // first to last
        moves.clear();
        auto rank_of = [&](int x) { return m.stage[static_cast<std::size_t>(m.stage_of(x))].rank; };
        for (std::size_t i = 0; i < chain.size();) {
            // The block starting at chain[i].
            std::size_t j = i;
            const int r = rank_of(chain[i]);
            while (j + 1 < chain.size() && rank_of(chain[j + 1]) == r &&
                   where[static_cast<std::size_t>(chain[j + 1])] ==
                       where[static_cast<std::size_t>(chain[j])] + 1)
                ++j;
            if (j > i) {
                const std::size_t a = where[static_cast<std::size_t>(chain[i])];
                const std::size_t b = where[static_cast<std::size_t>(chain[j])];
                for (std::size_t k = a + 1; k <= b && k <= a + reach; ++k)
                    moves.push_back({r, k, a});
                for (std::size_t k = b; k-- > a && k + reach >= b;) moves.push_back({r, k, b});
            }
            // Beyond the block: each action of it a few places earlier or later (reaches
            // orders whose rank waits on purpose, e.g. staggered microbatches under a memory
            // limit).
            if (wide) {
                const std::size_t len = seq[static_cast<std::size_t>(r)].size();
                for (std::size_t c = i; c <= j; ++c) {
                    const std::size_t at = where[static_cast<std::size_t>(chain[c])];
                    for (std::size_t d = 2; d <= wide_reach; ++d) {
                        if (at >= d) moves.push_back({r, at, at - d});
                        if (at + d < len) moves.push_back({r, at, at + d});
                    }
                }
            }
            i = j + 1;
        }
        if (moves.empty()) break;
        // A move past an action it depends on (or that depends on it) cannot run.
        runnable.clear();
        for (const shift_move& mv : moves) {
            const auto& row = seq[static_cast<std::size_t>(mv.rank)];
            const int x = row[mv.from];
            bool blocked = false;
            if (mv.to < mv.from) {
                for (std::size_t k = mv.to; k < mv.from && !blocked; ++k)
                    blocked = direct_dependency(m, row[k], x);
            } else {
                for (std::size_t k = mv.from + 1; k <= mv.to && !blocked; ++k)
                    blocked = direct_dependency(m, x, row[k]);
            }
            if (!blocked) runnable.push_back(mv);
        }
        // Timed all at once on the timer's threads, or one by one below (then only up to
        // where the budget runs out). Either way each counts when it is taken.
        const bool shared = timer != nullptr && timer->worth(runnable.size(), total);
        if (shared) {
            const std::uint64_t counted = ev.count();
            timer->time_moves(ev, seq, runnable, timed, timed_done, limit.deadline);
            ev.set_count(counted);
        }
        evaluation pick{};
        shift_move chosen{};
        bool found = false;
        for (std::size_t c = 0; c < runnable.size(); ++c) {
            const shift_move& mv = runnable[c];
            auto& row = seq[static_cast<std::size_t>(mv.rank)];
            const int x = row[mv.from];
            const bool is_tabu = tabu_until[static_cast<std::size_t>(x)] > step;
            evaluation e;
            if (shared) {
                if (!timed_done[c]) break; // the deadline passed while the step was timed
                e = timed[c];
                ev.set_count(ev.count() + 1);
            } else {
                apply_move(row, mv);
                e = ev.run_changed(seq, static_cast<std::size_t>(mv.rank),
                                   std::min(mv.from, mv.to));
                apply_move(row, {mv.rank, mv.to, mv.from});
            }
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
        const int x = row[chosen.from];
        apply_move(row, chosen);
        reindex(static_cast<std::size_t>(chosen.rank), std::min(chosen.from, chosen.to),
                std::max(chosen.from, chosen.to));
        tabu_until[static_cast<std::size_t>(x)] =
            step + 1 + tenure + static_cast<int>(random.below(3));
        cur = pick;
        if (better(cur, best)) {
            best = cur;
            best_seq = seq;
            limit.improved(best.makespan);
            since_best = 0;
        } else {
            ++since_best;
        }
    }
    seq = std::move(best_seq);
    return best;
}

} // namespace ppsched::detail::tune
