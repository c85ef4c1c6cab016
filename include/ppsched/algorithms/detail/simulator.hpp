#pragma once
/// \file algorithms/detail/simulator.hpp
/// The engine of `simulate` (algorithms/simulate.hpp): one class that replays an order under a
/// cost model, event by event, with dense (stage, microbatch) key tables. Its result types are
/// in simulation.hpp.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <ranges>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/cost_model.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/simulation.hpp"

namespace ppsched::detail {

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
            for (const auto& s : row)
                if (slot_action(s)) ++actions;
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
                    t.on = stream_of(k);
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
        summarize_ranks(out_);
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

} // namespace ppsched::detail
