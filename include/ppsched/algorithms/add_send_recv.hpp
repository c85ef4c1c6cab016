#pragma once
/// \file algorithms/add_send_recv.hpp
/// `add_send_recv(order)`: inserts `SEND_F`/`RECV_F`/`SEND_B`/`RECV_B` between the ranks, with
/// exactly the result of PyTorch's `_add_send_recv`, in O(actions log ranks) instead of
/// PyTorch's quadratic time.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/detail/lowering.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {
namespace detail {

/// The state of PyTorch's send/receive pass, keyed densely by (stage, microbatch).
///
/// PyTorch's pass runs rounds: in each round it visits the ranks in ascending order and places
/// the next input item of every rank whose item is ready (its input has arrived); placing a
/// compute action that feeds another rank appends a SEND to this rank and the matching RECV to
/// the end of the peer's output at once. An idle slot, or any non-compute item, takes a round.
///
/// The result depends only on the order in which items get placed, so instead of revisiting
/// every rank in every round we revisit only ranks whose state changed: a rank that placed an
/// item (its next item may be ready next round) and a rank that was just sent a RECV (its
/// blocked item may now be ready: later in this round if its rank is higher than the sender's,
/// next round otherwise, as in PyTorch's ascending sweep). A rank visited without change would
/// stay blocked, so skipping it changes nothing.
class send_recv_pass {
  public:
    constexpr explicit send_recv_pass(const order& in) : in_(in), cfg_(in.cfg()) {
        check(cfg_);
        const int ranks = cfg_.ranks;
        stages_ = cfg_.num_stages();
        microbatches_ = cfg_.microbatches;
        stage_rank_.assign(static_cast<std::size_t>(stages_), -1);
        // Forward and input-backward parts per stage, and actions per rank: each placed part
        // sends at most once, so the output rows can be reserved at their final size.
        std::vector<std::size_t> forwards(static_cast<std::size_t>(stages_), 0);
        std::vector<std::size_t> backwards(static_cast<std::size_t>(stages_), 0);
        out_size_.assign(static_cast<std::size_t>(ranks), 0);
        // PyTorch takes each stage's rank from the order itself; a stage the order never
        // mentions falls back to the configured placement.
        for (int r = 0; r < ranks; ++r) {
            for (const slot& s : in_.rank(r)) {
                if (!s) continue;
                ++out_size_[static_cast<std::size_t>(r)];
                PPSCHED_EXPECTS(!is_p2p(s->kind()), "ppsched::add_send_recv: rank ", r,
                                " already has ", code(s->kind()),
                                " actions (the order is lowered already)");
                for_each_part(*s, [&](const action& p) {
                    PPSCHED_EXPECTS(p.stage() < stages_, "ppsched::add_send_recv: stage ",
                                    p.stage(), " on rank ", r, " is out of range (", stages_,
                                    " stages)");
                    if (p.microbatch() >= microbatches_) microbatches_ = p.microbatch() + 1;
                    const auto st = static_cast<std::size_t>(p.stage());
                    if (p.kind() == action_kind::forward) ++forwards[st];
                    if (p.kind() == action_kind::backward_input ||
                        p.kind() == action_kind::full_backward)
                        ++backwards[st];
                    int& owner = stage_rank_[static_cast<std::size_t>(p.stage())];
                    PPSCHED_EXPECTS(owner == -1 || owner == r, "ppsched::add_send_recv: stage ",
                                    p.stage(), " appears on rank ", owner, " and on rank ", r);
                    owner = r;
                });
            }
        }
        for (int s = 0; s < stages_; ++s)
            if (stage_rank_[static_cast<std::size_t>(s)] == -1)
                stage_rank_[static_cast<std::size_t>(s)] = cfg_.stage_to_rank(s);
        for (int s = 0; s < stages_; ++s) {
            const auto st = static_cast<std::size_t>(s);
            const int r = rank_of(s), next = cfg_.next_stage(s), prev = cfg_.previous_stage(s);
            if (next >= 0 && rank_of(next) != r) { // a SEND_F here, a RECV_F there
                out_size_[static_cast<std::size_t>(r)] += forwards[st];
                out_size_[static_cast<std::size_t>(rank_of(next))] += forwards[st];
            }
            if (prev >= 0 && rank_of(prev) != r) { // a SEND_B here, a RECV_B there
                out_size_[static_cast<std::size_t>(r)] += backwards[st];
                out_size_[static_cast<std::size_t>(rank_of(prev))] += backwards[st];
            }
        }
        flags_.assign(static_cast<std::size_t>(stages_) * static_cast<std::size_t>(microbatches_),
                      0);
    }

