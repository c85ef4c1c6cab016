#pragma once
/// \file algorithms/simulate.hpp
/// `simulate(order, costs)`: a timed replay of a pipeline order under a cost
/// model. Each rank runs its actions in its order; an action starts when the
/// rank is free and its inputs have arrived. Returns every action's start and
/// end, the makespan, each rank's busy and idle time, the bubble, and each
/// rank's peak activation memory. A deadlock is reported, not looped on.
/// `simulate_options{.timeline = false}` keeps only the summary (no per-action
/// storage), for tuners that evaluate many orders.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <ranges>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/cost_model.hpp"
#include "ppsched/algorithms/validate.hpp"
#include "ppsched/transport.hpp"
#include "ppsched/algorithms/detail/action_table.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// Where an action runs on its rank.
enum class stream : std::uint8_t {
    compute, ///< F, I, W, B, OVERLAP_F_B: one at a time, in the rank's order
    comm,    ///< UNSHARD, RESHARD, REDUCE_GRAD: one at a time, overlapping compute
    p2p,     ///< SEND and RECV: instantaneous marks (a RECV lasts until its data
             ///< arrives)
};

/// Name of a stream (`compute`, `comm`, `p2p`).
[[nodiscard]] constexpr const char* to_chars(stream s) noexcept {
    return s == stream::compute ? "compute" : s == stream::comm ? "comm" : "p2p";
}

/// One action of the timeline.
struct timed_action {
    action act;                  ///< the action
    int rank = 0;                ///< its rank
    int slot = 0;                ///< its position in the rank's row (idle slots counted)
    stream on = stream::compute; ///< the stream it runs on
    bool ran = false;            ///< false when a deadlock or an invalid action stopped the
                                 ///< rank first
    double start = 0;            ///< when it starts (for a RECV: when it is posted)
    double end = 0;              ///< when it ends (for a RECV: when its data has arrived)
};

/// What happened on one rank.
struct rank_summary {
    int rank = 0;
    double busy = 0;                ///< time the compute stream works
    double idle = 0;                ///< makespan - busy
    double bubble_fraction = 0;     ///< idle / makespan
    double comm_busy = 0;           ///< time the communication stream works (UNSHARD, REDUCE_GRAD)
    double end = 0;                 ///< when the rank's last action ends
    double peak_activations = 0;    ///< largest activation memory held at once
    double peak_activations_at = 0; ///< when that peak is first reached
    double parameters = 0;          ///< parameter memory of the rank's stages
    double peak_memory = 0;         ///< parameters + peak_activations
};

/// Outcome of a simulation.
enum class simulation_status : std::uint8_t {
    ok,       ///< every action ran
    deadlock, ///< some ranks wait for inputs that never come (see
              ///< `simulation::stuck`)
    invalid,  ///< an action cannot be simulated (see `simulation::problem`)
};

/// A rank that cannot proceed: its next action and the input it waits for.
struct stuck_rank {
    int rank = 0; ///< the waiting rank
    int slot = 0; ///< position of its next action in its row
    action at;    ///< its next action
    /// The action whose result it waits for. A backward dependency is shown as
    /// `B`: an `I` of the same stage and microbatch serves too.
    action waiting_for;
    int waiting_rank = 0; ///< where `waiting_for` should run
};

/// An action the simulator cannot run, and why.
struct simulation_problem {
    int rank = 0;
    int slot = 0;
    action at;
    const char* what = ""; ///< a static message
};

/// Options of `simulate`.
struct simulate_options {
    /// Keep every action's start and end in `simulation::timeline`. When false the timeline is
    /// left empty and every other field is the same; the simulator then stores nothing per
    /// action (it reads the order in place), which is faster and allocates memory only in
    /// proportion to ranks + stages * microbatches: for tuners that evaluate many orders and
    /// need only the makespan, bubble, per-rank summaries and problems.
    bool timeline = true;
    /// How SENDs of a lowered order behave. Under `rendezvous` the order is first checked for
    /// the deadlocks only that transport has (a SEND waiting for a RECV its peer never
    /// reaches; `validate` with `validate_options::transport`), reported as `deadlock` with
    /// every rank of the cycle in `stuck`. The timing itself is eager's: a SEND does not wait
    /// for its RECV's post (an upper bound on how early a rendezvous run can finish).
    ppsched::transport transport = ppsched::transport::eager;
};

/// The result of `simulate`: the timeline and its summary.
struct simulation {
    simulation_status status = simulation_status::ok;
    /// Every action, by rank and then in its rank's order (empty with
    /// `simulate_options::timeline` false).
    std::vector<timed_action> timeline;
    /// One summary per rank.
    std::vector<rank_summary> ranks;
    double makespan = 0;           ///< when the last action (compute or communication) ends
    double total_compute = 0;      ///< sum of every rank's busy time
    double ideal = 0;              ///< total_compute / ranks: the makespan with no bubble at all
    double bubble_fraction = 0;    ///< total idle / (ranks * makespan)
    double bubble_ratio = 0;       ///< (makespan - ideal) / ideal
    bool lowered = false;          ///< the order had SEND/RECV actions (dependencies went
                                   ///< through them)
    std::vector<stuck_rank> stuck; ///< with `deadlock`: every rank that could not finish
    simulation_problem problem{};  ///< with `invalid`

