#pragma once
/// \file tune/detail/exact_search.hpp
/// The auto-scheduler's exact phase: a depth-first branch and bound over all valid orders that
/// looks for one faster than the best order found so far, or proves that none exists (then
/// that order is optimal). Exponential in the worst case, as any exact method for this
/// NP-hard problem, so `tune` gives it a node budget; on small problems it usually finishes.
/// `beam` explores the same partial orders breadth-first, keeping only the best few per depth
/// by the same bound: a heuristic (it proves nothing) that `tune` runs before the exact phase (and,
/// where the answer is not proven within 1 %, its widest ones after it).
///
/// Why each rule keeps an optimal order reachable:
/// - Symmetry: costs depend on the stage, not the microbatch, so some optimal order runs each
///   (stage, kind) queue in microbatch order (relabel the k-th action of every queue as
///   microbatch k: each dependency x_j >= y_j + d still holds after sorting both sides; memory
///   depends on the kinds and stages of a rank's positions only). Only such orders are built.
/// - A node is a partial order: each rank's prefix, every action at its earliest start. A child
///   appends one action whose inputs are scheduled and whose forward fits in memory.
/// - Active rule: a child that appends x is cut when a backward-side action y of x's rank (I, W
///   or B: they only free memory) could start before x does and end by x's start. Moving y
///   into that gap keeps the order valid, within memory and no slower while lowering the sum
///   of start times, so the optimal order with the least such sum is never cut.
/// - One rank per node (`branching_rank`): where Giffler and Thompson's rule holds for a rank
///   (kept safe for memory), the children append to that rank only; moving a memory-freeing
///   action earlier is what the argument needs, as for the active rule.
/// - Dominance: two nodes with the same scheduled actions, where one has every rank free and
///   every awaited result ready no later than the other, give the later one no better
///   completion; a node is cut when an explored node dominates it (the memo, bounded in size).
/// - Bounds: each unscheduled action's head (earliest start through dependencies, queue order
///   and, with a memory limit, the frees an F must wait for) plus its duration and tail;
///   Jackson's preemptive one-machine schedule per rank; memory x time and the memory ramp
///   (tune/lower_bound.hpp) per rank.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ppsched/tune/detail/evaluator.hpp"
#include "ppsched/tune/detail/model.hpp"
#include "ppsched/tune/detail/thread_team.hpp"
#include "ppsched/tune/lower_bound.hpp"

namespace ppsched::detail::tune {

/// What the exact phase found.
struct exact_outcome {
    bool complete = false; ///< the search finished: `best` (or the incumbent) is optimal
    bool improved = false; ///< it found an order faster than the incumbent, in `seq`
    double best = 0;       ///< the makespan of `seq` when improved
    std::chrono::steady_clock::time_point found_at{}; ///< when `seq` was found
    sequences seq;                                    ///< the faster order
    double root_bound = 0;    ///< the bound at the root (heads delayed by memory included)
    double lower = 0;         ///< the lower bound proven (>= root_bound; the optimum if complete)
    std::uint64_t nodes = 0;  ///< partial orders visited
    std::size_t threads = 1;  ///< a beam's: the most threads one of its depths ran on
    std::uint64_t reused = 0; ///< a beam's: ranks whose bound a child took from its parent
    std::uint64_t dominated = 0;      ///< a beam's: children dropped unbounded, another child of
                                      ///< their depth dominating them (pass 2)
    std::uint64_t dominated_late = 0; ///< a beam's: bounded children dropped because a child
                                      ///< kept before them dominates them (0 after pass 2)
};

/// The exact phase's limits.
struct exact_limits {
    std::uint64_t max_nodes = 0; ///< partial orders to visit at most (0: none)
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    std::size_t memo_bytes = std::size_t{64} << 20; ///< memo size, about (keys, times, nodes)
    /// Called now and then on the calling thread (every 256 nodes of a search, after each
    /// depth of a beam): `tune`'s progress line goes on during a long search.
    std::function<void()> tick{};
    /// A beam stops as at the deadline once this is set (by another thread; null: never).
    const std::atomic<bool>* cancel = nullptr;
};

/// About the work of a beam of `width` (`exact_search::beam`) over a problem of n compute
/// actions: n depths x width partial orders x about one child per rank, each child bounded in
/// O(n). Not linear: `tune` runs a beam only while this stays under 10^8 (a second or two:
/// 3.8 x 10^7 is 0.4 s at 192 actions, 7.5 x 10^7 about 2 s at 1536).
[[nodiscard]] inline double beam_work(const model& m, std::size_t n, std::size_t width) {
    const auto x = static_cast<double>(n);
    return x * x * static_cast<double>(width) * static_cast<double>(m.ranks);
}

class exact_search {
  public:
    explicit exact_search(const model& m) : m_(m) { build(); }

    /// Searches for an order faster than `incumbent` (the best makespan known); `lower` is a
    /// lower bound known already.
    ///
    /// Probes first: a search with a target just above the lower bound (where the bound is
    /// tight, the strong pruning finds an optimal order fast; when it finishes empty, the
    /// bound rises to the target), then one halfway, each with a quarter of the budget; then
    /// the incumbent's target with the rest. A probe that finishes proves its target a lower
    /// bound; one that finds an order lowers the incumbent.
    [[nodiscard]] exact_outcome run(double incumbent, const exact_limits& limits,
                                    double lower = 0) {
        limits_ = limits;
        out_ = exact_outcome{};
        target_ = incumbent * (1 - 1e-12);
        reset();
        out_.root_bound = std::min(bound(), incumbent);
        double lo = std::max(out_.root_bound, lower), hi = incumbent;
        auto settled = [&] { return lo >= hi * (1 - 1e-12); };
        const std::uint64_t quarter =
            limits.max_nodes != 0 ? std::max<std::uint64_t>(limits.max_nodes / 4, 1) : 100'000;
        // One probe: a finished one proves its (final) target a lower bound.
        auto run_probe = [&](double target, std::uint64_t nodes) {
            const bool had = out_.improved;
            const double before = out_.best;
            const bool finished = probe(target, nodes);
            const bool found = out_.improved && (!had || out_.best < before);
            if (found) hi = std::min(hi, out_.best);
            if (finished) lo = std::max(lo, (found ? out_.best : target) * (1 - 1e-12));
        };
        for (double share : {0.0, 0.5}) {
            if (settled() || stopped_) break;
            const double target = share == 0 ? lo * (1 + 1e-9) : lo + share * (hi - lo);
            if (target < hi * (1 - 1e-12)) run_probe(target, quarter);
        }
        if (!settled() && !stopped_) run_probe(hi, ~std::uint64_t{0});
        out_.lower = std::min(lo, hi);
        out_.complete = settled();
        return out_;
    }

