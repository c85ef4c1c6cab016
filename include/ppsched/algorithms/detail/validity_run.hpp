#pragma once
/// \file algorithms/detail/validity_run.hpp
/// `validity_run`: the fast path of `validate`. It decides whether an order is valid in one
/// lock-step run over the rows, with one byte of state per (stage, microbatch), instead of
/// indexing every action's position first and checking each rule in its own pass.
///
/// It only answers "valid" or "look closer": `validate` returns an empty report at once when
/// the run says valid, and otherwise runs its full passes, which find every violation with its
/// position (so reports are the same as without this path). "Valid" here is exactly what the
/// full passes accept; the argument for each rule is next to its check below.
///
/// Why it works: when every action is on its stage's own rank, every same-rank rule of
/// `validate` ("X runs before Y on the rank", "a RECV earlier on the rank") is a question about
/// the rank's own past, which a run in row order answers with "has Y run yet?"; and every
/// cross-rank wait is the deadlock simulation, which the run performs anyway. Presence
/// (missing, duplicate, matched SEND/RECV) is one sweep of the per-(stage, microbatch) bits
/// at the end.

#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/algorithms/detail/dense_array.hpp"
#include "ppsched/order.hpp"

namespace ppsched::detail {

namespace validity {

// A (stage, microbatch) cell: one bit per action plane, set when that action has run. (One byte:
// the table stays in cache longer than with wider cells; the compiler's reloads after each
// byte store, which may alias anything, cost less than that.)
using cell_bit_t = std::uint8_t;
enum : cell_bit_t {
    bit_f = 1,
    bit_i = 2,
    bit_w = 4,
    bit_b = 8,
    bit_send_f = 16,
    bit_recv_f = 32,
    bit_send_b = 64,
    bit_recv_b = 128,
    bit_grad = bit_b | bit_i, // the input gradient: B, or I when split
    bit_compute = bit_f | bit_i | bit_w | bit_b,
};
/// Per action kind (by its value): its bit in a cell (0: no microbatch, or OVERLAP_F_B).
inline constexpr cell_bit_t kind_bit[action_kind_count] = {
    bit_f, bit_i, bit_w, bit_b, 0, 0, 0, bit_send_f, bit_recv_f, bit_send_b, bit_recv_b, 0};

/// One lock-step run of an order (see the file comment). Requires: a well-formed `cfg` and one
/// row per rank (the caller checks both).
class validity_run {
  public:
    /// `idle_ok`: whether a lowered order may hold empty slots (see `validate_options`).
    constexpr validity_run(const config& cfg, std::span<const std::span<const slot>> rows,
                           bool idle_ok = true)
        : cfg_(cfg), rows_(rows), idle_ok_(idle_ok) {}

    /// True when the order is valid; false when it is not, or in the rare orders this run
    /// does not decide (then the full passes decide).
    [[nodiscard]] constexpr bool valid() {
        if (!setup()) return false;
        // Empty slots where they are not allowed (idle_in_lowered): an order with any
        // communication or FSDP action and an empty slot is left to the full passes.
        if (!idle_ok_) {
            bool idle = false, lowered = false;
            for (const auto& row : rows_)
                for (const slot& x : row) {
                    const action* a = x.get();
                    if (a == nullptr)
                        idle = true;
                    else if (!is_compute(a->kind()))
                        lowered = true;
                }
            if (idle && lowered) return false;
        }
        // The order is lowered when it has any SEND/RECV. Run as compute-only until one is met,
        // then start again as lowered: in a lowered order some rank reaches its first SEND/RECV
        // before anything could block or fail that the lowered rules would accept (a compute
        // action with a remote input needs a RECV earlier on its rank), so the first attempt
        // ends early.
        outcome o = run(false);
        if (o == outcome::lowered) {
            reset();
            o = run(true);
        }
        return o == outcome::valid;
    }

  private:
    enum class outcome { valid, invalid, lowered };
    enum class step_result { done, blocked, invalid, lowered };

    // Per-stage sharding and gradient-reduction state.
    enum : std::uint8_t {
        st_unsharded = 1, // between UNSHARD and RESHARD
        st_managed = 2,   // the stage has had an UNSHARD or RESHARD (FSDP manages it)
        st_reduced = 4,   // REDUCE_GRAD has run
        st_pending = 8,   // an UNSHARD no compute has waited for yet
    };