    /// True when every action ran.
    [[nodiscard]] constexpr explicit operator bool() const noexcept {
        return status == simulation_status::ok;
    }
};

namespace detail {

// Dependency keys, grouped by (stage, microbatch) node: key(kind, stage, mb) =
// base + (stage * microbatches + mb) * per_node + kind. A compute-only order
// only ever reaches the forward and gradient keys (per_node = 2, 16 bytes); a
// lowered one has all six plus the timeline indices of the node's RECVs
// (per_node = 8: 64 bytes, one cache line, since the table is aligned to a
// line). Node-major so that what one action touches (its own forward and
// gradient, its SEND and RECV) shares a line: the table is larger than the
// caches, and the simulation is bound by its misses.
//
// Each key is one double: >= 0 when reached (the time), -1 when not reached and
// nobody waits, and -2 - r when not reached and rank r is the first of its
// waiters (a rank index is exact in a double). Reaching a key and finding its
// waiters is then one load.
enum sim_key : std::size_t {
    key_forward = 0,  // F of (stage, mb) has ended
    key_grad,         // I or B of (stage, mb) has ended: the input gradient exists
    key_send_f,       // SEND_F of (stage, mb) was issued
    key_send_b,       // SEND_B of (stage, mb) was issued
    key_recv_f,       // RECV_F of (stage, mb) was posted
    key_recv_b,       // RECV_B of (stage, mb) was posted
    key_recv_f_entry, // not a key: the timeline index of that RECV_F (exact in a
                      // double)
    key_recv_b_entry, // not a key: the timeline index of that RECV_B
    key_lowered_node  // per_node of a lowered order
};

inline constexpr double key_unreached = -1;

// The first rank waiting for a key of value `v`, or -1.
[[nodiscard]] constexpr int key_waiter(double v) noexcept {
    return v <= -2 ? static_cast<int>(-2 - v) : -1;
}

[[nodiscard]] constexpr double max2(double a, double b) noexcept { return a < b ? b : a; }

// std::isfinite, usable in constant expressions (<cmath> is not constexpr in C++20).
[[nodiscard]] constexpr bool is_finite(double x) noexcept {
    return x >= -std::numeric_limits<double>::max() && x <= std::numeric_limits<double>::max();
}

// What the simulator needs of a stage, computed once: the config's stage
// arithmetic divides.
struct sim_stage {
    int rank = 0;
    int prev = -1, next = -1;      // config::previous_stage / next_stage
    bool second_direction = false; // config::stage_direction(stage) == 1
};

// What the simulator reads and writes for a rank at (nearly) every action, in one cache line:
// ranks take turns, so a rank's state is rarely in the first-level cache when it resumes, and
// one line is one miss instead of one per array. The summary fields go to `rank_summary` at
// the end.
struct alignas(64) sim_rank {
    std::size_t pos = 0, end = 0; // next action in the timeline; end of the rank's actions
    double compute_free = 0;      // when the compute stream is free
    double memory = 0;            // activation memory held now
    double busy = 0;              // rank_summary::busy
    double last_end = 0;          // rank_summary::end
    double peak = 0, peak_at = 0; // rank_summary::peak_activations, peak_activations_at
};

/// The simulator's state; one instance per call. `Timeline`: it fills `simulation::timeline`
/// (a template parameter, so that the mode costs no test in the loop).
template <bool Timeline>
class simulator {
  public:
    constexpr simulator(const config& cfg, const cost_model& costs)
        : cfg_(cfg), stages_(static_cast<std::size_t>(cfg.num_stages())),
          mbs_(static_cast<std::size_t>(cfg.microbatches)), message_(costs.message_time()),
          frees_by_i_(costs.input_grad_frees), dual_(cfg.direction_count() == 2) {
        costs_.reserve(stages_);
        stage_.reserve(stages_);
        for (std::size_t s = 0; s < stages_; ++s) {
            const int si = static_cast<int>(s);
            costs_.push_back(costs.at(si));
            stage_.push_back({cfg.stage_to_rank(si), cfg.previous_stage(si), cfg.next_stage(si),
                              cfg.stage_direction(si) == 1});
        }
    }

    template <order_range R>
    constexpr simulation run(const R& rows) {
        if constexpr (Timeline) {
            flatten(rows);
            timeline_source src;
            if (out_.status == simulation_status::ok) execute(src);
        } else {
            static_assert(reads_in_place<R>);
            run_in_place(rows);
        }
        summarize();
        return std::move(out_);
    }