    /// Whether a beam's children take the bound of a rank whose heads did not move from their
    /// parent (`bound`; on by default). Off, every rank is bounded again: for tests, which
    /// check that the beam is the same either way.
    void reuse_rank_bounds(bool on) { reuse_ = on; }

    /// Whether a beam drops, before bounding them, the children that another child of the same
    /// depth dominates (`beam`, pass 2; on by default). Off, every child is bounded and only
    /// those that a child kept before them dominates are dropped (`exact_outcome::
    /// dominated_late`): for tests.
    void drop_dominated_first(bool on) { drop_first_ = on; }

    /// A beam search over the same partial orders (heuristic, not exact): depth by depth it
    /// keeps the `width` children with the least bound (ties: the least total of the ranks'
    /// free times, then the parent's place and the queue), no two of them such that one
    /// dominates the other, and drops the others. Children are those of one rank where
    /// `branching_rank` allows it, as in the exact search: on 360 small problems this found 5
    /// better orders and 2 worse than every rank's children, in less time. The bound is a strong
    /// guide where memory limits make depth-first search wander; a beam finds good complete
    /// orders in O(n * width * children) bounds. Returns an order faster than `incumbent` in
    /// `seq` when it finds one.
    ///
    /// A depth runs in four passes. (1) Each parent's children, with their memo keys and times
    /// (`state`); a parent's heads, which `branching_rank` reads, are those its own bound left.
    /// (2) A child that another child of the depth dominates (the same actions scheduled, every
    /// time no later) is dropped unbounded: its completions are no better. That is about 30 % of
    /// the children on the small problems, and it frees their places in the beam for other
    /// states: on the 720 beams of widths 16 and 64 of the auto-scheduler's small problems
    /// (tests/support/tune_suite.hpp, p = 2 and 4, m = p and 2p) it found 38 better orders and 7
    /// worse than dropping only children dominated by a kept one. (3) The others are bounded.
    /// (4) The kept ones become the next depth's partial orders, and each one's children are
    /// made right after it (the next depth's pass 1, but at the root), while it is in cache.
    ///
    /// With `threads` > 1, passes (1), (3) and (4) of a depth with enough parents run on up
    /// to that many threads (one per 32 parents up to 192 compute actions, fewer on larger
    /// orders: 4 at 1536; `thread_team`), each with its own copy of the
    /// search state; their results are joined in parent order, so the beam and its answer are
    /// the same for any number of threads (only `limits.max_nodes` is checked per piece of work,
    /// so a cut may come a few nodes later). An exception on a thread is thrown again here.
    [[nodiscard]] exact_outcome beam(double incumbent, std::size_t width,
                                     const exact_limits& limits, std::size_t threads = 1) {
        limits_ = limits;
        out_ = exact_outcome{};
        reset();
        reused_ = 0;
        target_ = incumbent * (1 - 1e-12);
        // Each partial order's actions as a trail: (the trail entry before it, rank, node),
        // walked back at the end, so that a child does not copy its parent's sequences.
        struct step {
            std::size_t before;
            int rank, node;
        };
        constexpr std::size_t no_step = std::numeric_limits<std::size_t>::max();
        std::vector<step> trail;
        std::vector<partial> beam(1), next;
        beam[0] = {cnt_, end_, free_, held_, no_step, {}, {}};
        // A thread pays for itself only with enough parents to expand (`per_thread`): 32 up
        // to n = 192 compute actions, fewer on larger orders, where a parent costs about n
        // (its children's bounds): 4 at 1536, 1 from 6144 on. Per thread: its search state
        // (this object for the first) and heads. Per piece of work: what it made, and how many
        // nodes that cost. (A depth has at most `width` parents, so never more than
        // width / per_thread threads.)
        const std::size_t per_thread =
            std::clamp<std::size_t>(6144 / std::max<std::size_t>(n_, 1), 1, 32);
        threads = std::clamp<std::size_t>(threads, 1, std::max<std::size_t>(1, width / per_thread));
        std::vector<std::unique_ptr<exact_search>> helpers;
        std::optional<thread_team> team; // started at the first depth that can use it
        std::vector<std::vector<double>> est(threads, std::vector<double>(queues_));
        std::vector<made> pieces_made; // pass 3's, per piece
        std::vector<made> kids_made;   // pass 1's, per piece (made in pass 4 of the depth before)
        made all;                      // the depth's children, in parent order
        std::vector<char> alive;       // per child: not dominated by another (pass 2)
        std::vector<bounded> ranking, chosen; // the depth's bounded children, the kept ones
        std::unordered_map<std::string_view, std::vector<std::size_t>> groups;
        std::unordered_map<std::string, std::vector<double>> seen;
        std::string key;
        std::vector<double> times;
        std::atomic<bool> stop{false};
        const std::size_t key_size = 2 * queues_; // `state`'s key
        auto key_of = [&](std::size_t i) {
            return std::string_view(all.keys).substr(i * key_size, key_size);
        };
        auto times_of = [&](std::size_t i) { return all.times.data() + all.kids[i].times_at; };
        for (std::size_t depth = 0; depth < n_ && !beam.empty(); ++depth) {
            const bool last = depth + 1 == n_;
            // The work is cut into 8 pieces per thread, taken in turn by whichever thread is
            // free: their costs vary, and small pieces keep the threads equally busy.
            const std::size_t runs = std::clamp<std::size_t>(beam.size() / per_thread, 1, threads);
            const std::size_t pieces = runs == 1 ? 1 : 8 * runs;
            while (helpers.size() + 1 < runs) helpers.push_back(std::make_unique<exact_search>(m_));
            for (auto& h : helpers) {
                h->target_ = target_;
                h->reuse_ = reuse_;
            }
            pieces_made.resize(pieces);
            // Runs `work(s, t, piece, lo, hi)` on every piece of [0, count), on `runs` threads.
            auto in_pieces = [&](std::size_t count, const auto& work) {
                std::atomic<std::size_t> next_piece{0};
                const std::function<void(std::size_t)> run = [&](std::size_t t) {
                    exact_search& s = t == 0 ? *this : *helpers[t - 1];
                    for (std::size_t i = next_piece++; i < pieces; i = next_piece++)
                        work(s, t, i, count * i / pieces, count * (i + 1) / pieces);
                };
                if (runs == 1) {
                    run(0);
                } else {
                    if (!team) team.emplace(threads - 1);
                    out_.threads = std::max(out_.threads, team->run(runs, stop, run));
                }
            };
            // Checked before each parent, and before each child to bound: a bound costs far
            // more than the clock. The node limit counts the nodes of the piece (`nodes`).
            auto spent = [&](std::uint64_t nodes) {
                if ((limits_.max_nodes != 0 && out_.nodes + nodes >= limits_.max_nodes) ||
                    std::chrono::steady_clock::now() >= limits_.deadline ||
                    (limits_.cancel != nullptr && limits_.cancel->load(std::memory_order_relaxed)))
                    stop = true;
                return stop.load(std::memory_order_relaxed);
            };
            // The children of partial orders [lo, hi) of `from`, into piece i of `kids_made`
            // (sized to the pieces before the pass that fills it).
            auto make_children = [&](exact_search& s, std::size_t t, std::size_t i,
                                     const std::vector<partial>& from, std::size_t lo,
                                     std::size_t hi) {
                made& to = kids_made[i];
                to.clear();
                to.nodes = 0;
                for (std::size_t b = lo; b < hi && !spent(to.nodes); ++b)
                    s.children_of(from[b], b, est[t], to);
            };
            auto count_children = [&] {
                for (const made& p : kids_made) out_.nodes += p.nodes;
            };
            // Pass 1: the children (at the root; then pass 4 of the depth before made them).
            if (depth == 0) {
                kids_made.resize(pieces);
                in_pieces(beam.size(),
                          [&](exact_search& s, std::size_t t, std::size_t i, std::size_t lo,
                              std::size_t hi) { make_children(s, t, i, beam, lo, hi); });
                count_children();
            }
            if (stop) break;
            all.clear();
            for (const made& p : kids_made) all.append(p);
            // Pass 2: drop the children another one dominates. Quadratic in the children of
            // one key (3-9 % of a beam's time on the small problems, up to p = 8 x m = 32).
            alive.assign(all.kids.size(), 1);
            if (drop_first_) {
                groups.clear();
                for (std::size_t i = 0; i < all.kids.size(); ++i) groups[key_of(i)].push_back(i);
                for (const auto& [k, group] : groups)
                    for (const std::size_t i : group)
                        for (const std::size_t j : group)
                            if (j != i &&
                                dominates(times_of(j), j, times_of(i), i, all.kids[i].times_size)) {
                                alive[i] = 0;
                                ++out_.dominated;
                                break;
                            }
            }
            // Pass 3: bound the others.
            in_pieces(all.kids.size(), [&](exact_search& s, std::size_t, std::size_t i,
                                           std::size_t lo, std::size_t hi) {
                made& to = pieces_made[i];
                to.clear();
                s.loaded_ = nullptr; // the state is another parent's (or the beam has moved)
                for (std::size_t c = lo; c < hi; ++c)
                    if (alive[c]) {
                        if (spent(0)) break;
                        s.bound_child(beam, all.kids[c], c, i, last, to);
                    }
            });
            if (stop) break;
            ranking.clear();
            for (const made& p : pieces_made)
                ranking.insert(ranking.end(), p.ranked.begin(), p.ranked.end());
            std::sort(ranking.begin(), ranking.end(), [&](const bounded& a, const bounded& b) {
                if (a.bound != b.bound) return a.bound < b.bound;
                const double sa = all.kids[a.kid].spread, sb = all.kids[b.kid].spread;
                return sa != sb ? sa < sb : a.kid < b.kid;
            });
            // Pass 4: the kept children, the first `width` that no kept one dominates (after
            // pass 2, none is).
            chosen.clear();
            seen.clear();
            for (const bounded& b : ranking) {
                if (chosen.size() >= width) break;
                if (!drop_first_) { // (after pass 2 no child dominates another)
                    key.assign(key_of(b.kid));
                    times.assign(times_of(b.kid), times_of(b.kid) + all.kids[b.kid].times_size);
                    if (dominated_in(seen, key, times)) {
                        ++out_.dominated_late;
                        continue;
                    }
                    seen[key].insert(seen[key].end(), times.begin(), times.end());
                }
                chosen.push_back(b);
            }
            // Their partial orders (`next`, whose vectors keep their storage), each from its
            // parent and its action, and (but at the last depth) their children, on the thread
            // that made them, while they are in its cache (pass 1 of the next depth).
            const std::size_t first_step = trail.size();
            for (const bounded& b : chosen) {
                const generated& c = all.kids[b.kid];
                const partial& parent = beam[c.parent];
                trail.push_back(
                    {parent.last, rank_[c.q],
                     m_.node(stage_[c.q], static_cast<int>(parent.cnt[c.q]), kind_[c.q])});
            }
            if (next.size() < chosen.size()) next.resize(chosen.size());
            if (!last) kids_made.resize(pieces);
            in_pieces(chosen.size(), [&](exact_search& s, std::size_t t, std::size_t i,
                                         std::size_t lo, std::size_t hi) {
                for (std::size_t k = lo; k < hi; ++k) {
                    const bounded& b = chosen[k];
                    s.make_partial(beam[all.kids[b.kid].parent], all.kids[b.kid].q,
                                   last ? nullptr : &pieces_made[b.piece], b.stored, first_step + k,
                                   next[k]);
                }
                if (!last) make_children(s, t, i, next, lo, hi);
            });
            if (!last) count_children();
            next.resize(chosen.size());
            beam.swap(next);
            if (limits_.tick) limits_.tick();
        }
        for (auto& h : helpers) out_.reused += h->reused_;
        out_.reused += reused_;
        parent_head_ = nullptr; // they pointed into this beam
        loaded_ = nullptr;
        if (stop) {
            stopped_ = true;
            return out_;
        }
        for (const partial& s : beam) {
            const double makespan = *std::max_element(s.free.begin(), s.free.end());
            if (makespan < target_) {
                out_.improved = true;
                out_.best = makespan;
                out_.seq.assign(ranks_, {});
                for (std::size_t at = s.last; at != no_step; at = trail[at].before)
                    out_.seq[static_cast<std::size_t>(trail[at].rank)].push_back(trail[at].node);
                for (auto& row : out_.seq) std::reverse(row.begin(), row.end());
                out_.found_at = std::chrono::steady_clock::now();
                target_ = makespan * (1 - 1e-12);
            }
        }
        return out_;
    }

