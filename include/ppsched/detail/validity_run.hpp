#pragma once
/// \file detail/validity_run.hpp
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
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/detail/dense_array.hpp"
#include "ppsched/order.hpp"

namespace ppsched::detail {

/// One lock-step run of an order (see the file comment). Requires: a well-formed `cfg` and one
/// row per rank (the caller checks both).
class validity_run {
  public:
    constexpr validity_run(const config& cfg, std::span<const std::span<const slot>> rows)
        : cfg_(cfg), rows_(rows) {}

    /// True when the order is valid; false when it is not, or in the rare orders this run
    /// does not decide (then the full passes decide).
    [[nodiscard]] constexpr bool valid() {
        if (!setup()) return false;
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

    // One bit per action plane in a (stage, microbatch) cell: what has run.
    enum : std::uint8_t {
        bit_f = 1,
        bit_i = 2,
        bit_w = 4,
        bit_b = 8,
        bit_send_f = 16,
        bit_recv_f = 32,
        bit_send_b = 64,
        bit_recv_b = 128,
        bit_grad = bit_b | bit_i, // the input gradient: B, or I when split
    };
    // Per-stage sharding and gradient-reduction state.
    enum : std::uint8_t {
        st_unsharded = 1, // between UNSHARD and RESHARD
        st_managed = 2,   // the stage has had an UNSHARD or RESHARD (FSDP manages it)
        st_early = 4,     // it computed before its first UNSHARD/RESHARD
        st_reduced = 8,   // REDUCE_GRAD has run
    };
    // What a blocked rank waits for, with the producing cell: key = cell * 4 + what.
    enum : int { wait_f = 0, wait_grad = 1, wait_send_f = 2, wait_send_b = 3 };

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
        reset();
        return true;
    }

    constexpr void reset() {
        done_ =
            dense_array<std::uint8_t>(static_cast<std::size_t>(S_) * static_cast<std::size_t>(M_));
        stage_ = dense_array<std::uint8_t>(static_cast<std::size_t>(S_));
        cursor_ = dense_array<int>(static_cast<std::size_t>(R_));
        blocked_ = dense_array<long long>(static_cast<std::size_t>(R_), -1);
    }

    [[nodiscard]] constexpr std::size_t cell(const stage_geometry& g, int stage,
                                             int mb) const noexcept {
        return static_cast<std::size_t>(stage) * static_cast<std::size_t>(M_) +
               static_cast<std::size_t>(mb - g.mb_begin);
    }

    constexpr outcome run(bool lowered) {
        lowered_ = lowered;
        std::vector<int> ready;
        ready.reserve(static_cast<std::size_t>(R_));
        for (int r = R_ - 1; r >= 0; --r) ready.push_back(r);
        while (!ready.empty()) {
            const int r = ready.back();
            ready.pop_back();
            const auto ri = static_cast<std::size_t>(r);
            const slot* row = rows_[ri].data();
            const int n = static_cast<int>(rows_[ri].size());
            int at = cursor_[ri];
            for (; at < n; ++at) {
                const action* a = row[at].get();
                if (!a) continue;
                const step_result res = step(r, *a, ready);
                if (res == step_result::done) continue;
                if (res == step_result::invalid) return outcome::invalid;
                if (res == step_result::lowered) return outcome::lowered;
                break; // blocked: `blocked_[ri]` says on what
            }
            cursor_[ri] = at;
        }
        for (int r = 0; r < R_; ++r)
            if (cursor_[static_cast<std::size_t>(r)] !=
                static_cast<int>(rows_[static_cast<std::size_t>(r)].size()))
                return outcome::invalid; // deadlock (or a wait on an action that is missing)
        return sweep() ? outcome::valid : outcome::invalid;
    }

    /// Runs action `a` on rank `r` if it can: checks, then records it and wakes the rank
    /// waiting for it.
    constexpr step_result step(int r, const action& a, std::vector<int>& ready) {
        if (a.is_overlap()) {
            // Both parts are checked against what ran before this slot, then both recorded:
            // the backward part cannot use the forward part of the same slot.
            const action f = a.forward_part(), b = a.backward_part();
            step_result res = check(r, f);
            if (res == step_result::done) res = check(r, b);
            if (res != step_result::done) return res;
            record(f, ready);
            record(b, ready);
            return step_result::done;
        }
        const step_result res = check(r, a);
        if (res == step_result::done) record(a, ready);
        return res;
    }