    constexpr order run() {
        const auto ranks = static_cast<std::size_t>(cfg_.ranks);
        out_.assign(ranks, rank_slots{});
        pos_.assign(ranks, 0);
        in_current_.assign(ranks, 0);
        in_next_.assign(ranks, 0);
        // Rows are sized once and written by index (`put`): an action built here is stored
        // where it is built, instead of going through an out-of-line push_back that reloads it
        // from the stack (a store-forwarding stall per SEND/RECV).
        filled_.assign(ranks, 0);
        for (std::size_t r = 0; r < ranks; ++r) {
            out_[r].resize(out_size_[r]);
            if (!in_[r].empty()) schedule_next(static_cast<int>(r));
        }
        while (!next_.empty()) {
            // Start a round with the ranks that may move, lowest rank first.
            current_.swap(next_);
            next_.clear();
            for (const int r : current_) {
                in_next_[static_cast<std::size_t>(r)] = 0;
                in_current_[static_cast<std::size_t>(r)] = 1;
            }
            std::make_heap(current_.begin(), current_.end(), std::greater<>{});
            while (!current_.empty()) {
                std::pop_heap(current_.begin(), current_.end(), std::greater<>{});
                const int r = current_.back();
                current_.pop_back();
                in_current_[static_cast<std::size_t>(r)] = 0;
                visit(r);
            }
        }
        for (std::size_t r = 0; r < ranks; ++r) {
            if (pos_[r] == in_[r].size()) continue;
            const action& a = *in_[r][pos_[r]];
            PPSCHED_EXPECTS(false, "ppsched::add_send_recv: the order cannot run: rank ", r,
                            " waits forever at its action ", pos_[r], " (stage ", a.stage(), " ",
                            code(a.kind()), " microbatch ", a.microbatch(),
                            ") for an input no rank sends first");
        }
        for (std::size_t r = 0; r < ranks; ++r) out_[r].resize(filled_[r]); // exact already
        return order(cfg_, std::move(out_));
    }

  private:
    enum : std::uint8_t { fwd_done = 1, bwd_done = 2, got_recv_f = 4, got_recv_b = 8 };

    [[nodiscard]] constexpr std::uint8_t& flags(int stage, int mb) {
        return flags_[static_cast<std::size_t>(stage) * static_cast<std::size_t>(microbatches_) +
                      static_cast<std::size_t>(mb)];
    }
    [[nodiscard]] constexpr int rank_of(int stage) const {
        return stage_rank_[static_cast<std::size_t>(stage)];
    }

    // PyTorch's `_ready_to_schedule`: a forward needs its input received or produced on this
    // rank by the previous stage; an input backward (`I` or `B`) needs its gradient received
    // or produced on this rank by the next stage. Everything else is always ready.
    [[nodiscard]] constexpr bool ready(const action& a, int r) {
        if (a.kind() == action_kind::forward) {
            const int prev = cfg_.previous_stage(a.stage());
            if (prev < 0 || (flags(a.stage(), a.microbatch()) & got_recv_f)) return true;
            return rank_of(prev) == r && (flags(prev, a.microbatch()) & fwd_done);
        }
        if (a.kind() == action_kind::backward_input || a.kind() == action_kind::full_backward) {
            const int next = cfg_.next_stage(a.stage());
            if (next < 0 || (flags(a.stage(), a.microbatch()) & got_recv_b)) return true;
            return rank_of(next) == r && (flags(next, a.microbatch()) & bwd_done);
        }
        return true;
    }

    constexpr void visit(int r) {
        const auto ri = static_cast<std::size_t>(r);
        const slot& head = in_[ri][pos_[ri]];
        // Ranks take turns one item at a time, so the rows are read and written as many
        // interleaved streams, more than the hardware prefetcher follows: fetch a rank's next
        // cache lines ahead of its next turns.
        prefetch_ahead(in_[ri], pos_[ri]);
        prefetch_ahead(out_[ri], filled_[ri]);
        if (head) {
            bool ok = true;
            for_each_part(*head, [&](const action& p) { ok = ok && ready(p, r); });
            if (!ok) return; // blocked: revisited when a RECV arrives
            put(ri, *head);
            for_each_part(*head, [&](const action& p) { place(p, r); });
        }
        if (++pos_[ri] < in_[ri].size()) schedule_next(r);
    }

    // Records a placed (sub-)action and, when its peer stage lives on another rank, appends the
    // SEND here and the RECV to the peer.
    constexpr void place(const action& p, int r) {
        const int s = p.stage(), mb = p.microbatch();
        if (p.kind() == action_kind::forward) {
            flags(s, mb) |= fwd_done;
            const int next = cfg_.next_stage(s);
            if (next < 0 || rank_of(next) == r) return;
            put(static_cast<std::size_t>(r), action::send_f(s, mb));
            deliver(action::recv_f(next, mb), r);
        } else if (p.kind() == action_kind::backward_input ||
                   p.kind() == action_kind::full_backward) {
            flags(s, mb) |= bwd_done;
            const int prev = cfg_.previous_stage(s);
            if (prev < 0 || rank_of(prev) == r) return;
            put(static_cast<std::size_t>(r), action::send_b(s, mb));
            deliver(action::recv_b(prev, mb), r);
        }
    }