    // Without a timeline the ranks read their rows in place, through iterators kept per rank;
    // that needs rows that outlive the iteration (not made on the fly by a view).
    template <order_range R>
    static constexpr bool reads_in_place =
        std::is_lvalue_reference_v<std::ranges::range_reference_t<const R>>;

  private:
    // The actions come from the timeline (rank r's at [rank_[r].pos, rank_[r].end)).
    struct timeline_source {};

    // Without a timeline: where rank r is in its row (the next action, or an idle slot before
    // it) and that slot's index in the row.
    template <class It, class End>
    struct row_cursor {
        It at;
        End end;
        int slot = 0;
    };

    // The summary-only path: one pass to check the actions and to see whether the order is
    // lowered (as `flatten` does, without storing them), then the simulation on cursors.
    template <order_range R>
    constexpr void run_in_place(const R& rows) {
        using row = std::remove_reference_t<std::ranges::range_reference_t<const R>>;
        using cursor = row_cursor<std::ranges::iterator_t<row>, std::ranges::sentinel_t<row>>;
        std::vector<cursor> cursors;
        int r = 0;
        for (const auto& rw : rows) {
            int i = 0;
            for (const auto& s : rw) {
                if (const action* a = slot_action(s)) {
                    out_.lowered |= is_p2p(a->kind());
                    if (out_.status == simulation_status::ok) check_range(*a, r, i);
                }
                ++i;
            }
            cursors.push_back({std::ranges::begin(rw), std::ranges::end(rw), 0});
            ++r;
        }
        ranks_ = r;
        PPSCHED_EXPECTS(ranks_ == cfg_.ranks, "ppsched::simulate: the order has ", ranks_,
                        " rows but the configuration has ", cfg_.ranks, " ranks");
        if (out_.status == simulation_status::ok) execute(cursors);
    }
    template <order_range R>
    constexpr void flatten(const R& rows) {
        // Count first, so that the timeline (48 bytes per action) is allocated
        // once.
        std::size_t actions = 0, row_count = 0;
        for (const auto& row : rows) {
            ++row_count;
            for (const auto& s : row) actions += slot_action(s) ? 1 : 0;
        }
        out_.timeline.reserve(actions);
        begin_.reserve(row_count + 1);
        begin_.push_back(0);
        int r = 0;
        for (const auto& row : rows) {
            int i = 0;
            for (const auto& s : row) {
                if (const action* a = slot_action(s)) {
                    const action_kind k = a->kind();
                    const bool p2p = is_p2p(k);
                    timed_action& t = out_.timeline.emplace_back();
                    t.act = *a;
                    t.rank = r;
                    t.slot = i;
                    t.on = is_compute(k) ? stream::compute : p2p ? stream::p2p : stream::comm;
                    out_.lowered |= p2p;
                    if (out_.status == simulation_status::ok) check_range(*a, r, i);
                }
                ++i;
            }
            begin_.push_back(out_.timeline.size());
            ++r;
        }
        ranks_ = r;
        PPSCHED_EXPECTS(ranks_ == cfg_.ranks, "ppsched::simulate: the order has ", ranks_,
                        " rows but the configuration has ", cfg_.ranks, " ranks");
    }

    constexpr void check_range(const action& a, int r, int slot) {
        if (a.is_overlap()) {
            check_part(a, a.forward_part(), r, slot);
            check_part(a, a.backward_part(), r, slot);
        } else {
            check_part(a, a, r, slot);
        }
    }

    constexpr void check_part(const action& a, const action& p, int r, int slot) {
        const auto s = static_cast<std::size_t>(p.stage());
        if (s >= stages_) return fail(r, slot, a, "stage out of range for the configuration");
        if (p.has_microbatch()) {
            const int mb = p.microbatch();
            if (static_cast<std::size_t>(mb) >= mbs_)
                return fail(r, slot, a, "microbatch out of range for the configuration");
            // config::stage_runs_microbatch, with the stage's direction from the
            // table.
            if ((dual_ && mb >= cfg_.microbatches / 2) != stage_[s].second_direction)
                return fail(r, slot, a,
                            "microbatch of the other direction (not run by this stage)");
        }
        if (stage_[s].rank != r)
            return fail(r, slot, a, "action on a rank that does not hold its stage");
    }

    constexpr void fail(int r, int slot, const action& a, const char* what) {
        if (out_.status == simulation_status::invalid) return;
        out_.status = simulation_status::invalid;
        out_.problem = {r, slot, a, what};
    }

    [[nodiscard]] constexpr std::size_t key(sim_key k, int stage, int mb) const noexcept {
        return base_ +
               (static_cast<std::size_t>(stage) * mbs_ + static_cast<std::size_t>(mb)) * per_node_ +
               static_cast<std::size_t>(k);
    }