  private:
    /// A partial order of a beam: the state `append` changes, where its last action is in the
    /// beam's trail, and what its bound found (empty at the root and the last depth).
    struct partial {
        std::vector<std::size_t> cnt;
        std::vector<double> end, free, held;
        std::size_t last;
        std::vector<double> ranks_bound; // per rank: Jackson, memory x time, ramp (`bound`)
        std::vector<double> head; // per action: its head (`heads_bound`) if unscheduled, else
                                  // whatever the bounding thread held there (never read)
    };
    /// A child of a beam's partial order, as made: its parent, the queue whose next action it
    /// appends, its ranks' total free time, and where its memo times start (`made::times`)
    /// and how many there are (its key is the `made::keys` entry of its place).
    struct generated {
        std::size_t parent, q;
        double spread;
        std::size_t times_at, times_size;
    };
    /// A child whose bound is below the target: the bound, its place among the depth's
    /// children, and the piece that bounded it and its place there (its per-rank bounds and
    /// heads).
    struct bounded {
        double bound;
        std::size_t kid, piece, stored;
    };
    /// What a piece of a beam's depth made: children (pass 1) or bounds (pass 3). Aligned to
    /// a cache line: pieces next to each other are filled by different threads at once.
    struct alignas(64) made {
        std::uint64_t nodes = 0; // children made (pass 1)
        std::vector<generated> kids;
        std::string keys; // `state`'s keys, 2 * queues bytes each
        std::vector<double> times;
        std::vector<bounded> ranked;
        std::vector<double> parts, heads; // per bounded child: 3 per rank; one per action
        void clear() {
            kids.clear();
            keys.clear();
            times.clear();
            ranked.clear();
            parts.clear();
            heads.clear();
        }
        /// Appends another piece's children (pass 1) to these.
        void append(const made& o) {
            const std::size_t shift = times.size();
            for (generated g : o.kids) {
                g.times_at += shift;
                kids.push_back(g);
            }
            keys += o.keys;
            times.insert(times.end(), o.times.begin(), o.times.end());
        }
    };

