#pragma once
/// \file tune/detail/evaluator.hpp
/// The search's inner loop: times a candidate order (per-rank sequences of nodes) exactly as
/// `simulate` times the same compute-only order (same operations on the same doubles, so the
/// makespans are identical), checks each rank's memory against its limit, and optionally
/// records why each action started when it did (for the critical path).
/// O(n) per evaluation, no allocation after the first; a local search's move is timed again
/// from where it changes the order (`run_changed`).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ppsched/tune/detail/model.hpp"

namespace ppsched::detail::tune {

/// Per-rank sequences of nodes.
using sequences = std::vector<std::vector<int>>;

/// The outcome of one evaluation.
struct evaluation {
    bool ok = false; ///< every action ran (no deadlock) and every rank fits its memory
    bool memory_ok = true;
    double makespan = 0; ///< when the last action ends
    double sum_end = 0;  ///< the sum of the ranks' ends (breaks ties between equal makespans)
};

/// Lexicographic: the makespan first, then the sum of the ranks' ends.
[[nodiscard]] inline bool better(const evaluation& a, const evaluation& b) noexcept {
    if (!a.ok) return false;
    if (!b.ok) return true;
    if (a.makespan != b.makespan) return a.makespan < b.makespan;
    return a.sum_end < b.sum_end;
}

class evaluator {
  public:
    explicit evaluator(const model& m)
        : m_(m), end_(m.node_count(), -1.0), cause_(m.node_count(), -1),
          start_(m.node_count(), 0.0), pos_(static_cast<std::size_t>(m.ranks)),
          free_(static_cast<std::size_t>(m.ranks)), memory_(static_cast<std::size_t>(m.ranks)),
          peak_(static_cast<std::size_t>(m.ranks)), blocked_(static_cast<std::size_t>(m.ranks), -1),
          memory_after_(m.node_count(), 0.0), peak_after_(m.node_count(), 0.0) {
        work_.reserve(static_cast<std::size_t>(m.ranks));
        dirty_.reserve(m.node_count());
        // A table instead of a division per action (the loop's dearest instruction).
        stage_of_.resize(m.node_count() / 4);
        for (std::size_t sj = 0; sj < stage_of_.size(); ++sj)
            stage_of_[sj] =
                static_cast<std::uint32_t>(sj / static_cast<std::size_t>(m.microbatches));
    }

    /// Times `seq`. With `Record`, `start`, `end` and `cause` describe the timeline afterwards,
    /// and the run becomes the base that `run_changed` starts from.
    template <bool Record = false>
    evaluation run(const sequences& seq) {
        ++count_;
        std::fill(end_.begin(), end_.end(), -1.0);
        const auto ranks = static_cast<std::size_t>(m_.ranks);
        std::size_t remaining = 0;
        work_.clear();
        for (std::size_t r = 0; r < ranks; ++r) {
            pos_[r] = 0;
            free_[r] = 0;
            memory_[r] = 0;
            peak_[r] = 0;
            blocked_[r] = -1;
            remaining += seq[r].size();
            work_.push_back(static_cast<int>(r));
        }
        advance<Record>(seq, remaining);
        if constexpr (Record) {
            // Only a run that timed every action is a base (the others' times are partial).
            base_end_ = end_;
            dirty_.clear();
            has_base_ = remaining == 0;
        }
        synced_ = Record;
        return finish(remaining);
    }