    template <class Source>
    constexpr void execute(Source& src) {
        const auto R = static_cast<std::size_t>(ranks_);
        per_node_ = out_.lowered ? key_lowered_node : key_grad + 1;
        // One cache line of slack, to start the nodes at a line boundary.
        constexpr std::size_t line = 64 / sizeof(double);
        keys_.assign(per_node_ * stages_ * mbs_ + line, key_unreached);
        base_ = 0;
        if (!std::is_constant_evaluated()) {
            const auto misalign = reinterpret_cast<std::uintptr_t>(keys_.data()) % 64;
            base_ = misalign ? (64 - misalign) / sizeof(double) : 0;
        }
        unshard_end_.assign(stages_, 0.0);
        next_waiter_.assign(R, -1);
        blocked_on_.assign(R, 0);
        comm_free_.assign(R, 0.0);
        rank_.assign(R, sim_rank{});
        out_.ranks.assign(R, rank_summary{});
        for (int r = 0; r < ranks_; ++r) {
            const auto ru = static_cast<std::size_t>(r);
            if constexpr (std::is_same_v<Source, timeline_source>) {
                rank_[ru].pos = begin_[ru];
                rank_[ru].end = begin_[ru + 1];
            }
            out_.ranks[ru].rank = r;
            ready_.push_back(r);
        }
        while (!ready_.empty() && out_.status == simulation_status::ok) {
            const int r = ready_.back();
            ready_.pop_back();
            if constexpr (std::is_same_v<Source, timeline_source>)
                advance(r);
            else
                advance_in_place(r, src[static_cast<std::size_t>(r)]);
        }
        if (out_.status != simulation_status::ok) return;
        for (int r = 0; r < ranks_; ++r) {
            const auto ru = static_cast<std::size_t>(r);
            timed_action t;
            if constexpr (std::is_same_v<Source, timeline_source>) {
                if (rank_[ru].pos == rank_[ru].end) continue;
                t = out_.timeline[rank_[ru].pos];
            } else {
                // Every rank advanced at least once, so its cursor is at its end or at the
                // action it waits to run (idle slots before it were skipped).
                const auto& c = src[ru];
                if (c.at == c.end) continue;
                t.act = *slot_action(*c.at);
                t.slot = c.slot;
            }
            out_.status = simulation_status::deadlock;
            const std::size_t k = blocked_on_[ru] - base_;
            const auto kind = static_cast<sim_key>(k % per_node_);
            const int stage = static_cast<int>(k / per_node_ / mbs_);
            const int mb = static_cast<int>(k / per_node_ % mbs_);
            const action waited = kind == key_forward  ? action::forward(stage, mb)
                                  : kind == key_grad   ? action::full_backward(stage, mb)
                                  : kind == key_send_f ? action::send_f(stage, mb)
                                                       : action::send_b(stage, mb);
            out_.stuck.push_back({r, t.slot, t.act, waited, cfg_.stage_to_rank(stage)});
        }
    }

    // Runs rank `r` until it finishes, blocks on a missing input, or meets an
    // invalid action.
    constexpr void advance(int r) {
        const auto ru = static_cast<std::size_t>(r);
        sim_rank& rs = rank_[ru];
        const std::size_t end = rs.end;
        while (rs.pos < end) {
            if (!std::is_constant_evaluated()) prefetch_ahead(rs.pos, end);
            timed_action& t = out_.timeline[rs.pos];
            const bool done = is_compute(t.act.kind()) ? run_compute(r, t) : run_other(r, t);
            if (!done) return;
            t.ran = true;
            // The summary's ends, kept as the actions run (a RECV's end moves later:
            // `input`).
            rs.last_end = max2(rs.last_end, t.end);
            makespan_ = max2(makespan_, t.end);
            ++rs.pos;
        }
    }

    // `advance` without a timeline: rank `r` reads its actions from its row through `c`, and
    // each action's times live only while it runs.
    template <class Cursor>
    constexpr void advance_in_place(int r, Cursor& c) {
        sim_rank& rs = rank_[static_cast<std::size_t>(r)];
        for (; c.at != c.end; ++c.at, ++c.slot) {
            const auto& s = *c.at;
            const action* a = slot_action(s);
            if (a == nullptr) continue; // an idle slot
            if constexpr (std::contiguous_iterator<decltype(c.at)>) {
                // As `prefetch_ahead`: the next slot's keys, ready at this rank's next turn.
                if (!std::is_constant_evaluated() && c.at + 1 != c.end) {
                    if (const action* next = slot_action(*(c.at + 1));
                        next && next->has_microbatch())
                        __builtin_prefetch(
                            &keys_[key(key_forward, next->stage(), next->microbatch())]);
                }
            }
            timed_action t;
            t.act = *a;
            t.rank = r;
            t.slot = c.slot;
            const bool done = is_compute(a->kind()) ? run_compute(r, t) : run_other(r, t);
            if (!done) return;
            rs.last_end = max2(rs.last_end, t.end);
            makespan_ = max2(makespan_, t.end);
        }
    }