    /// `to`: the partial order `parent` with queue q's next action appended at its earliest
    /// start, at `step` of the beam's trail, with the per-rank bounds and heads its bound left
    /// in `from` at place `stored` (none: `from` null, at the last depth).
    void make_partial(const partial& parent, std::size_t q, const made* from, std::size_t stored,
                      std::size_t step, partial& to) {
        to.cnt = parent.cnt; // assignments: the vectors keep their storage
        to.end = parent.end;
        to.free = parent.free;
        to.held = parent.held;
        // `append` on `to`'s vectors, swapped in and out again.
        auto swap_state = [&] {
            cnt_.swap(to.cnt);
            end_.swap(to.end);
            free_.swap(to.free);
            held_.swap(to.held);
        };
        swap_state();
        (void)append(q, earliest(q));
        swap_state();
        to.last = step;
        if (from == nullptr) {
            to.ranks_bound.clear();
            to.head.clear();
            return;
        }
        auto at = [](const std::vector<double>& v, std::size_t i) {
            return v.begin() + static_cast<std::ptrdiff_t>(i);
        };
        to.ranks_bound.assign(at(from->parts, 3 * ranks_ * stored),
                              at(from->parts, 3 * ranks_ * (stored + 1)));
        to.head.assign(at(from->heads, n_ * stored), at(from->heads, n_ * (stored + 1)));
    }

    /// Whether times `a` (child number ia) dominate times `b` (child ib) of the same key: none
    /// later, and at equal times the first child wins.
    [[nodiscard]] static bool dominates(const double* a, std::size_t ia, const double* b,
                                        std::size_t ib, std::size_t size) {
        bool equal = true;
        for (std::size_t i = 0; i < size; ++i) {
            if (a[i] > b[i]) return false;
            equal = equal && a[i] == b[i];
        }
        return !equal || ia < ib;
    }

    void load(const partial& s) {
        cnt_ = s.cnt;
        end_ = s.end;
        free_ = s.free;
        held_ = s.held;
    }

    /// Pass 1 of a beam's depth: the children of partial order `parent` (number `b`), with
    /// their keys and times, appended to `to` (`to.nodes` counts them).
    void children_of(const partial& parent, std::size_t b, std::vector<double>& est, made& to) {
        load(parent);
        // The parent's heads for `branching_rank`: those its bound found (it was below the
        // target when it joined the beam, and the target has not moved since), at the root
        // worked out here.
        const bool root = parent.head.empty();
        if (root) (void)heads_bound();
        heads(est);
        const std::size_t only = branching_rank(est, root ? head_ : parent.head);
        for (std::size_t q = 0; q < queues_; ++q) {
            if (!on_rank(q, only) || !may_append(q, est)) continue;
            const saved undo = append(q, est[q]);
            ++to.nodes;
            double spread = 0;
            for (double f : free_) spread += f;
            state(key_, times_);
            to.kids.push_back({b, q, spread, to.times.size(), times_.size()});
            to.keys += key_;
            to.times.insert(to.times.end(), times_.begin(), times_.end());
            retract(q, undo);
        }
    }

    /// Pass 3 of a beam's depth: the bound of child `c` (number `kid`) of `beam`, in piece
    /// `piece`; where it is below the target, the child goes to `to.ranked`, and (but at the last
    /// depth) its per-rank bounds and heads to `to.parts` and `to.heads`.
    void bound_child(const std::vector<partial>& beam, const generated& c, std::size_t kid,
                     std::size_t piece, bool last, made& to) {
        const partial& parent = beam[c.parent];
        if (loaded_ != &parent) {
            load(parent);
            loaded_ = &parent;
        }
        parent_head_ = parent.head.empty() ? nullptr : &parent.head;
        const saved undo = append(c.q, earliest(c.q));
        const double lb = last ? *std::max_element(free_.begin(), free_.end())
                               : bound(parent.ranks_bound, static_cast<std::size_t>(rank_[c.q]));
        if (lb < target_) {
            to.ranked.push_back({lb, kid, piece, to.parts.size() / (3 * ranks_)});
            if (!last) {
                to.parts.insert(to.parts.end(), rank_parts_.begin(), rank_parts_.end());
                to.heads.insert(to.heads.end(), head_.begin(), head_.end());
            }
        }
        retract(c.q, undo);
    }

    /// Whether rank r's unscheduled actions have the heads of `parent_head_`.
    [[nodiscard]] bool heads_kept(std::size_t r) const {
        for (int s : m_.rank_stages[r])
            for (int k = 0; k < m_.kinds(); ++k) {
                const std::size_t q = queue(k, s);
                for (std::size_t id = q * mb_ + cnt_[q]; id < (q + 1) * mb_; ++id)
                    if (head_[id] != (*parent_head_)[id]) return false;
            }
        return true;
    }

    struct dep {
        std::size_t queue;
        double delay;
    };