    struct stage_geometry {
        int home = 0;                       // the stage's rank
        int mb_begin = 0, mb_count = 0;     // its microbatches
        int prev = -1, next = -1;           // its neighbours (-1: none)
        int prev_home = -1, next_home = -1; // their ranks (-1: none)
        std::uint8_t p2p = 0;               // the SEND/RECV bits a lowered cell must have
    };

    constexpr bool setup() {
        S_ = cfg_.num_stages();
        R_ = cfg_.ranks;
        if (static_cast<int>(rows_.size()) != R_) return false;
        geo_ = dense_array<stage_geometry>(static_cast<std::size_t>(S_));
        for (int s = 0; s < S_; ++s) {
            stage_geometry& g = geo_[static_cast<std::size_t>(s)];
            g.home = cfg_.stage_to_rank(s);
            g.mb_begin = cfg_.first_microbatch(s);
            g.mb_count = cfg_.microbatch_count(s);
            g.prev = cfg_.previous_stage(s);
            g.next = cfg_.next_stage(s);
            if (g.mb_count > M_) M_ = g.mb_count;
        }
        for (int s = 0; s < S_; ++s) {
            stage_geometry& g = geo_[static_cast<std::size_t>(s)];
            // The waits and the end sweep rely on neighbours that agree with each other (same
            // microbatches, each the other's neighbour); leave any other layout to the passes.
            if (g.prev >= 0) {
                const stage_geometry& p = geo_[static_cast<std::size_t>(g.prev)];
                if (p.next != s || p.mb_begin != g.mb_begin || p.mb_count != g.mb_count)
                    return false;
                g.prev_home = p.home;
                if (p.home != g.home) g.p2p |= bit_recv_f | bit_send_b;
            }
            if (g.next >= 0) {
                const stage_geometry& n = geo_[static_cast<std::size_t>(g.next)];
                if (n.prev != s) return false;
                g.next_home = n.home;
                if (n.home != g.home) g.p2p |= bit_send_f | bit_recv_b;
            }
        }
        geo_p_ = geo_.begin();
        reset();
        return true;
    }

    constexpr void reset() {
        done_ =
            dense_array<cell_bit_t>(static_cast<std::size_t>(S_) * static_cast<std::size_t>(M_));
        stage_ = dense_array<std::uint8_t>(static_cast<std::size_t>(S_));
        cursor_ = dense_array<int>(static_cast<std::size_t>(R_));
        blocked_ = dense_array<long long>(static_cast<std::size_t>(R_), -1);
        ready_ = dense_array<int>(static_cast<std::size_t>(R_));
        // Raw pointers into the tables: no accessor call per use (shorter constant evaluation).
        done_p_ = done_.begin();
        stage_p_ = stage_.begin();
        cursor_p_ = cursor_.begin();
        blocked_p_ = blocked_.begin();
        ready_p_ = ready_.begin();
    }

    constexpr outcome run(bool lowered) {
        lowered_ = lowered;
        // The ranks that can run, a stack (each rank is on it at most once).
        int ready_count = 0;
        for (int r = R_ - 1; r >= 0; --r) ready_p_[ready_count++] = r;
        while (ready_count > 0) {
            const int r = ready_p_[--ready_count];
            const auto ri = static_cast<std::size_t>(r);
            const slot* row = rows_[ri].data();
            const int n = static_cast<int>(rows_[ri].size());
            int at = cursor_p_[ri];
            step_result res = step_result::done;
            for (; at < n && res == step_result::done; ++at) {
                if (const action* a = row[at].get())
                    res = step(r, *a, ready_count);
                else if (lowered_ && !idle_ok_) // idle_in_lowered
                    res = step_result::invalid;
            }
            if (res == step_result::invalid) return outcome::invalid;
            if (res == step_result::lowered) return outcome::lowered;
            // Blocked: `blocked_[ri]` says on what; the slot runs again when woken.
            cursor_p_[ri] = res == step_result::blocked ? at - 1 : at;
            // The slots after it are needed only then, after many other ranks: start fetching
            // them now (large orders do not stay in cache).
            if (!std::is_constant_evaluated() && res == step_result::blocked && at + 7 < n) {
                __builtin_prefetch(row + at + 3);
                __builtin_prefetch(row + at + 7);
            }
        }
        for (int r = 0; r < R_; ++r)
            if (cursor_[static_cast<std::size_t>(r)] !=
                static_cast<int>(rows_[static_cast<std::size_t>(r)].size()))
                return outcome::invalid; // deadlock (or a wait on an action that is missing)
        return sweep() ? outcome::valid : outcome::invalid;
    }