    // Ranks take turns: by the time a rank runs again, many other ranks have run,
    // so its next actions and their keys are rarely still in cache and the
    // hardware prefetcher cannot follow hundreds of interleaved streams. While
    // rank r is at `pos`, start loading the timeline entry two ahead and the keys
    // of the next action; they are ready at its next turn.
    constexpr void prefetch_ahead(std::size_t pos, std::size_t end) const noexcept {
        if (pos + 2 < end) __builtin_prefetch(&out_.timeline[pos + 2]);
        if (pos + 1 < end) {
            const action& next = out_.timeline[pos + 1].act;
            if (next.has_microbatch())
                __builtin_prefetch(&keys_[key(key_forward, next.stage(), next.microbatch())]);
        }
    }

    // Blocks rank `r` on key `k`: it is woken when `k` is reached.
    constexpr bool block(int r, std::size_t k) {
        const auto ru = static_cast<std::size_t>(r);
        blocked_on_[ru] = k;
        next_waiter_[ru] = key_waiter(keys_[k]);
        keys_[k] = -2 - static_cast<double>(r);
        return false;
    }

    // Records that key `k` is reached at `when` and wakes its waiters. False for
    // a duplicate.
    constexpr bool reach(std::size_t k, double when) {
        const int first = key_waiter(keys_[k]);
        if (keys_[k] >= 0) return false;
        keys_[k] = when;
        for (int w = first; w != -1;) {
            const auto wu = static_cast<std::size_t>(w);
            // The woken rank resumes soon and first reads its next action: start
            // loading it (ranks take turns, so it is rarely still in cache).
            if (Timeline && !std::is_constant_evaluated())
                __builtin_prefetch(&out_.timeline[rank_[wu].pos]);
            ready_.push_back(w);
            w = next_waiter_[wu];
        }
        return true;
    }

    // When key `k` was reached, or -1 after blocking `r` on it.
    constexpr double wait_for(int r, std::size_t k) {
        const double t = keys_[k];
        if (t >= 0) return t;
        block(r, k);
        return -1;
    }

    // When the input a part on `stage` needs from `producer` (the previous stage
    // for a forward, the next for a backward) is available on rank `r`; -1 when
    // `r` must wait (it was blocked).
    constexpr double input(int r, const timed_action& t, bool fwd, int stage, int producer,
                           int mb) {
        const sim_key made = fwd ? key_forward : key_grad;
        if (stage_[static_cast<std::size_t>(producer)].rank == r)
            return wait_for(r, key(made, producer, mb));
        if (!out_.lowered) {
            const double made_at = wait_for(r, key(made, producer, mb));
            return made_at < 0 ? -1.0 : made_at + message_;
        }
        // A lowered order: the data comes through the RECV posted earlier on this
        // rank and the SEND issued on the producer's rank; the transfer starts once
        // both have happened.
        const double posted = keys_[key(fwd ? key_recv_f : key_recv_b, stage, mb)];
        if (posted < 0) {
            fail(r, t.slot, t.act,
                 fwd ? "a forward fed from another rank needs a RECV_F posted before "
                       "it"
                     : "a backward fed from another rank needs a RECV_B posted "
                       "before it");
            return -1;
        }
        const double sent = wait_for(r, key(fwd ? key_send_f : key_send_b, producer, mb));
        if (sent < 0) return -1;
        const double arrival = max2(posted, sent) + message_;
        if constexpr (Timeline) {
            const double entry = keys_[key(fwd ? key_recv_f_entry : key_recv_b_entry, stage, mb)];
            out_.timeline[static_cast<std::size_t>(entry)].end = arrival;
        }
        // The RECV (on rank `r`) has run: its summary end follows its new end.
        sim_rank& rs = rank_[static_cast<std::size_t>(r)];
        rs.last_end = max2(rs.last_end, arrival);
        makespan_ = max2(makespan_, arrival);
        return arrival;
    }

    // When a part (kind, stage s, microbatch mb) of a compute action may start as
    // far as its inputs go; -1 when rank `r` must wait (it was blocked) or the
    // action failed.
    constexpr double part_ready(int r, const timed_action& t, action_kind kind, int s, int mb) {
        const sim_stage& st = stage_[static_cast<std::size_t>(s)];
        switch (kind) {
        case action_kind::forward:
            return st.prev >= 0 ? input(r, t, true, s, st.prev, mb) : 0.0;
        case action_kind::backward_input:
        case action_kind::full_backward: {
            const double own = wait_for(r, key(key_forward, s, mb));
            if (own < 0 || st.next < 0) return own;
            const double grad = input(r, t, false, s, st.next, mb);
            return grad < 0 ? -1.0 : max2(own, grad);
        }
        default: // W needs its I
            return wait_for(r, key(key_grad, s, mb));
        }
    }