    /// Whether action part `a` can run on rank `r` now: `done` when it can, `blocked` (with
    /// `blocked_[r]` set) when it waits for another rank, `invalid` when some rule of
    /// `validate` rejects the order whatever happens next.
    constexpr step_result check(int r, const action& a) {
        const action_kind k = a.kind();
        const int s = a.stage();
        // Structure: stage_out_of_range, wrong_rank (every later check relies on the action
        // being on its stage's rank), microbatch_out_of_range.
        if (s >= S_) return step_result::invalid;
        const stage_geometry& g = geo_[static_cast<std::size_t>(s)];
        if (g.home != r) return step_result::invalid;
        const std::uint8_t st = stage_[static_cast<std::size_t>(s)];
        if (k == action_kind::unshard || k == action_kind::reshard) {
            // shard_mismatch; and a stage that computed before its first UNSHARD/RESHARD
            // computed while sharded (compute_while_sharded).
            const bool unsharded = (st & st_unsharded) != 0;
            if ((st & st_early) || unsharded == (k == action_kind::unshard))
                return step_result::invalid;
            return step_result::done;
        }
        if (k == action_kind::reduce_grad) // a second one: duplicate_action
            return (st & st_reduced) ? step_result::invalid : step_result::done;
        if (!lowered_ && is_p2p(k)) return step_result::lowered;
        const int mb = a.microbatch();
        if (mb < g.mb_begin || mb - g.mb_begin >= g.mb_count) return step_result::invalid;
        const std::size_t c = cell(g, s, mb);
        const std::uint8_t here = done_[c];
        // Compute on a stage FSDP manages must run between UNSHARD and RESHARD
        // (compute_while_sharded); a backward after REDUCE_GRAD is reduce_grad_early.
        if (is_compute(k) && (st & (st_managed | st_unsharded)) == st_managed)
            return step_result::invalid;
        if ((st & st_reduced) && is_backward(k)) return step_result::invalid;
        // Presence: a second copy is duplicate_action (the end sweep finds the missing ones).
        switch (k) {
        case action_kind::forward: {
            if (here & bit_f) return step_result::invalid;
            if (g.prev < 0) return step_result::done;
            const std::size_t p = cell(g, g.prev, mb);
            // Same rank: the previous stage's F earlier in the row (dependency_order, or
            // missing_forward when it never comes).
            if (g.prev_home == r)
                return (done_[p] & bit_f) ? step_result::done : step_result::invalid;
            // Lowered: its RECV_F earlier in the row (missing_recv).
            if (lowered_) return (here & bit_recv_f) ? step_result::done : step_result::invalid;
            // Compute-only: wait for the other rank (the deadlock simulation).
            if (done_[p] & bit_f) return step_result::done;
            return wait(r, p, wait_f);
        }
        case action_kind::full_backward:
        case action_kind::backward_input: {
            // One backward per cell (a second, or B next to I: duplicate_action or
            // mixed_backward); the forward earlier in the row (backward_before_forward).
            // (A W here would mean an I here: a W is only recorded after its I.)
            if ((here & bit_grad) || !(here & bit_f)) return step_result::invalid;
            if (g.next < 0) return step_result::done;
            const std::size_t p = cell(g, g.next, mb);
            if (g.next_home == r)
                return (done_[p] & bit_grad) ? step_result::done : step_result::invalid;
            if (lowered_) return (here & bit_recv_b) ? step_result::done : step_result::invalid;
            if (done_[p] & bit_grad) return step_result::done;
            return wait(r, p, wait_grad);
        }
        case action_kind::backward_weight:
            // After its I on the rank (weight_before_input; without I: missing_backward or
            // mixed_backward); at most once.
            return (here & bit_i) && !(here & bit_w) ? step_result::done : step_result::invalid;
        case action_kind::send_f:
            // A peer on another rank (needless_p2p), once, after the forward
            // (send_before_compute).
            return (g.p2p & bit_send_f) && !(here & bit_send_f) && (here & bit_f)
                       ? step_result::done
                       : step_result::invalid;
        case action_kind::send_b:
            return (g.p2p & bit_send_b) && !(here & bit_send_b) && (here & bit_grad)
                       ? step_result::done
                       : step_result::invalid;
        case action_kind::recv_f: {
            if (!(g.p2p & bit_recv_f) || (here & bit_recv_f)) return step_result::invalid;
            // Receives block until the peer's send has run (the deadlock simulation).
            const std::size_t p = cell(g, g.prev, mb);
            if (done_[p] & bit_send_f) return step_result::done;
            return wait(r, p, wait_send_f);
        }
        case action_kind::recv_b: {
            if (!(g.p2p & bit_recv_b) || (here & bit_recv_b)) return step_result::invalid;
            const std::size_t p = cell(g, g.next, mb);
            if (done_[p] & bit_send_b) return step_result::done;
            return wait(r, p, wait_send_b);
        }
        default:
            return step_result::invalid;
        }
    }