    /// Runs action `a` on rank `r` if it can: checks, then records it and wakes the rank
    /// waiting for it.
    [[gnu::always_inline]] constexpr step_result step(int r, const action& a, int& ready_count) {
        const action_kind k = a.kind();
        std::size_t c = 0;
        if (k != action_kind::overlap_f_b) {
            const int s = a.stage();
            const step_result res = check(r, k, s, a.microbatch(), c);
            if (res == step_result::done) record(k, s, c, ready_count);
            return res;
        }
        // Both parts are checked against what ran before this slot, then both recorded: the
        // backward part cannot use the forward part of the same slot. The backward part first:
        // in the overlapped schedules its input is usually the later one to arrive, and a rank
        // that blocks on it has then mostly nothing else to wait for (one wake-up, not two).
        const action b = a.backward_part();
        std::size_t cb = 0;
        step_result res = check(r, b.kind(), b.stage(), b.microbatch(), cb);
        if (res == step_result::done)
            res = check(r, action_kind::forward, a.stage(), a.microbatch(), c);
        if (res != step_result::done) return res;
        record(action_kind::forward, a.stage(), c, ready_count);
        record(b.kind(), b.stage(), cb, ready_count);
        return step_result::done;
    }

    // (The checks below are written as few statements as they can be: each statement is a
    // step of constant evaluation, whose budget `static_assert(validate(...))` shares with
    // generating the order.)

    /// Whether action part (`k`, `s`, `mb`) can run on rank `r` now: `done` (with its cell in
    /// `c`) when it can, `blocked` (with `blocked_[r]` set) when it waits for another rank,
    /// `invalid` when some rule of `validate` rejects the order whatever happens next.
    [[gnu::always_inline]] constexpr step_result check(int r, action_kind k, int s, int mb,
                                                       std::size_t& c) {
        // Structure: stage_out_of_range, wrong_rank (every later check relies on the action
        // being on its stage's rank).
        if (s >= S_ || geo_p_[s].home != r) return step_result::invalid;
        const stage_geometry& g = geo_p_[s];
        const std::uint8_t st = stage_p_[s];
        if (kind_bit[static_cast<std::size_t>(k)] == 0) return check_stage_action(k, s, st);
        const int i = mb - g.mb_begin;
        // microbatch_out_of_range; compute on a stage FSDP manages runs between UNSHARD and
        // RESHARD (compute_while_sharded); no backward after REDUCE_GRAD (reduce_grad_early).
        if (i < 0 || i >= g.mb_count ||
            (k <= action_kind::full_backward && ((st & (st_managed | st_unsharded)) == st_managed ||
                                                 (k != action_kind::forward && (st & st_reduced)))))
            return step_result::invalid;
        c = cell(s, i);
        const cell_bit_t here = done_p_[c];
        // In the cell: a second copy is duplicate_action, B next to I mixed_backward (the end
        // sweep finds what is missing).
        switch (k) {
        case action_kind::forward:
            // After the previous stage's F (see `needs`).
            return (here & bit_f) ? step_result::invalid
                                  : needs(r, g.prev, g.prev_home, i, here, bit_f, bit_recv_f);
        case action_kind::backward_input:
        case action_kind::full_backward:
            // After the forward on this rank (backward_before_forward) and the next stage's B or
            // I. (A W here would mean an I here: a W is only recorded after its I.)
            return (here & bit_grad) || !(here & bit_f)
                       ? step_result::invalid
                       : needs(r, g.next, g.next_home, i, here, bit_grad, bit_recv_b);
        case action_kind::backward_weight:
            // After its I on this rank (weight_before_input; without an I: missing_backward or
            // mixed_backward).
            return (here & bit_i) && !(here & bit_w) ? step_result::done : step_result::invalid;
        case action_kind::send_f:
            // Lowered only; a peer on another rank (needless_p2p); after the forward
            // (send_before_compute).
            return !lowered_ ? step_result::lowered
                   : (g.p2p & bit_send_f) && !(here & bit_send_f) && (here & bit_f)
                       ? step_result::done
                       : step_result::invalid;
        case action_kind::send_b:
            return !lowered_ ? step_result::lowered
                   : (g.p2p & bit_send_b) && !(here & bit_send_b) && (here & bit_grad)
                       ? step_result::done
                       : step_result::invalid;
        case action_kind::recv_f:
            // Waits for the peer's SEND (the deadlock simulation).
            return !lowered_                                      ? step_result::lowered
                   : (g.p2p & bit_recv_f) && !(here & bit_recv_f) ? awaits(r, g.prev, i, bit_send_f)
                                                                  : step_result::invalid;
        case action_kind::recv_b:
            return !lowered_                                      ? step_result::lowered
                   : (g.p2p & bit_recv_b) && !(here & bit_recv_b) ? awaits(r, g.next, i, bit_send_b)
                                                                  : step_result::invalid;
        default:
            return step_result::invalid;
        }
    }