    // Applies a finished part's memory and reaches its key; false (after failing)
    // for a computation that already ran.
    constexpr bool finish_part(int r, const timed_action& t, action_kind kind, int s, int mb) {
        const auto ru = static_cast<std::size_t>(r);
        const double act = costs_[static_cast<std::size_t>(s)].activation;
        sim_rank& rs = rank_[ru];
        bool fresh = true;
        switch (kind) {
        case action_kind::forward:
            // Activations are held from the forward's start (they are being
            // produced).
            rs.memory += act;
            if (rs.memory > rs.peak) {
                rs.peak = rs.memory;
                rs.peak_at = t.start;
            }
            fresh = reach(key(key_forward, s, mb), t.end);
            break;
        case action_kind::full_backward:
            rs.memory -= act;
            fresh = reach(key(key_grad, s, mb), t.end);
            break;
        case action_kind::backward_input:
            rs.memory -= act * frees_by_i_;
            fresh = reach(key(key_grad, s, mb), t.end);
            break;
        default: {
            // W reaches no key (nothing waits for it), so a repeat is caught by its own
            // table, made at the first W (compute-only orders without W never pay for it).
            if (w_done_.empty()) w_done_.assign(stages_ * mbs_, 0);
            std::uint8_t& done =
                w_done_[static_cast<std::size_t>(s) * mbs_ + static_cast<std::size_t>(mb)];
            fresh = done == 0;
            done = 1;
            rs.memory -= act * (1 - frees_by_i_);
        }
        }
        if (!fresh) fail(r, t.slot, t.act, "the same computation runs twice");
        return fresh;
    }

    constexpr bool run_compute(int r, timed_action& t) {
        const auto ru = static_cast<std::size_t>(r);
        const action& a = t.act;
        // An OVERLAP_F_B is its two parts; anything else is its own single part
        // (read in place rather than through action::parts, which copies).
        const bool two = a.is_overlap();
        const action_kind k0 = two ? action_kind::forward : a.kind();
        const int s0 = a.stage(), mb0 = a.microbatch();
        const action second = two ? a.backward_part() : action{};
        sim_rank& rs = rank_[ru];
        double start = rs.compute_free;
        const double ready0 = part_ready(r, t, k0, s0, mb0);
        if (ready0 < 0) return false; // blocked, or failed
        start = max2(start, max2(ready0, unshard_end_[static_cast<std::size_t>(s0)]));
        if (two) {
            const double ready1 =
                part_ready(r, t, second.kind(), second.stage(), second.microbatch());
            if (ready1 < 0) return false;
            start =
                max2(start, max2(ready1, unshard_end_[static_cast<std::size_t>(second.stage())]));
        }
        const double d = duration(a, costs_);
        t.start = start;
        t.end = start + d;
        rs.compute_free = t.end;
        rs.busy += d;
        if (!finish_part(r, t, k0, s0, mb0)) return false;
        return !two || finish_part(r, t, second.kind(), second.stage(), second.microbatch());
    }

    constexpr bool run_other(int r, timed_action& t) {
        const auto ru = static_cast<std::size_t>(r);
        const action& a = t.act;
        const double issued = rank_[ru].compute_free; // every earlier compute has finished
        const int s = a.stage(), mb = a.microbatch();
        switch (a.kind()) {
        case action_kind::unshard:
        case action_kind::reshard:
        case action_kind::reduce_grad: {
            const double d = duration(a, costs_);
            t.start = max2(issued, comm_free_[ru]);
            t.end = t.start + d;
            comm_free_[ru] = t.end;
            out_.ranks[ru].comm_busy += d;
            if (a.kind() == action_kind::unshard) unshard_end_[static_cast<std::size_t>(s)] = t.end;
            return true;
        }
        case action_kind::send_f:
        case action_kind::send_b: {
            const bool fwd = a.kind() == action_kind::send_f;
            if (keys_[key(fwd ? key_forward : key_grad, s, mb)] < 0) {
                fail(r, t.slot, a,
                     fwd ? "SEND_F before the forward that produces its data on this "
                           "rank"
                         : "SEND_B before the backward that produces its data on this "
                           "rank");
                return false;
            }
            t.start = t.end = issued;
            if (!reach(key(fwd ? key_send_f : key_send_b, s, mb), issued)) {
                fail(r, t.slot, a, "the same message is sent twice");
                return false;
            }
            return true;
        }
        default: { // RECV_F, RECV_B: posted now, ends when its data arrives
            const bool fwd = a.kind() == action_kind::recv_f;
            t.start = t.end = issued;
            if constexpr (Timeline)
                keys_[key(fwd ? key_recv_f_entry : key_recv_b_entry, s, mb)] =
                    static_cast<double>(rank_[ru].pos);
            if (!reach(key(fwd ? key_recv_f : key_recv_b, s, mb), issued)) {
                fail(r, t.slot, a, "the same message is received twice");
                return false;
            }
            return true;
        }
        }
    }