    const model& m_;
    std::size_t mb_ = 0, queues_ = 0, n_ = 0, ranks_ = 0;
    // Per queue (kind * stages + stage).
    std::vector<int> kind_, stage_, rank_;
    std::vector<double> dur_, mem_; // duration; memory change (+ forward, - frees)
    std::vector<std::vector<dep>> deps_;
    std::vector<std::vector<std::size_t>> succ_;
    std::vector<std::size_t> topo_;    // queues in dependency order
    std::vector<double> hold_;         // per forward queue: least time its activation is held
    std::vector<double> tail_;         // per action (queue * mb + j)
    bool limited_ = false;             // some rank has a memory limit
    std::vector<jackson_run> jackson_; // one_machine's scratch
    // `bound`'s scratch: the parent's heads, the ranks whose parts it reuses, the parts.
    const std::vector<double>* parent_head_ = nullptr;
    std::vector<double> rank_parts_;
    std::vector<char> same_;
    bool reuse_ = true, drop_first_ = true;
    const void* loaded_ = nullptr; // the beam partial whose state is loaded (`bound_child`)
    std::string key_;              // `children_of`'s scratch
    std::vector<double> times_;
    std::uint64_t reused_ = 0; // ranks whose parts `bound` reused
    static constexpr std::size_t npos_ = std::numeric_limits<std::size_t>::max();
    std::vector<ramp_job> ramp_; // memory_ramp's scratch
    ramp_scratch ramp_scratch_;
    std::vector<double> late_work_; // per rank: most work left when its last forward starts
    // State.
    std::vector<std::size_t> cnt_;
    std::vector<double> end_, free_, held_, head_;
    std::vector<std::vector<int>> seq_;
    std::vector<std::vector<std::pair<double, double>>> frees_;
    std::unordered_map<std::string, std::vector<double>> memo_;
    // Per depth, reused: the node's memo key and times, queue heads' starts, children.
    struct frame {
        std::string key;
        std::vector<double> times, est;
        std::vector<std::pair<double, std::size_t>> children;
    };
    std::deque<frame> frames_; // a deque: growing keeps references to frames valid
    std::size_t memo_used_ = 0;
    exact_limits limits_;
    exact_outcome out_;
    std::uint64_t round_ = 0, round_limit_ = 0, noise_ = 0;
    bool round_cut_ = false;
    double target_ = 0;
    bool stopped_ = false;

    [[nodiscard]] std::size_t queue(int kind, int s) const {
        return static_cast<std::size_t>(kind) * static_cast<std::size_t>(m_.stages) +
               static_cast<std::size_t>(s);
    }
    [[nodiscard]] const stage_info& info(int s) const {
        return m_.stage[static_cast<std::size_t>(s)];
    }

    /// One search for an order faster than `target`, with at most `max_nodes` more nodes (and
    /// the overall limits). True when it finished: no order (other than the one it found) is
    /// faster than its final target.
    bool probe(double target, std::uint64_t max_nodes) {
        target_ = target * (1 - 1e-12);
        reset();
        const std::uint64_t stop_at =
            out_.nodes + max_nodes < out_.nodes ? ~std::uint64_t{0} : out_.nodes + max_nodes;
        // Restarts: depth-first search is heavy-tailed, so short rounds with the children's
        // order shuffled a little find faster orders sooner; every node a round explored to
        // the end stays in the memo (its verdict holds for any lower target), and the last
        // round runs to the budget, so the search stays complete.
        std::uint64_t round_nodes = 1000;
        bool cut = false;
        for (round_ = 0; !stopped_; ++round_) {
            round_limit_ = round_ >= 12 ? stop_at : std::min(stop_at, out_.nodes + round_nodes);
            round_cut_ = false;
            noise_ = round_ * 0x9E3779B97F4A7C15ULL + 1;
            search(n_);
            if (!round_cut_) break; // finished (unless the overall limits stopped it)
            if (out_.nodes >= stop_at) {
                cut = true;
                break;
            }
            round_nodes *= 2;
        }
        return !stopped_ && !cut;
    }

    void build() {
        mb_ = static_cast<std::size_t>(m_.microbatches);
        ranks_ = static_cast<std::size_t>(m_.ranks);
        queues_ = static_cast<std::size_t>(m_.kinds()) * static_cast<std::size_t>(m_.stages);
        n_ = queues_ * mb_;
        const double phi = m_.frees_by_i;
        for (int k = 0; k < m_.kinds(); ++k)
            for (int s = 0; s < m_.stages; ++s) {
                const stage_info& st = info(s);
                kind_.push_back(k);
                stage_.push_back(s);
                rank_.push_back(st.rank);
                dur_.push_back(st.dur[k]);
                const double a = st.activation;
                mem_.push_back(k == kind_forward    ? a
                               : k == kind_backward ? -(m_.split ? a * phi : a)
                                                    : -(a * (1 - phi)));
            }
        deps_.assign(queues_, {});
        succ_.assign(queues_, {});
        for (std::size_t q = 0; q < queues_; ++q) {
            const stage_info& st = info(stage_[q]);
            if (kind_[q] == kind_forward && st.prev >= 0)
                deps_[q].push_back({queue(kind_forward, st.prev), st.msg_from_prev});
            if (kind_[q] == kind_backward) {
                deps_[q].push_back({queue(kind_forward, stage_[q]), 0.0});
                if (st.next >= 0)
                    deps_[q].push_back({queue(kind_backward, st.next), st.msg_from_next});
            }
            if (kind_[q] == kind_weight) deps_[q].push_back({queue(kind_backward, stage_[q]), 0.0});
            for (const dep& d : deps_[q]) succ_[d.queue].push_back(q);
        }
        // Stages in path order are 0..S-1 (config.hpp): forwards up, backwards down, then Ws.
        for (int s = 0; s < m_.stages; ++s) topo_.push_back(queue(kind_forward, s));
        for (int s = m_.stages - 1; s >= 0; --s) topo_.push_back(queue(kind_backward, s));
        if (m_.split)
            for (int s = 0; s < m_.stages; ++s) topo_.push_back(queue(kind_weight, s));
        // Tails: the longest path after an action ends, through dependents and queue order.
        tail_.assign(n_, 0.0);
        for (std::size_t j = mb_; j-- > 0;)
            for (std::size_t t = queues_; t-- > 0;) {
                const std::size_t q = topo_[t], id = q * mb_ + j;
                double v = 0;
                for (std::size_t z : succ_[q])
                    for (const dep& d : deps_[z])
                        if (d.queue == q) v = std::max(v, d.delay + dur_[z] + tail_[z * mb_ + j]);
                if (j + 1 < mb_) v = std::max(v, dur_[q] + tail_[id + 1]);
                tail_[id] = v;
            }
        // The least time an activation is held: its forward, the path to the last stage and
        // back (every later stage's forward and backward, and the messages), its backward
        // and, split, its W.
        hold_.assign(queues_, 0.0);
        for (int s = 0; s < m_.stages; ++s) {
            double t = info(s).dur[kind_forward];
            for (int u = s + 1; u < m_.stages; ++u)
                t += info(u).msg_from_prev + info(u).dur[kind_forward];
            for (int u = m_.stages - 1; u > s; --u)
                t += info(u).dur[kind_backward] + info(u - 1).msg_from_next;
            t += info(s).dur[kind_backward];
            if (m_.split) t += info(s).dur[kind_weight];
            hold_[queue(kind_forward, s)] = t;
        }
        limited_ =
            std::any_of(m_.limit.begin(), m_.limit.end(), [](double l) { return l < 1e300; });
        late_work_.assign(ranks_, std::numeric_limits<double>::infinity());
        for (std::size_t r = 0; r < ranks_; ++r)
            if (m_.limit[r] < 1e300)
                late_work_[r] = last_forward_late_work(m_, static_cast<int>(r), room(r));
        cnt_.assign(queues_, 0);
        end_.assign(n_, 0.0);
        head_.assign(n_, 0.0);
        free_.assign(ranks_, 0.0);
        held_.assign(ranks_, 0.0);
        seq_.assign(ranks_, {});
        frees_.assign(ranks_, {});
    }