    constexpr step_result wait(int r, std::size_t producer, int what) {
        blocked_[static_cast<std::size_t>(r)] = static_cast<long long>(producer) * 4 + what;
        return step_result::blocked;
    }

    /// Records that action part `a` (checked) has run, and wakes the one rank that can wait
    /// for it: its consumer's (every action is on its own rank here).
    constexpr void record(const action& a, std::vector<int>& ready) {
        const action_kind k = a.kind();
        const int s = a.stage();
        const stage_geometry& g = geo_[static_cast<std::size_t>(s)];
        std::uint8_t& st = stage_[static_cast<std::size_t>(s)];
        switch (k) {
        case action_kind::unshard:
            st = static_cast<std::uint8_t>(st | st_unsharded | st_managed);
            return;
        case action_kind::reshard:
            st = static_cast<std::uint8_t>((st & ~st_unsharded) | st_managed);
            return;
        case action_kind::reduce_grad:
            st = static_cast<std::uint8_t>(st | st_reduced);
            return;
        default:
            break;
        }
        if (is_compute(k) && !(st & (st_unsharded | st_early)))
            st = static_cast<std::uint8_t>(st | st_early);
        const std::size_t c = cell(g, s, a.microbatch());
        int waiter = -1, what = 0;
        std::uint8_t bit = 0;
        switch (k) {
        case action_kind::forward:
            bit = bit_f;
            if (!lowered_) waiter = g.next_home, what = wait_f;
            break;
        case action_kind::backward_input:
            bit = bit_i;
            if (!lowered_) waiter = g.prev_home, what = wait_grad;
            break;
        case action_kind::full_backward:
            bit = bit_b;
            if (!lowered_) waiter = g.prev_home, what = wait_grad;
            break;
        case action_kind::backward_weight:
            bit = bit_w;
            break;
        case action_kind::send_f:
            bit = bit_send_f;
            waiter = g.next_home, what = wait_send_f;
            break;
        case action_kind::recv_f:
            bit = bit_recv_f;
            break;
        case action_kind::send_b:
            bit = bit_send_b;
            waiter = g.prev_home, what = wait_send_b;
            break;
        case action_kind::recv_b:
            bit = bit_recv_b;
            break;
        default:
            break;
        }
        done_[c] = static_cast<std::uint8_t>(done_[c] | bit);
        if (waiter >= 0 &&
            blocked_[static_cast<std::size_t>(waiter)] == static_cast<long long>(c) * 4 + what) {
            blocked_[static_cast<std::size_t>(waiter)] = -1;
            ready.push_back(waiter);
        }
    }

    /// Presence, once every rank has run its row: each (stage, microbatch) has F and either B
    /// or I and W (missing_forward, missing_backward, missing_weight), and in a lowered order
    /// exactly the SEND/RECV its neighbours' ranks need (missing_recv, unmatched_send,
    /// unmatched_recv); with the checks during the run, no cell holds anything else.
    [[nodiscard]] constexpr bool sweep() const {
        for (int s = 0; s < S_; ++s) {
            const stage_geometry& g = geo_[static_cast<std::size_t>(s)];
            const std::uint8_t p2p = lowered_ ? g.p2p : 0;
            const std::uint8_t* here = done_.begin() + cell(g, s, g.mb_begin);
            for (int i = 0; i < g.mb_count; ++i) {
                const std::uint8_t bits = here[i];
                const auto compute = static_cast<std::uint8_t>(bits & 15);
                if ((compute != (bit_f | bit_b) && compute != (bit_f | bit_i | bit_w)) ||
                    (bits & 0xf0) != p2p)
                    return false;
            }
        }
        return true;
    }

    config cfg_;
    std::span<const std::span<const slot>> rows_;
    int S_ = 0, R_ = 0, M_ = 0; // M_: the most microbatches a stage runs
    bool lowered_ = false;      // this run treats the order as lowered
    dense_array<stage_geometry> geo_;
    dense_array<std::uint8_t> done_;  // per (stage, microbatch): the bits of what has run
    dense_array<std::uint8_t> stage_; // per stage: st_* flags
    dense_array<int> cursor_;         // per rank: its next slot
    dense_array<long long> blocked_;  // per rank: the wait key it is blocked on, or -1
};

} // namespace ppsched::detail
