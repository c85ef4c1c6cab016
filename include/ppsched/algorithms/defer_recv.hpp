#pragma once
/// \file algorithms/defer_recv.hpp
/// `defer_recv(lowered)`: moves each `RECV` of a lowered order to just before the compute that
/// consumes its data (PyTorch PR 178815's `overlap_pp_comm=False`: a posted receive can hold
/// back unrelated compute on some fabrics). Under `transport::eager` only the RECVs move, which
/// can hang under `rendezvous` (PyTorch issue 172668). Asked for `transport::rendezvous`, each
/// SEND moves with its RECV, so the result is deadlock-free under both transports.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/algorithms/simulate.hpp"
#include "ppsched/algorithms/validate.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/transport.hpp"

namespace ppsched {
namespace detail {

/// The state of `defer_recv`: the input copied without idle slots, and one table entry per
/// message (RECV_F or RECV_B of a (stage, microbatch)).
class recv_deferral {
  public:
    constexpr recv_deferral(const config& cfg, transport sends)
        : cfg_(cfg), S_(static_cast<std::size_t>(cfg.num_stages())),
          M_(static_cast<std::size_t>(cfg.microbatches)), paired_(sends == transport::rendezvous),
          received_(2 * S_ * M_, 0) {}

    template <order_range R>
    constexpr order run(const R& rows) {
        for (const auto& row : rows) {
            std::vector<action> acts;
            for (const auto& s : row)
                if (const action* a = slot_action(s)) acts.push_back(*a);
            rows_.push_back(std::move(acts));
        }
        if (paired_) return project_timed();
        sequence();
        return project();
    }

  private:
    // Message key of the RECV that a SEND, a RECV or a consuming compute part refers to:
    // (0: RECV_F, 1: RECV_B; receiving stage; microbatch); npos when there is none.
    static constexpr std::size_t npos = static_cast<std::size_t>(-1);
    [[nodiscard]] constexpr std::size_t key(int plane, int stage, int mb) const noexcept {
        if (stage < 0 || mb < 0) return npos;
        return (static_cast<std::size_t>(plane) * S_ + static_cast<std::size_t>(stage)) * M_ +
               static_cast<std::size_t>(mb);
    }
    [[nodiscard]] constexpr std::size_t message_of(const action& a) const noexcept {
        switch (a.kind()) {
        case action_kind::send_f:
            return key(0, cfg_.next_stage(a.stage()), a.microbatch());
        case action_kind::send_b:
            return key(1, cfg_.previous_stage(a.stage()), a.microbatch());
        case action_kind::recv_f:
            return key(0, a.stage(), a.microbatch());
        case action_kind::recv_b:
            return key(1, a.stage(), a.microbatch());
        default:
            return npos;
        }
    }
    /// The message a compute part consumes (its input from another stage), or npos.
    [[nodiscard]] constexpr std::size_t consumed_by(const action& p) const noexcept {
        if (p.kind() == action_kind::forward) return key(0, p.stage(), p.microbatch());
        if (p.kind() == action_kind::full_backward || p.kind() == action_kind::backward_input)
            return key(1, p.stage(), p.microbatch());
        return npos;
    }

    /// One eager run of the order, recorded as a global sequence (rank, index) that keeps
    /// every rank's order and puts each RECV after its SEND. Linear in the actions.
    constexpr void sequence() {
        const std::size_t R = rows_.size();
        std::vector<std::size_t> cursor(R, 0);
        std::vector<std::uint8_t> sent(2 * S_ * M_, 0);
        std::vector<int> waiter(2 * S_ * M_, -1);
        std::vector<int> ready;
        for (std::size_t r = R; r-- > 0;) ready.push_back(static_cast<int>(r));
        while (!ready.empty()) {
            const auto r = static_cast<std::size_t>(ready.back());
            ready.pop_back();
            const std::vector<action>& row = rows_[r];
            for (; cursor[r] < row.size(); ++cursor[r]) {
                const action& a = row[cursor[r]];
                const std::size_t k = message_of(a);
                if (is_recv(a.kind()) && !sent[k]) {
                    waiter[k] = static_cast<int>(r);
                    break;
                }
                sequence_.push_back({r, cursor[r]});
                if (is_send(a.kind())) {
                    sent[k] = 1;
                    if (waiter[k] >= 0) ready.push_back(waiter[k]);
                    waiter[k] = -1;
                }
            }
        }
        for (std::size_t r = 0; r < R; ++r)
            PPSCHED_EXPECTS(cursor[r] == rows_[r].size(), "ppsched::defer_recv: rank ", r,
                            " waits forever at ", to_string(rows_[r][cursor[r]]),
                            " (the order must be valid under eager transport)");
    }