    void reset() {
        std::fill(cnt_.begin(), cnt_.end(), 0);
        std::fill(free_.begin(), free_.end(), 0.0);
        std::fill(held_.begin(), held_.end(), 0.0);
        for (auto& row : seq_) row.clear();
        memo_.clear();
        memo_used_ = 0;
        stopped_ = false;
    }

    [[nodiscard]] bool scheduled(std::size_t q, std::size_t j) const { return cnt_[q] > j; }
    [[nodiscard]] double room(std::size_t r) const { return m_.fit_limit[r] - m_.parameters[r]; }

    /// A lower bound on the makespan of every completion of the current node.
    [[nodiscard]] double bound() { return bound({}, npos_); }

    /// `bound()`: the heads (`heads_bound`), then Jackson's bound of each rank and, with a
    /// memory limit, memory x time and the memory ramp, O(n log n), each part only while the
    /// bound is below the target. In a beam, a child that appended to rank `appended` passes
    /// its parent's per-rank parts (`parent`; empty otherwise): a rank other than `appended`
    /// whose unscheduled actions kept their heads has the same counts, free time and memory, so
    /// the same parts, which it takes instead of computing them. The node's parts are left in
    /// `rank_parts_` (complete wherever the bound is below the target).
    [[nodiscard]] double bound(const std::vector<double>& parent, std::size_t appended) {
        double lb = heads_bound();
        if (lb >= target_) return lb;
        const bool memory = limited_;
        same_.assign(ranks_, 0);
        if (reuse_ && !parent.empty() && parent_head_ != nullptr)
            for (std::size_t r = 0; r < ranks_; ++r)
                if (r != appended && heads_kept(r)) {
                    same_[r] = 1;
                    ++reused_;
                }
        rank_parts_.assign(3 * ranks_, 0.0);
        auto part = [&](std::size_t r, std::size_t k, auto&& compute) {
            const double v = same_[r] ? parent[3 * r + k] : compute();
            rank_parts_[3 * r + k] = v;
            return v;
        };
        for (std::size_t r = 0; r < ranks_; ++r)
            lb = std::max(lb, part(r, 0, [&] { return one_machine(r); }));
        if (memory && lb < target_)
            for (std::size_t r = 0; r < ranks_; ++r)
                lb = std::max(lb, part(r, 1, [&] { return memory_time(r); }));
        if (memory && lb < target_)
            for (std::size_t r = 0; r < ranks_ && lb < target_; ++r)
                lb = std::max(lb, part(r, 2, [&] { return memory_ramp(r); }));
        return lb;
    }

    /// The first part of `bound()`, O(n): every unscheduled action's head (its earliest start
    /// by its inputs, its rank and memory), and the longest head + duration + tail. At most
    /// `bound()`; it fills `head_`, which `branching_rank` and the rest of the bound read.
    [[nodiscard]] double heads_bound() {
        double lb = 0;
        for (double f : free_) lb = std::max(lb, f);
        const bool memory = limited_;
        for (auto& f : frees_) f.clear();
        // Heads, microbatch by microbatch (a dependency is of the same microbatch, queue
        // order of the previous one).
        for (std::size_t j = 0; j < mb_; ++j) {
            for (std::size_t q : topo_) {
                if (scheduled(q, j)) continue;
                const std::size_t id = q * mb_ + j, r = static_cast<std::size_t>(rank_[q]);
                double h = free_[r];
                for (const dep& d : deps_[q]) {
                    const std::size_t did = d.queue * mb_ + j;
                    h = std::max(h, scheduled(d.queue, j) ? end_[did] + d.delay
                                                          : head_[did] + dur_[d.queue] + d.delay);
                }
                if (j > 0 && !scheduled(q, j - 1)) h = std::max(h, head_[id - 1] + dur_[q]);
                if (memory && kind_[q] == kind_forward) h = std::max(h, memory_head(q, j, r));
                head_[id] = h;
                lb = std::max(lb, h + dur_[q] + tail_[id]);
            }
            if (!memory || lb >= target_) continue;
            for (std::size_t q : topo_) {
                if (scheduled(q, j) || mem_[q] >= 0) continue;
                auto& f = frees_[static_cast<std::size_t>(rank_[q])];
                const std::pair<double, double> x{head_[q * mb_ + j] + dur_[q], -mem_[q]};
                f.insert(std::upper_bound(f.begin(), f.end(), x), x);
            }
        }
        return lb;
    }

    /// The memory ramp (tune/lower_bound.hpp) of rank r from the node: its unscheduled
    /// actions at their heads, its room less what it holds, and its last forward (if still to
    /// run) at its head. The ramp up only while the rank's forwards still to run do not all
    /// fit, and at its first 4 candidate times: O(n log n).
    [[nodiscard]] double memory_ramp(std::size_t r) {
        if (!(m_.limit[r] < 1e300)) return 0;
        ramp_.clear();
        double least_tail = std::numeric_limits<double>::infinity(), taking = 0;
        for (int s : m_.rank_stages[r])
            for (int k = 0; k < m_.kinds(); ++k) {
                const std::size_t q = queue(k, s);
                for (std::size_t j = cnt_[q]; j < mb_; ++j) {
                    ramp_.push_back({head_[q * mb_ + j], dur_[q], std::max(0.0, mem_[q]),
                                     std::max(0.0, -mem_[q])});
                    least_tail = std::min(least_tail, tail_[q * mb_ + j]);
                    taking += std::max(0.0, mem_[q]);
                }
            }
        if (ramp_.empty()) return 0;
        const std::size_t times = taking > room(r) - held_[r] ? 4 : 0;
        ramp_end end; // no last forward left: no ramp down
        const std::size_t last = queue(kind_forward, m_.rank_stages[r].back());
        if (cnt_[last] < mb_) {
            const std::size_t id = last * mb_ + mb_ - 1;
            end.late_work = late_work_[r];
            end.reach = dur_[last] + tail_[id];
            end.earliest = head_[id];
        }
        return memory_ramp_bound(ramp_, ramp_scratch_, room(r) - held_[r], least_tail, end,
                                 free_[r], times);
    }