    /// A compute part on rank `r` that needs what stage `peer` (on `peer_home`; -1: none)
    /// produced for the same microbatch (index `i`): on the same rank earlier in the row
    /// (dependency_order; missing_* when it never comes), on another rank waited for when
    /// compute-only (the deadlock simulation), or the RECV `recv` earlier on this rank when
    /// lowered (missing_recv). `here`: the part's own cell.
    [[gnu::always_inline]] constexpr step_result needs(int r, int peer, int peer_home, int i,
                                                       cell_bit_t here, cell_bit_t from_peer,
                                                       cell_bit_t recv) {
        if (peer < 0) return step_result::done;
        if (lowered_ && peer_home != r)
            return (here & recv) ? step_result::done : step_result::invalid;
        return peer_home == r ? ((done_p_[cell(peer, i)] & from_peer) ? step_result::done
                                                                      : step_result::invalid)
                              : awaits(r, peer, i, from_peer);
    }

    /// Done when stage `peer`'s cell for microbatch index `i` has one of `bits`; else rank `r`
    /// blocks on it.
    [[gnu::always_inline]] constexpr step_result awaits(int r, int peer, int i, cell_bit_t bits) {
        const std::size_t p = cell(peer, i);
        if (done_p_[p] & bits) return step_result::done;
        blocked_p_[r] = wait_key(p, bits);
        return step_result::blocked;
    }

    /// The cell of a stage's `i`-th microbatch. Microbatch-major: a rank's action and the
    /// neighbour's it needs share a cache line, and the ranks of a pipeline, each at its own
    /// microbatch, touch a few pages rather than a page per stage.
    [[nodiscard]] constexpr std::size_t cell(int stage, int i) const noexcept {
        return static_cast<std::size_t>(i) * static_cast<std::size_t>(S_) +
               static_cast<std::size_t>(stage);
    }

    /// UNSHARD / RESHARD / REDUCE_GRAD (`st`: the stage's state).
    constexpr step_result check_stage_action(action_kind k, int s, std::uint8_t st) const {
        if (k == action_kind::reduce_grad) // a second one: duplicate_action
            return (st & st_reduced) ? step_result::invalid : step_result::done;
        // shard_mismatch (and OVERLAP_F_B nested in an overlap, which cannot be built).
        // A RESHARD of an UNSHARD no compute used: unused_unshard.
        if ((k != action_kind::unshard && k != action_kind::reshard) ||
            ((st & st_unsharded) != 0) == (k == action_kind::unshard) ||
            (k == action_kind::reshard && (st & st_pending)))
            return step_result::invalid;
        // The first UNSHARD/RESHARD of a stage: the stage was sharded all along, so any compute
        // it ran before was compute_while_sharded. (Once per stage: linear overall.)
        if (!(st & st_managed))
            for (int i = 0; i < M_; ++i)
                if (done_p_[cell(s, i)] & bit_compute) return step_result::invalid;
        return step_result::done;
    }

    /// What a blocked rank waits for: a cell and the bits of which one must be set.
    [[nodiscard]] static constexpr long long wait_key(std::size_t cell, cell_bit_t bits) {
        return static_cast<long long>(cell) * 256 + bits;
    }