    constexpr void deliver(const action& recv, int sender) {
        const int q = rank_of(recv.stage());
        const auto qi = static_cast<std::size_t>(q);
        prefetch_ahead(out_[qi], filled_[qi]);
        put(qi, recv);
        flags(recv.stage(), recv.microbatch()) |=
            recv.kind() == action_kind::recv_f ? got_recv_f : got_recv_b;
        if (pos_[qi] == in_[qi].size()) return; // finished: nothing to wake
        if (q > sender) {
            // PyTorch visits q later in this same round.
            if (!in_current_[qi]) {
                in_current_[qi] = 1;
                current_.push_back(q);
                std::push_heap(current_.begin(), current_.end(), std::greater<>{});
            }
        } else {
            schedule_next(q);
        }
    }

    /// Prefetches `row[i + 8]` (two cache lines ahead) at run time, if it is in the row's
    /// allocation.
    static constexpr void prefetch_ahead(const rank_slots& row, std::size_t i) {
        if (!std::is_constant_evaluated() && i + 8 < row.capacity())
            __builtin_prefetch(row.data() + i + 8);
    }

    /// Appends `a` to rank `r`'s output row.
    constexpr void put(std::size_t r, const action& a) {
        rank_slots& row = out_[r];
        if (filled_[r] < row.size())
            row[filled_[r]] = a;
        else
            row.push_back(a); // not reached: out_size_ counts every item
        ++filled_[r];
    }

    constexpr void schedule_next(int r) {
        const auto ri = static_cast<std::size_t>(r);
        if (in_next_[ri]) return;
        in_next_[ri] = 1;
        next_.push_back(r);
    }

    const order& in_;
    config cfg_;
    int stages_ = 0;
    int microbatches_ = 0;
    std::vector<int> stage_rank_;
    std::vector<std::size_t> out_size_; // per rank: the length of its output row
    std::vector<std::size_t> filled_;   // per rank: the items written to its output row
    std::vector<std::uint8_t> flags_;
    std::vector<rank_slots> out_;
    std::vector<std::size_t> pos_;
    std::vector<int> current_, next_;
    std::vector<std::uint8_t> in_current_, in_next_;
};

} // namespace detail

/// Inserts the point-to-point communication of a compute order, exactly as PyTorch's
/// `_add_send_recv` does:
/// - a forward of stage s whose next stage lives on another rank is followed by `SEND_F(s)`,
///   and the next stage's rank gets `RECV_F(next)`; an `I` or `B` whose previous stage lives on
///   another rank is followed by `SEND_B(s)`, and that rank gets `RECV_B(prev)`; stages next to
///   each other on one rank (the V turn, or a single rank) need nothing; `W` never sends;
/// - the sender places the receive: ranks are swept round-robin (lowest first), each placing
///   its next item when its input has arrived, and a RECV is appended to the peer's output at
///   the moment the SEND is placed, so it comes before the compute that needs it;
/// - an `OVERLAP_F_B` is placed when both sub-actions are ready and sends for each of them
///   (forward first);
/// - each idle slot or non-compute action (UNSHARD, RESHARD, REDUCE_GRAD) takes one round, as
///   in PyTorch, and idle slots are dropped from the result.
/// Stage ranks are read from the order (PyTorch's rule), falling back to `cfg`'s placement for
/// stages it does not mention; stage neighbours come from `cfg.previous_stage`/`next_stage`.
/// Requires: one row per rank; no SEND/RECV in the input; stages < cfg.num_stages(), each on
/// one rank; the order can run (otherwise throws `config_error` naming a rank that waits
/// forever, as PyTorch raises "Malformed compute schedule").
/// Complexity: O(actions log ranks) time, O(stages x microbatches) memory (PyTorch's pass is
/// quadratic in the actions per rank).
template <order_range R>
[[nodiscard]] constexpr order add_send_recv(const R& rows, const config& cfg) {
    const order in = detail::copy_rows(rows, cfg, "ppsched::add_send_recv");
    return detail::send_recv_pass(in).run();
}

/// `add_send_recv(o, o.cfg())`.
[[nodiscard]] constexpr order add_send_recv(const order& o) {
    PPSCHED_EXPECTS(o.size() == static_cast<std::size_t>(o.cfg().ranks),
                    "ppsched::add_send_recv: the order has ", o.size(),
                    " rows but the configuration has ", o.cfg().ranks, " ranks");
    return detail::send_recv_pass(o).run();
}

} // namespace ppsched