    constexpr void summarize() {
        out_.ranks.resize(static_cast<std::size_t>(ranks_));
        for (int r = 0; r < ranks_; ++r) out_.ranks[static_cast<std::size_t>(r)].rank = r;
        for (std::size_t r = 0; r < rank_.size(); ++r) { // when `execute` ran
            rank_summary& sum = out_.ranks[r];
            sum.busy = rank_[r].busy;
            sum.end = rank_[r].last_end;
            sum.peak_activations = rank_[r].peak;
            sum.peak_activations_at = rank_[r].peak_at;
        }
        out_.makespan = makespan_; // the ends were kept by `advance` and `input`
        for (std::size_t s = 0; s < stages_; ++s) {
            const int r = stage_[s].rank;
            if (r < ranks_)
                out_.ranks[static_cast<std::size_t>(r)].parameters += costs_[s].parameters;
        }
        for (rank_summary& sum : out_.ranks) {
            sum.idle = out_.makespan - sum.busy;
            sum.bubble_fraction = out_.makespan > 0 ? sum.idle / out_.makespan : 0;
            sum.peak_memory = sum.parameters + sum.peak_activations;
            out_.total_compute += sum.busy;
        }
        if (ranks_ > 0) {
            out_.ideal = out_.total_compute / ranks_;
            // Finite times whose sum overflows (found by fuzzing: a 1e307 message time) must not
            // turn the summary into nan: average without the sum, and use the equivalent
            // 1 - ideal / makespan for the fraction (the usual formulas keep their bits).
            if (!is_finite(out_.total_compute)) {
                out_.ideal = 0;
                for (const rank_summary& sum : out_.ranks) out_.ideal += sum.busy / ranks_;
            }
            const double span = out_.makespan * ranks_;
            out_.bubble_fraction = span <= 0         ? 0
                                   : is_finite(span) ? (span - out_.total_compute) / span
                                                     : 1 - out_.ideal / out_.makespan;
            out_.bubble_ratio = out_.ideal > 0 ? (out_.makespan - out_.ideal) / out_.ideal : 0;
        }
    }

    config cfg_;
    std::size_t stages_, mbs_;
    double message_, frees_by_i_;
    bool dual_;                           // two directions (config::direction_count() == 2)
    std::size_t per_node_ = key_grad + 1; // keys per (stage, microbatch): see sim_key
    std::size_t base_ = 0;                // index of the first node in keys_ (line-aligned)
    std::vector<resolved_stage_costs> costs_;
    std::vector<sim_stage> stage_; // per stage
    int ranks_ = 0;
    double makespan_ = 0;
    simulation out_;
    std::vector<std::size_t> begin_;      // rank r's actions: timeline[begin_[r], begin_[r+1])
    std::vector<sim_rank> rank_;          // per rank
    std::vector<double> keys_;            // per key: see sim_key
    std::vector<std::uint8_t> w_done_;    // per (stage, mb): its W has run (made at the first W)
    std::vector<int> next_waiter_;        // per rank: next rank waiting on the same key
    std::vector<std::size_t> blocked_on_; // per rank: the key it last waited for
    std::vector<double> unshard_end_;     // per stage: when its latest UNSHARD ends
    std::vector<double> comm_free_;       // per rank: when the communication stream is free
    std::vector<int> ready_;              // ranks that may advance
};

} // namespace detail

namespace detail {
/// The result of `simulate` for an order far smaller than its configuration: `invalid`, at
/// the first action with the largest microbatch index. Throws `config_error` when the number
/// of rows is not `cfg.ranks`, as the simulation does.
template <order_range R>
[[nodiscard]] constexpr simulation unaffordable_simulation(const R& rows, const config& cfg) {
    simulation sim;
    sim.status = simulation_status::invalid;
    sim.problem.what = "the configuration names far more stages x microbatches than the order "
                       "has slots (it cannot be valid: see validate)";
    int r = 0, best = -1;
    for (const auto& row : rows) {
        int i = 0;
        for (const auto& s : row) {
            const action* a = slot_action(s);
            if (a && a->has_microbatch() && a->microbatch() > best) {
                best = a->microbatch();
                sim.problem.rank = r;
                sim.problem.slot = i;
                sim.problem.at = *a;
            }
            ++i;
        }
        ++r;
    }
    PPSCHED_EXPECTS(r == cfg.ranks, "ppsched::simulate: the order has ", r,
                    " rows but the configuration has ", cfg.ranks, " ranks");
    sim.ranks.resize(static_cast<std::size_t>(r));
    for (int k = 0; k < r; ++k) sim.ranks[static_cast<std::size_t>(k)].rank = k;
    return sim;
}
} // namespace detail