    /// Records that an action part of kind `k` and stage `s` (checked; `c`: its cell) has run,
    /// and wakes the one rank that can wait for it: its consumer's (every action is on its own
    /// rank here).
    [[gnu::always_inline]] constexpr void record(action_kind k, int s, std::size_t c,
                                                 int& ready_count) {
        const cell_bit_t bit = kind_bit[static_cast<std::size_t>(k)];
        if (bit == 0) {
            std::uint8_t& st = stage_p_[s];
            st = static_cast<std::uint8_t>(
                k == action_kind::unshard   ? st | st_unsharded | st_managed | st_pending
                : k == action_kind::reshard ? (st & ~st_unsharded) | st_managed
                                            : st | st_reduced);
            return;
        }
        // A compute uses its stage's pending UNSHARD.
        if (k <= action_kind::full_backward)
            stage_p_[s] = static_cast<std::uint8_t>(stage_p_[s] & ~st_pending);
        done_p_[c] = static_cast<cell_bit_t>(done_p_[c] | bit);
        // Who waits for it: compute-only, F's and B/I's consumers; lowered, the SENDs' peers.
        const int waiter = (lowered_ && k <= action_kind::full_backward) ||
                                   k == action_kind::backward_weight || is_recv(k)
                               ? -1
                           : k == action_kind::forward || k == action_kind::send_f
                               ? geo_p_[s].next_home
                               : geo_p_[s].prev_home;
        // (A consumer of B or I waits for either.)
        if (waiter < 0 || blocked_p_[waiter] != wait_key(c, k == action_kind::backward_input ||
                                                                    k == action_kind::full_backward
                                                                ? cell_bit_t{bit_grad}
                                                                : bit))
            return;
        blocked_p_[waiter] = -1;
        ready_p_[ready_count++] = waiter;
        // Its row was left many ranks ago: fetch the slots it runs next while this rank goes
        // on.
        if (!std::is_constant_evaluated()) {
            const std::span<const slot> row = rows_[static_cast<std::size_t>(waiter)];
            const auto at = static_cast<std::size_t>(cursor_p_[waiter]);
            __builtin_prefetch(row.data() + at);
            if (at + 4 < row.size()) __builtin_prefetch(row.data() + at + 4);
        }
    }

    /// Presence, once every rank has run its row: each (stage, microbatch) has F and either B
    /// or I and W (missing_forward, missing_backward, missing_weight), and in a lowered order
    /// exactly the SEND/RECV its neighbours' ranks need (missing_recv, unmatched_send,
    /// unmatched_recv); with the checks during the run, no cell holds anything else. Per
    /// stage: no UNSHARD pending, REDUCE_GRAD on all or none.
    [[nodiscard]] constexpr bool sweep() const {
        // No UNSHARD left unused (unused_unshard); REDUCE_GRAD on every stage or none
        // (missing_reduce_grad).
        bool any_reduced = false, all_reduced = true;
        for (int s = 0; s < S_; ++s) {
            if (stage_p_[s] & st_pending) return false;
            any_reduced = any_reduced || (stage_p_[s] & st_reduced);
            all_reduced = all_reduced && (stage_p_[s] & st_reduced);
        }
        if (any_reduced && !all_reduced) return false;
        // (One statement per cell: each statement is a step of constant evaluation.)
        const cell_bit_t* bits = done_p_;
        for (int i = 0; i < M_; ++i)
            for (int s = 0; s < S_; ++s, ++bits)
                if (i < geo_p_[s].mb_count &&
                    (((*bits & bit_compute) != (bit_f | bit_b) &&
                      (*bits & bit_compute) != (bit_f | bit_i | bit_w)) ||
                     (*bits & ~bit_compute) != (lowered_ ? geo_p_[s].p2p : 0)))
                    return false;
        return true;
    }

    config cfg_;
    std::span<const std::span<const slot>> rows_;
    int S_ = 0, R_ = 0, M_ = 0; // M_: the most microbatches a stage runs
    bool lowered_ = false;      // this run treats the order as lowered
    bool idle_ok_ = true;       // a lowered order may hold empty slots
    dense_array<stage_geometry> geo_;
    dense_array<cell_bit_t> done_;    // per (stage, microbatch index): the bits of what has run
    dense_array<std::uint8_t> stage_; // per stage: st_* flags
    dense_array<int> cursor_;         // per rank: its next slot
    dense_array<long long> blocked_;  // per rank: the wait key it is blocked on, or -1
    dense_array<int> ready_;          // the ranks that can run (a stack)
    // Their elements (see `reset`).
    const stage_geometry* geo_p_ = nullptr;
    cell_bit_t* done_p_ = nullptr;
    std::uint8_t* stage_p_ = nullptr;
    int* cursor_p_ = nullptr;
    long long* blocked_p_ = nullptr;
    int* ready_p_ = nullptr;
};

} // namespace validity

using validity::validity_run;

} // namespace ppsched::detail