    /// The earliest an F of queue q, microbatch j can start for memory: the forwards that must
    /// precede it (its queue's earlier microbatches and the rank's earlier stages up to j) and
    /// what the rank holds must fit, and only earlier microbatches' frees can come first (a
    /// later one's backward needs this stage's forward of it, which comes after this F).
    [[nodiscard]] double memory_head(std::size_t q, std::size_t j, std::size_t r) const {
        double need = held_[r] - room(r);
        for (int st : m_.rank_stages[r]) {
            if (st > stage_[q]) break;
            const std::size_t done = cnt_[queue(kind_forward, st)];
            if (j + 1 > done) need += info(st).activation * static_cast<double>(j + 1 - done);
        }
        if (need <= 1e-12 * (1 + room(r))) return 0;
        double got = 0;
        for (const auto& [t, amount] : frees_[r]) {
            got += amount;
            if (got >= need * (1 - 1e-12)) return t;
        }
        return std::numeric_limits<double>::infinity(); // it can never fit
    }

    /// Jackson's preemptive schedule of rank r's unscheduled actions (heads, durations,
    /// tails): the optimum of that one-machine relaxation. Within a queue, heads never fall and
    /// tails never rise with the microbatch (`heads_bound`, `build`), so the released and
    /// unfinished actions of a queue are a run whose first has the largest tail: the schedule
    /// merges the rank's K queues (`jackson_over_queues`). O(n K), K the rank's queues (at
    /// most 3 per stage).
    [[nodiscard]] double one_machine(std::size_t r) {
        auto& qs = jackson_;
        qs.clear();
        for (int s : m_.rank_stages[r])
            for (int k = 0; k < m_.kinds(); ++k) {
                const std::size_t q = queue(k, s);
                if (cnt_[q] < mb_) qs.push_back({q, cnt_[q], cnt_[q], mb_, dur_[q], dur_[q]});
            }
        return jackson_over_queues(
            qs, [&](std::size_t q, std::size_t j) { return head_[q * mb_ + j]; },
            [&](std::size_t q, std::size_t j) { return tail_[q * mb_ + j]; });
    }

    /// Memory x time: from its free time on, rank r holds each taken activation until the
    /// action freeing it ends and each future one at least its least holding time, never more
    /// than its room at once.
    [[nodiscard]] double memory_time(std::size_t r) const {
        if (!(room(r) > 0)) return 0;
        double area = 0;
        const double now = free_[r];
        for (int s : m_.rank_stages[r]) {
            const double a = info(s).activation;
            if (a <= 0) continue;
            const std::size_t qf = queue(kind_forward, s);
            for (int part = 0; part < (m_.split ? 2 : 1); ++part) {
                const std::size_t qx = queue(part == 0 ? kind_backward : kind_weight, s);
                const double share = !m_.split   ? 1.0
                                     : part == 0 ? m_.frees_by_i
                                                 : 1 - m_.frees_by_i;
                if (share <= 0) continue;
                for (std::size_t j = cnt_[qx]; j < cnt_[qf]; ++j)
                    area += share * a * std::max(0.0, head_[qx * mb_ + j] + dur_[qx] - now);
                double hold = hold_[qf];
                if (m_.split && part == 0) hold -= info(s).dur[kind_weight];
                area += share * a * static_cast<double>(mb_ - cnt_[qf]) * hold;
            }
        }
        return now + area / room(r);
    }

    /// The memo's key (queue counters) and the times every completion depends on: each rank's
    /// free time and the end of each scheduled action a later one still waits for.
    void state(std::string& key, std::vector<double>& times) const {
        key.clear();
        for (std::size_t c : cnt_) key.push_back(static_cast<char>(c & 0xff));
        for (std::size_t c : cnt_) key.push_back(static_cast<char>((c >> 8) & 0xff));
        times.assign(free_.begin(), free_.end());
        for (std::size_t q = 0; q < queues_; ++q) {
            std::size_t lo = cnt_[q];
            for (std::size_t z : succ_[q]) lo = std::min(lo, cnt_[z]);
            for (std::size_t j = lo; j < cnt_[q]; ++j) times.push_back(end_[q * mb_ + j]);
        }
    }

    [[nodiscard]] bool dominated(const std::string& key, const std::vector<double>& times) const {
        return dominated_in(memo_, key, times);
    }

    [[nodiscard]] static bool
    dominated_in(const std::unordered_map<std::string, std::vector<double>>& memo,
                 const std::string& key, const std::vector<double>& times) {
        const auto it = memo.find(key);
        if (it == memo.end()) return false;
        const std::size_t n = times.size();
        for (std::size_t at = 0; at + n <= it->second.size(); at += n) {
            bool le = true;
            for (std::size_t i = 0; i < n && le; ++i) le = it->second[at + i] <= times[i];
            if (le) return true;
        }
        return false;
    }

    void remember(const std::string& key, const std::vector<double>& times) {
        // A new key costs its bytes and a hash node (about 96 bytes); times 8 bytes each.
        const std::size_t cost = times.size() * sizeof(double) + key.size() + 96;
        if (memo_used_ + cost > limits_.memo_bytes) return;
        auto& v = memo_[key];
        v.insert(v.end(), times.begin(), times.end());
        memo_used_ += cost;
    }

    [[nodiscard]] bool out_of_budget() {
        if (stopped_ || round_cut_) return true;
        if (limits_.max_nodes != 0 && out_.nodes >= limits_.max_nodes) stopped_ = true;
        if ((out_.nodes & 255) == 0) {
            if (std::chrono::steady_clock::now() >= limits_.deadline) stopped_ = true;
            if (limits_.tick) limits_.tick();
        }
        if (out_.nodes >= round_limit_) round_cut_ = true;
        return stopped_ || round_cut_;
    }

    /// A pseudo-random number in [0, 1) from the round and the node count (splitmix64).
    [[nodiscard]] double jitter(std::uint64_t salt) const {
        std::uint64_t z = noise_ + salt * 0xBF58476D1CE4E5B9ULL + out_.nodes;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        return static_cast<double>(z >> 11) * 0x1.0p-53;
    }

    /// Earliest start of queue q's next action, or -1 while an input is not scheduled.
    [[nodiscard]] double earliest(std::size_t q) const {
        const std::size_t j = cnt_[q];
        double t = free_[static_cast<std::size_t>(rank_[q])];
        for (const dep& d : deps_[q]) {
            if (!scheduled(d.queue, j)) return -1;
            t = std::max(t, end_[d.queue * mb_ + j] + d.delay);
        }
        return t;
    }

    /// Each queue's next action's earliest start, or -1 (queue done, or an input missing).
    void heads(std::vector<double>& est) const {
        est.assign(queues_, -1);
        for (std::size_t q = 0; q < queues_; ++q)
            if (cnt_[q] < mb_) est[q] = earliest(q);
    }