    /// Times `seq`, which differs from the last recorded run's order (the base) only on rank
    /// `rank` from position `first` on, where it holds the same actions in another order (a
    /// move of the local search), with the same result as `run` to the last bit. Each action
    /// that started before the base's action at `first - 1` ended kept its inputs (they all
    /// ended no later than it started, so they are such actions too, and the changed ones
    /// start no earlier than that end): the run starts from those prefixes, restored from the
    /// base, and times only the rest. O(rest + ranks log n).
    evaluation run_changed(const sequences& seq, std::size_t rank, std::size_t first) {
        if (!has_base_ || first == 0) return run(seq);
        ++count_;
        if (!synced_) {
            end_ = base_end_;
            synced_ = true;
        } else {
            for (const int x : dirty_)
                end_[static_cast<std::size_t>(x)] = base_end_[static_cast<std::size_t>(x)];
        }
        dirty_.clear();
        const double cut = base_end_[static_cast<std::size_t>(seq[rank][first - 1])];
        const auto ranks = static_cast<std::size_t>(m_.ranks);
        std::size_t remaining = 0;
        work_.clear();
        for (std::size_t r = 0; r < ranks; ++r) {
            const std::vector<int>& row = seq[r];
            // Starts never fall along a rank; on `rank` the moved actions all start at or
            // after `cut` in the base.
            const auto stop =
                row.begin() + static_cast<std::ptrdiff_t>(r == rank ? first : row.size());
            const auto kept = static_cast<std::size_t>(
                std::partition_point(
                    row.begin(), stop,
                    [&](int x) { return start_[static_cast<std::size_t>(x)] < cut; }) -
                row.begin());
            pos_[r] = kept;
            if (kept > 0) {
                const auto last = static_cast<std::size_t>(row[kept - 1]);
                free_[r] = base_end_[last];
                memory_[r] = memory_after_[last];
                peak_[r] = peak_after_[last];
            } else {
                free_[r] = memory_[r] = peak_[r] = 0;
            }
            blocked_[r] = -1;
            for (std::size_t i = kept; i < row.size(); ++i) {
                end_[static_cast<std::size_t>(row[i])] = -1.0;
                dirty_.push_back(row[i]);
            }
            remaining += row.size() - kept;
            work_.push_back(static_cast<int>(r));
        }
        advance<false>(seq, remaining);
        return finish(remaining);
    }