/// Simulates `rows` (any order range, compute-only or lowered) for `cfg` under
/// `costs`.
///
/// Dependencies: a forward needs the previous stage's forward of its microbatch
/// (`cfg.previous_stage`); a backward (`B` or `I`) needs its own forward and
/// the next stage's backward (`cfg.next_stage`); a `W` needs its `I`; an
/// `OVERLAP_F_B` needs both parts'. Between ranks an input arrives
/// `costs.message_time()` after it is produced. In a lowered order (one with
/// SEND/RECV) inputs from other ranks go through them instead: a RECV is posted
/// where it stands, a SEND is issued where it stands, and the consumer waits
/// until `max(post, send) + message_time()`. UNSHARD, RESHARD and REDUCE_GRAD
/// run on the rank's communication stream once every earlier compute has
/// finished; compute on a stage waits for the stage's latest UNSHARD. Idle
/// slots take no time.
///
/// Returns the timeline and summary; a deadlock or an action that cannot be
/// simulated is reported in the result (`status`), never looped on. Throws
/// `config_error` for a malformed `cfg` or `costs`, or when the number of rows
/// is not `cfg.ranks`. Complexity: O(actions + stages * microbatches + ranks)
/// time; memory O(actions + stages * microbatches + ranks), or, with
/// `options.timeline` false, O(stages * microbatches + ranks) (unless the rows
/// are made on the fly: a range whose rows are not lvalues is copied).
template <order_range R>
[[nodiscard]] constexpr simulation simulate(const R& rows, const config& cfg,
                                            const cost_model& costs = {},
                                            simulate_options options = {}) {
    check(cfg);
    // The one overflow rule (see `cost_model::check_totals`), over the order's slots.
    std::size_t slots = 0;
    for (const auto& row : rows) {
        if constexpr (std::ranges::sized_range<decltype(row)>)
            slots += static_cast<std::size_t>(std::ranges::size(row));
        else
            for (const auto& s : row) {
                (void)s;
                ++slots;
            }
    }
    costs.check_totals(slots, cfg.num_stages());
    // Bounded resources: no stages x microbatches table for a configuration far larger than
    // the order (it cannot be valid; docs/design.md).
    if (!detail::tables_affordable(rows, cfg)) return detail::unaffordable_simulation(rows, cfg);
    if (options.transport == transport::rendezvous) {
        const validation_report report =
            validate(rows, cfg, validate_options{.transport = transport::rendezvous});
        if (report.has(rule::deadlock) && !validate(rows, cfg).has(rule::deadlock)) {
            simulation sim;
            sim.status = simulation_status::deadlock;
            for (const violation& v : report)
                if (v.what == rule::deadlock)
                    sim.stuck.push_back({v.rank, v.step, v.subject, v.other, v.other_rank});
            return sim;
        }
    }
    if constexpr (detail::simulator<false>::reads_in_place<R>) {
        if (!options.timeline) return detail::simulator<false>(cfg, costs).run(rows);
        return detail::simulator<true>(cfg, costs).run(rows);
    } else {
        // Rows made on the fly: copied into the timeline, which is dropped if not wanted.
        simulation sim = detail::simulator<true>(cfg, costs).run(rows);
        if (!options.timeline) sim.timeline = {};
        return sim;
    }
}

/// Simulates an `order` under `costs` (its own configuration).
[[nodiscard]] constexpr simulation simulate(const order& o, const cost_model& costs = {},
                                            simulate_options options = {}) {
    return simulate(o, o.cfg(), costs, options);
}

/// A one-line human description of a failed simulation (empty when it
/// succeeded), e.g. `deadlock: rank 0 waits at slot 3 (0F1) for 1B1 on rank 1;
/// ...`.
[[nodiscard]] inline std::string describe_problem(const simulation& sim) {
    std::string out;
    if (sim.status == simulation_status::invalid) {
        out = "invalid: rank " + std::to_string(sim.problem.rank) + " slot " +
              std::to_string(sim.problem.slot) + " (" + to_string(sim.problem.at) +
              "): " + sim.problem.what;
    } else if (sim.status == simulation_status::deadlock) {
        out = "deadlock:";
        bool first = true;
        for (const stuck_rank& s : sim.stuck) {
            out += first ? " " : "; ";
            first = false;
            std::string waited = to_string(s.waiting_for);
            if (s.waiting_for.kind() == action_kind::full_backward)
                waited += " (or " +
                          to_string(action::backward_input(s.waiting_for.stage(),
                                                           s.waiting_for.microbatch())) +
                          ")";
            out += "rank " + std::to_string(s.rank) + " waits at slot " + std::to_string(s.slot) +
                   " (" + to_string(s.at) + ") for " + waited + " on rank " +
                   std::to_string(s.waiting_rank);
        }
    }
    return out;
}

} // namespace ppsched