    /// Paired: the global sequence by simulated time (unit costs, eager; every compute takes
    /// > 0), each SEND+RECV pair placed just before its consumer's start, ahead of whatever
    /// else starts then, so the SEND goes right after its producer when the consumer is
    /// waiting for it and no later than the sender's first action that starts after the
    /// consumer does. Keys are each rank's running maximum of compute start times (other
    /// streams may start out of order), ties by (pair first, rank, position): every rank keeps
    /// its order, and each producer (key: its start < its end <= the consumer's start) comes
    /// before its pair, which comes before the consumer. That sequence is a witness that no
    /// rank waits forever under either transport. O(actions log actions).
    constexpr order project_timed() {
        const simulation sim = simulate(rows_, cfg_);
        PPSCHED_EXPECTS(sim.status == simulation_status::ok,
                        "ppsched::defer_recv: the order cannot be simulated");
        struct keyed {
            double key;
            int pair; // 0: a SEND+RECV pair (consumed by the item at rank, index), 1: an item
            std::size_t rank, index;
            std::size_t message;
        };
        for (const auto& row : rows_)
            for (const action& a : row)
                if (is_recv(a.kind())) has_recv(message_of(a)) = 1;
        std::vector<keyed> items;
        items.reserve(sim.timeline.size());
        std::vector<double> running(rows_.size(), 0);
        for (const timed_action& t : sim.timeline) {
            const auto r = static_cast<std::size_t>(t.rank);
            if (t.on == stream::compute && t.start > running[r]) running[r] = t.start;
            const auto i = static_cast<std::size_t>(t.slot);
            items.push_back({running[r], 1, r, i, npos});
            std::array<action, 2> parts;
            const int n = t.act.parts(parts);
            for (int p = 0; p < n; ++p) {
                const std::size_t k = consumed_by(parts[static_cast<std::size_t>(p)]);
                if (k == npos || k >= received_.size() || !has_recv(k)) continue;
                has_recv(k) = 0;
                items.push_back({running[r], 0, r, i, k});
            }
        }
        std::sort(items.begin(), items.end(), [](const keyed& x, const keyed& y) {
            if (x.key != y.key) return x.key < y.key;
            if (x.pair != y.pair) return x.pair < y.pair;
            if (x.rank != y.rank) return x.rank < y.rank;
            if (x.index != y.index) return x.index < y.index;
            return x.message < y.message;
        });
        std::vector<rank_slots> out(rows_.size());
        for (const keyed& k : items) {
            if (k.pair == 0) {
                const action recv = recv_action(k.message);
                const action send = send_for(recv);
                out[static_cast<std::size_t>(cfg_.stage_to_rank(send.stage()))].push_back(send);
                out[k.rank].push_back(recv);
                continue;
            }
            const action& a = rows_[k.rank][k.index];
            if (!is_p2p(a.kind())) out[k.rank].push_back(a);
        }
        return order(cfg_, std::move(out));
    }

    /// The SEND that feeds `recv`.
    [[nodiscard]] constexpr action send_for(const action& recv) const noexcept {
        return recv.kind() == action_kind::recv_f
                   ? action::send_f(cfg_.previous_stage(recv.stage()), recv.microbatch())
                   : action::send_b(cfg_.next_stage(recv.stage()), recv.microbatch());
    }

    /// Eager: every rank's row again, each RECV moved to just before its consumer (SENDs and
    /// everything else stay). Linear.
    constexpr order project() {
        std::vector<rank_slots> out(rows_.size());
        for (const auto& [r, i] : sequence_) {
            const action& a = rows_[r][i];
            if (is_recv(a.kind())) {
                // Marks the message as received on this rank; emitted at its consumer.
                recv_seen_.push_back(message_of(a));
                has_recv(message_of(a)) = 1;
                continue;
            }
            std::array<action, 2> parts;
            const int n = a.parts(parts);
            for (int p = 0; p < n; ++p) {
                const std::size_t k = consumed_by(parts[static_cast<std::size_t>(p)]);
                if (k == npos || k >= received_.size() || !has_recv(k)) continue;
                has_recv(k) = 0;
                out[r].push_back(recv_action(k));
            }
            out[r].push_back(a);
        }
        // A RECV with no consumer stays, at the end of its row.
        for (std::size_t k : recv_seen_)
            if (has_recv(k)) {
                has_recv(k) = 0;
                out[static_cast<std::size_t>(cfg_.stage_to_rank(stage_of(k)))].push_back(
                    recv_action(k));
            }
        return order(cfg_, std::move(out));
    }

    constexpr std::uint8_t& has_recv(std::size_t k) { return received_[k]; }
    [[nodiscard]] constexpr int stage_of(std::size_t k) const noexcept {
        return static_cast<int>((k / M_) % S_);
    }
    [[nodiscard]] constexpr action recv_action(std::size_t k) const noexcept {
        const int mb = static_cast<int>(k % M_);
        return k / (S_ * M_) == 0 ? action::recv_f(stage_of(k), mb)
                                  : action::recv_b(stage_of(k), mb);
    }

    struct position {
        std::size_t rank, index;
    };
    config cfg_;
    std::size_t S_, M_;
    bool paired_;
    std::vector<std::vector<action>> rows_;
    std::vector<position> sequence_;
    std::vector<std::uint8_t> received_;
    std::vector<std::size_t> recv_seen_;
};

} // namespace detail

/// Moves each RECV of a lowered order to just before the first compute on its rank that
/// consumes its data (a forward for `RECV_F`, an `I` or `B` for `RECV_B`, or an
/// `OVERLAP_F_B` holding one). With `sends == transport::eager` nothing else moves: fewer
/// receives are posted early, but a SEND can now wait on a RECV its peer has not reached, so
/// the result may hang under `rendezvous`. With `transport::rendezvous` each SEND moves with
/// its RECV (to where the receiver consumes the data), so the result is deadlock-free under
/// both transports for every input that is valid under `eager`. Idle slots are dropped.
/// Requires: `rows` valid under eager transport (`validate`); throws `config_error` otherwise.
/// Complexity: O(actions + stages * microbatches); with `rendezvous`, O(actions log actions)
/// more (the SENDs are placed by a simulated timeline).
template <order_range R>
[[nodiscard]] constexpr order defer_recv(const R& rows, const config& cfg,
                                         transport sends = transport::eager) {
    const validation_report report = validate(rows, cfg);
    PPSCHED_EXPECTS(report.valid(), "ppsched::defer_recv: the order must be valid (", report.size(),
                    " violations)");
    return detail::recv_deferral(cfg, sends).run(rows);
}

/// `defer_recv(o, o.cfg(), sends)`.
[[nodiscard]] constexpr order defer_recv(const order& o, transport sends = transport::eager) {
    return defer_recv(o, o.cfg(), sends);
}

} // namespace ppsched