    /// Each rank's peak memory (parameters + activations) of the last run.
    [[nodiscard]] double peak_memory(int r) const noexcept {
        return m_.parameters[static_cast<std::size_t>(r)] + peak_[static_cast<std::size_t>(r)];
    }
    [[nodiscard]] double start(int node) const noexcept {
        return start_[static_cast<std::size_t>(node)];
    }
    [[nodiscard]] double end(int node) const noexcept {
        return end_[static_cast<std::size_t>(node)];
    }
    /// The action whose end set `node`'s start in the last recorded run: its rank's previous
    /// action, or the input it waited for; -1 when it started at time 0 with nothing before.
    [[nodiscard]] int cause(int node) const noexcept {
        return cause_[static_cast<std::size_t>(node)];
    }
    /// Orders timed so far.
    [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
    /// Sets the count of orders timed (a search that timed some of its orders on other
    /// evaluators counts them here, in its own order).
    void set_count(std::uint64_t count) noexcept { count_ = count; }

    /// Takes `other`'s last recorded run as the base of `run_changed` (another thread's
    /// evaluator of the same model, timing moves from the same order). O(n).
    void rebase(const evaluator& other) {
        base_end_ = other.base_end_;
        start_ = other.start_;
        memory_after_ = other.memory_after_;
        peak_after_ = other.peak_after_;
        has_base_ = other.has_base_;
        synced_ = false;
        dirty_.clear();
    }

  private:
    /// Runs every rank as far as its inputs allow, until none can go on.
    template <bool Record>
    void advance(const sequences& seq, std::size_t& remaining) {
        while (!work_.empty()) {
            const int r = work_.back();
            work_.pop_back();
            const auto ru = static_cast<std::size_t>(r);
            const std::vector<int>& row = seq[ru];
            while (pos_[ru] < row.size()) {
                const int x = row[pos_[ru]];
                const int k = model::kind_of(x);
                const stage_info& st = m_.stage[stage_of_[static_cast<std::size_t>(x >> 2)]];
                double ready = 0;
                int why = -1;
                if (k == kind_forward) {
                    if (st.prev >= 0) {
                        const int d = x - (m_.microbatches << 2); // F of the previous stage
                        const double e = end_[static_cast<std::size_t>(d)];
                        if (e < 0) {
                            blocked_[ru] = d;
                            break;
                        }
                        ready = st.msg_from_prev > 0 ? e + st.msg_from_prev : e;
                        why = d;
                    }
                } else if (k == kind_backward) {
                    const int own = x - kind_backward;
                    const double e = end_[static_cast<std::size_t>(own)];
                    if (e < 0) {
                        blocked_[ru] = own;
                        break;
                    }
                    ready = e;
                    why = own;
                    if (st.next >= 0) {
                        const int d = x + (m_.microbatches << 2); // I of the next stage
                        const double g = end_[static_cast<std::size_t>(d)];
                        if (g < 0) {
                            blocked_[ru] = d;
                            break;
                        }
                        const double arrive = st.msg_from_next > 0 ? g + st.msg_from_next : g;
                        if (arrive > ready || why < 0) {
                            ready = arrive;
                            why = d;
                        } else if (arrive == ready) {
                            ready = arrive;
                        }
                    }
                } else {
                    const int d = x - 1; // its I
                    const double e = end_[static_cast<std::size_t>(d)];
                    if (e < 0) {
                        blocked_[ru] = d;
                        break;
                    }
                    ready = e;
                    why = d;
                }
                const double prior = free_[ru];
                const double start = prior < ready ? ready : prior;
                const double end = start + st.dur[k];
                if constexpr (Record) {
                    start_[static_cast<std::size_t>(x)] = start;
                    // The rank's previous action when it bound the start (ties: the rank).
                    cause_[static_cast<std::size_t>(x)] =
                        (prior >= ready && pos_[ru] > 0) ? row[pos_[ru] - 1] : why;
                }
                end_[static_cast<std::size_t>(x)] = end;
                free_[ru] = end;
                // Memory as `simulate` counts it (the same operations, so the same values).
                if (k == kind_forward) {
                    memory_[ru] += st.activation;
                    if (memory_[ru] > peak_[ru]) peak_[ru] = memory_[ru];
                } else if (k == kind_backward) {
                    memory_[ru] -= m_.split ? st.activation * m_.frees_by_i : st.activation;
                } else {
                    memory_[ru] -= st.activation * (1 - m_.frees_by_i);
                }
                if constexpr (Record) {
                    memory_after_[static_cast<std::size_t>(x)] = memory_[ru];
                    peak_after_[static_cast<std::size_t>(x)] = peak_[ru];
                }
                ++pos_[ru];
                --remaining;
                // Wake the one other rank that may wait for this action.
                int other = -1;
                if (k == kind_forward && st.next >= 0)
                    other = m_.stage[static_cast<std::size_t>(st.next)].rank;
                else if (k == kind_backward && st.prev >= 0)
                    other = m_.stage[static_cast<std::size_t>(st.prev)].rank;
                if (other >= 0 && other != r && blocked_[static_cast<std::size_t>(other)] == x) {
                    blocked_[static_cast<std::size_t>(other)] = -1;
                    work_.push_back(other);
                }
            }
        }
    }

    [[nodiscard]] evaluation finish(std::size_t remaining) const {
        evaluation out;
        out.ok = remaining == 0;
        for (std::size_t r = 0; r < static_cast<std::size_t>(m_.ranks); ++r) {
            if (m_.parameters[r] + peak_[r] > m_.fit_limit[r]) out.memory_ok = false;
            out.makespan = out.makespan < free_[r] ? free_[r] : out.makespan;
            out.sum_end += free_[r];
        }
        out.ok = out.ok && out.memory_ok;
        return out;
    }

    const model& m_;
    std::vector<double> end_;
    std::vector<int> cause_;
    std::vector<double> start_;
    std::vector<std::size_t> pos_;
    std::vector<double> free_, memory_, peak_;
    std::vector<int> blocked_;
    std::vector<int> work_;
    std::uint64_t count_ = 0;
    // The base of `run_changed` (the last recorded run): its ends, and each rank's memory and
    // peak after each action; the nodes the last `run_changed` timed again (the rest of
    // `end_` is the base's while `synced_`).
    std::vector<double> base_end_, memory_after_, peak_after_;
    std::vector<int> dirty_;
    std::vector<std::uint32_t> stage_of_; // per (stage, microbatch): the stage
    bool has_base_ = false, synced_ = false;
};

} // namespace ppsched::detail::tune