    /// Whether the node's child may append queue q's next action (starts `est`): it is ready,
    /// its forward fits in memory (as the evaluator counts it: the same operations), and the
    /// active rule does not cut it.
    [[nodiscard]] bool may_append(std::size_t q, const std::vector<double>& est) const {
        const double e = est[q];
        if (e < 0) return false;
        const auto r = static_cast<std::size_t>(rank_[q]);
        if (kind_[q] == kind_forward && m_.parameters[r] + (held_[r] + mem_[q]) > m_.fit_limit[r])
            return false;
        for (std::size_t y = 0; y < queues_; ++y)
            if (y != q && rank_[y] == rank_[q] && kind_[y] != kind_forward && est[y] >= 0 &&
                est[y] < e && est[y] + dur_[y] <= e)
                return false;
        return true;
    }

    /// The rank whose next action the node branches on, or `ranks_` for every rank's
    /// (Giffler and Thompson's rule, made safe for memory). Take a rank r and a ready action y
    /// of r that only frees memory (or any ready action while r's memory can no longer bind),
    /// ending at c = est(y) + dur(y). When every other action of r starts at or after c unless
    /// it is ready and fits with est <= c (the heads of `bound()` bound the start of the
    /// others), some optimal completion runs next on r one of those ready actions: were it an
    /// x starting after c, moving y just before x would delay nothing, free memory no later and
    /// start y earlier (so the order with the least sum of starts is never cut, as with the
    /// active rule). Of the ranks where this holds, the one with the fewest such actions. O(n).
    [[nodiscard]] std::size_t branching_rank(const std::vector<double>& est,
                                             const std::vector<double>& head) const {
        std::size_t best = ranks_, fewest = std::numeric_limits<std::size_t>::max();
        for (std::size_t r = 0; r < ranks_; ++r) {
            bool binding = false;
            if (m_.limit[r] < 1e300) {
                double taking = held_[r];
                for (int s : m_.rank_stages[r]) {
                    const std::size_t q = queue(kind_forward, s);
                    taking += mem_[q] * static_cast<double>(mb_ - cnt_[q]);
                }
                binding = !(taking + 1e-9 * (1 + std::abs(room(r))) <= room(r));
            }
            double c = std::numeric_limits<double>::infinity();
            for (int s : m_.rank_stages[r])
                for (int k = 0; k < m_.kinds(); ++k) {
                    const std::size_t q = queue(k, s);
                    if (est[q] >= 0 && dur_[q] > 0 && (!binding || k != kind_forward))
                        c = std::min(c, est[q] + dur_[q]);
                }
            if (!(c < std::numeric_limits<double>::infinity())) continue;
            std::size_t n = 0;
            bool valid = true;
            for (int s : m_.rank_stages[r])
                for (int k = 0; k < m_.kinds() && valid; ++k) {
                    const std::size_t q = queue(k, s);
                    if (cnt_[q] >= mb_) continue;
                    const bool fits = k != kind_forward ||
                                      !(m_.parameters[r] + (held_[r] + mem_[q]) > m_.fit_limit[r]);
                    if (est[q] >= 0 && fits)
                        n += est[q] <= c ? 1U : 0U;
                    else if (head[q * mb_ + cnt_[q]] < c)
                        valid = false;
                }
            if (valid && n < fewest) {
                fewest = n;
                best = r;
            }
        }
        return best;
    }

    /// Whether queue q is on rank `only` (`branching_rank`'s answer; `ranks_`: any rank).
    [[nodiscard]] bool on_rank(std::size_t q, std::size_t only) const {
        return only == ranks_ || static_cast<std::size_t>(rank_[q]) == only;
    }

    /// What `append` changed on the rank, for `retract`.
    struct saved {
        double free, held;
    };

    /// Appends queue q's next action, starting at `start`, to its rank's order.
    saved append(std::size_t q, double start) {
        const auto r = static_cast<std::size_t>(rank_[q]);
        const saved undo{free_[r], held_[r]};
        const std::size_t id = q * mb_ + cnt_[q];
        end_[id] = start + dur_[q];
        free_[r] = end_[id];
        held_[r] += mem_[q];
        ++cnt_[q];
        return undo;
    }

    /// Undoes the `append` of queue q that returned `undo`.
    void retract(std::size_t q, const saved& undo) {
        const auto r = static_cast<std::size_t>(rank_[q]);
        --cnt_[q];
        held_[r] = undo.held;
        free_[r] = undo.free;
    }

    void search(std::size_t left) {
        ++out_.nodes;
        if (out_of_budget()) return;
        if (left == 0) {
            double makespan = 0;
            for (double f : free_) makespan = std::max(makespan, f);
            if (makespan < target_) {
                out_.improved = true;
                out_.best = makespan;
                out_.seq = seq_;
                out_.found_at = std::chrono::steady_clock::now();
                target_ = makespan * (1 - 1e-12);
            }
            return;
        }
        if (bound() >= target_) return;
        const std::size_t depth = n_ - left;
        if (frames_.size() <= depth) frames_.resize(depth + 1);
        frame& f = frames_[depth];
        std::string& key = f.key;
        std::vector<double>& times = f.times;
        state(key, times);
        if (dominated(key, times)) return;
        std::vector<double>& est = f.est;
        heads(est);
        auto& children = f.children;
        children.clear();
        const std::size_t only = branching_rank(est, head_);
        for (std::size_t q = 0; q < queues_; ++q)
            if (on_rank(q, only) && may_append(q, est)) children.push_back({est[q], q});
        // Earliest first; at a tie, backward-side actions before forwards. After the first
        // round, each start is blurred by up to a random share of the action's duration.
        if (round_ > 0)
            for (auto& c : children) c.first += jitter(c.second) * dur_[c.second] * 0.75;
        std::sort(children.begin(), children.end(), [&](const auto& a, const auto& b) {
            if (a.first != b.first) return a.first < b.first;
            const bool fa = kind_[a.second] == kind_forward, fb = kind_[b.second] == kind_forward;
            return fa != fb ? fb : a.second < b.second;
        });
        for (std::size_t i = 0; i < children.size(); ++i) {
            const std::size_t q = children[i].second;
            const auto r = static_cast<std::size_t>(rank_[q]);
            seq_[r].push_back(m_.node(stage_[q], static_cast<int>(cnt_[q]), kind_[q]));
            // The true start is f.est[q] (the sort key may be blurred).
            const saved undo = append(q, f.est[q]);
            search(left - 1);
            retract(q, undo);
            seq_[r].pop_back();
            if (stopped_ || round_cut_) return;
        }
        remember(key, times);
    }
};

} // namespace ppsched::detail::tune
