#pragma once
/// \file algorithms/add_send_recv.hpp
/// `add_send_recv(order)`: inserts `SEND_F`/`RECV_F`/`SEND_B`/`RECV_B` between the ranks, with
/// exactly the result of PyTorch's `_add_send_recv`, in O(actions) instead of PyTorch's
/// quadratic time.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/algorithms/detail/lowering.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {
namespace detail {

/// What the send/receive pass must know of its input before it starts, gathered in one scan
/// (`add_item`, or `add_part` by `lower` while it checks its input): each stage's rank
/// (PyTorch takes it from the order itself), the forward and input-backward parts per stage
/// (each sends at most once, so every output row can be sized exactly up front) and the items
/// per rank. `finish` then counts the SENDs and RECVs each rank gets.
struct p2p_plan {
    config cfg;
    int stages = 0;
    int microbatches = 0;        // the configured count, or more if the order has more
    std::vector<int> stage_rank; // -1 until a stage is seen
    std::vector<std::size_t> forwards, backwards; // per stage
    std::vector<std::size_t> items;               // per rank: non-idle items
    std::vector<std::size_t> comms;               // per rank: SENDs and RECVs (by `finish`)
    bool finished = false;

    constexpr explicit p2p_plan(const config& c)
        : cfg(c), stages(c.num_stages()), microbatches(c.microbatches),
          stage_rank(static_cast<std::size_t>(stages), -1),
          forwards(static_cast<std::size_t>(stages), 0),
          backwards(static_cast<std::size_t>(stages), 0),
          items(static_cast<std::size_t>(c.ranks), 0) {}

    /// Records one non-idle item of rank `r` (its parts with `add_part`).
    constexpr void add_item(const action& a, int r) {
        ++items[static_cast<std::size_t>(r)];
        PPSCHED_EXPECTS(!is_p2p(a.kind()), "ppsched::add_send_recv: rank ", r, " already has ",
                        code(a.kind()), " actions (the order is lowered already)");
        for_each_part(a, [&](const action& p) { add_part(p, r); });
    }

    /// Records one (sub-)action of rank `r`: checks its stage and counts it.
    constexpr void add_part(const action& p, int r) {
        if (!try_add_part(p, r)) report(p, r);
    }

    /// `add_part` that returns false instead of throwing (and records nothing then), for a
    /// caller that must report other errors first; `report(p, r)` throws `add_part`'s error.
    [[nodiscard]] constexpr bool try_add_part(const action& p, int r) {
        if (p.stage() >= stages) return false;
        const auto st = static_cast<std::size_t>(p.stage());
        int& owner = stage_rank[st];
        if (owner != -1 && owner != r) return false;
        owner = r;
        if (p.microbatch() >= microbatches) microbatches = p.microbatch() + 1;
        if (p.kind() == action_kind::forward) ++forwards[st];
        if (p.kind() == action_kind::backward_input || p.kind() == action_kind::full_backward)
            ++backwards[st];
        return true;
    }

    /// Throws the error of a part `try_add_part` refused.
    constexpr void report(const action& p, int r) const {
        PPSCHED_EXPECTS(p.stage() < stages, "ppsched::add_send_recv: stage ", p.stage(),
                        " on rank ", r, " is out of range (", stages, " stages)");
        const int owner = stage_rank[static_cast<std::size_t>(p.stage())];
        PPSCHED_EXPECTS(owner == -1 || owner == r, "ppsched::add_send_recv: stage ", p.stage(),
                        " appears on rank ", owner, " and on rank ", r);
    }

    /// Gives the stages the order never mentions the configured placement's rank, and counts
    /// each rank's SENDs and RECVs into `comms`.
    constexpr void finish() {
        if (finished) return;
        finished = true;
        for (int s = 0; s < stages; ++s)
            if (stage_rank[static_cast<std::size_t>(s)] == -1)
                stage_rank[static_cast<std::size_t>(s)] = cfg.stage_to_rank(s);
        comms.assign(static_cast<std::size_t>(cfg.ranks), 0);
        for (int s = 0; s < stages; ++s) {
            const auto st = static_cast<std::size_t>(s);
            const auto r = static_cast<std::size_t>(stage_rank[st]);
            const int next = cfg.next_stage(s), prev = cfg.previous_stage(s);
            if (next >= 0) { // a SEND_F here, a RECV_F there
                const auto q = static_cast<std::size_t>(stage_rank[static_cast<std::size_t>(next)]);
                if (q != r) {
                    comms[r] += forwards[st];
                    comms[q] += forwards[st];
                }
            }
            if (prev >= 0) { // a SEND_B here, a RECV_B there
                const auto q = static_cast<std::size_t>(stage_rank[static_cast<std::size_t>(prev)]);
                if (q != r) {
                    comms[r] += backwards[st];
                    comms[q] += backwards[st];
                }
            }
        }
    }
};

/// One input row of the send/receive pass: `size` slots from `data` (idle ones allowed).
struct row_view {
    const slot* data = nullptr;
    std::size_t size = 0;
};

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
///
/// The ranks to visit in this round and in the next are bit sets, scanned lowest bit first
/// (`std::countr_zero`); a second level (one bit per non-empty 64-rank word) keeps a round's
/// scan proportional to the ranks it visits, not to all ranks, for thousands of ranks. A rank
/// woken during the round is always above the one being visited, so the scan never goes back.
class send_recv_pass {
  public:
    /// For an order: scans it once to build the plan.
    constexpr explicit send_recv_pass(const order& in) : cfg_(in.cfg()) {
        check(cfg_);
        p2p_plan plan(cfg_);
        rows_.reserve(in.size());
        for (int r = 0; r < cfg_.ranks; ++r) {
            const rank_slots& row = in.rank(r);
            rows_.push_back({row.data(), row.size()});
            for (const slot& s : row)
                if (s) plan.add_item(*s, r);
        }
        init(std::move(plan));
    }

    /// In place: rank r's input is the last `plan.items[r]` slots of `rows[r]`, which is sized
    /// for its whole output (`plan.items[r] + plan.comms[r]`, after `plan.finish()`). The
    /// output is written from the front of the same row, never over an unread input slot: the
    /// write position trails the read position by the SENDs and RECVs the rank has still to
    /// get, and a RECV or SEND is written only while it is among them (an item overwrites at
    /// most its own slot, read before).
    constexpr send_recv_pass(std::vector<rank_slots> rows, p2p_plan plan)
        : cfg_(plan.cfg), out_(std::move(rows)) {
        plan.finish();
        rows_.resize(out_.size(), row_view{});
        for (std::size_t r = 0; r < out_.size(); ++r)
            rows_[r] = {out_[r].data() + plan.comms[r], plan.items[r]};
        init(std::move(plan));
    }

    constexpr order run() {
        const auto ranks = static_cast<std::size_t>(cfg_.ranks);
        const std::size_t words = (ranks + 63) / 64, summaries = (words + 63) / 64;
        current_.assign(words, 0);
        next_.assign(words, 0);
        current_summary_.assign(summaries, 0);
        next_summary_.assign(summaries, 0);
        // Rows are sized once and written through a cursor: an action built here is stored
        // where it is built (no out-of-line push_back reloading it from the stack).
        const bool in_place = !out_.empty();
        if (!in_place) out_.assign(ranks, rank_slots{});
        state_.assign(ranks, rank_state{});
        for (std::size_t r = 0; r < ranks; ++r) {
            if (!in_place) out_[r].resize(out_size_[r]);
            rank_state& st = state_[r];
            st.next = rows_[r].data;
            st.end = rows_[r].data + rows_[r].size;
            st.out = out_[r].data();
            st.out_end = out_[r].data() + out_[r].size();
            if (st.next != st.end) schedule_next(r);
        }
        while (any_next_) {
            // Start a round with the ranks that may move, lowest rank first. The round empties
            // `current_`, so after the swap `next_` is empty again.
            any_next_ = false;
            current_.swap(next_);
            current_summary_.swap(next_summary_);
            for (std::size_t sw = 0; sw < summaries; ++sw) {
                while (current_summary_[sw] != 0) {
                    const std::size_t w =
                        sw * 64 + static_cast<std::size_t>(std::countr_zero(current_summary_[sw]));
                    // Re-read: a visit may wake a higher rank of this word.
                    while (current_[w] != 0) {
                        const std::uint64_t bits = current_[w];
                        current_[w] = bits & (bits - 1);
                        visit(w * 64 + static_cast<std::size_t>(std::countr_zero(bits)));
                    }
                    current_summary_[sw] &= ~(std::uint64_t{1} << (w % 64));
                }
            }
        }
        for (std::size_t r = 0; r < ranks; ++r) {
            const rank_state& st = state_[r];
            if (st.next == st.end) continue;
            const action& a = **st.next;
            PPSCHED_EXPECTS(false, "ppsched::add_send_recv: the order cannot run: rank ", r,
                            " waits forever at its action ",
                            static_cast<std::size_t>(st.next - rows_[r].data), " (stage ",
                            a.stage(), " ", code(a.kind()), " microbatch ", a.microbatch(),
                            ") for an input no rank sends first");
        }
        for (std::size_t r = 0; r < ranks; ++r) // exact already: out_size_ counts every item
            out_[r].resize(static_cast<std::size_t>(state_[r].out - out_[r].data()));
        return order(cfg_, std::move(out_));
    }

  private:
    // Per (stage, microbatch): its forward's input is there (received, produced on this rank
    // by the previous stage, or none is needed at the first stage), and likewise its input
    // backward's gradient. Setting these when the producer is placed, locally or through a
    // RECV, makes readiness one lookup.
    enum : std::uint8_t { input_f = 1, input_b = 2 };

    // A stage's neighbours and their ranks (-1 for none), looked up once per stage instead of
    // through the configuration at every action.
    struct stage_link {
        int prev = -1, next = -1, prev_rank = -1, next_rank = -1;
    };

    // A rank's read position in its input row and write position in its output row.
    struct rank_state {
        const slot* next = nullptr;
        const slot* end = nullptr;
        slot* out = nullptr;
        slot* out_end = nullptr;
    };

    constexpr void init(p2p_plan plan) {
        plan.finish();
        stages_ = plan.stages;
        microbatches_ = static_cast<std::size_t>(plan.microbatches);
        out_size_ = std::move(plan.items);
        for (std::size_t r = 0; r < out_size_.size(); ++r) out_size_[r] += plan.comms[r];
        links_.assign(static_cast<std::size_t>(stages_), stage_link{});
        for (int s = 0; s < stages_; ++s) {
            stage_link& l = links_[static_cast<std::size_t>(s)];
            l.prev = cfg_.previous_stage(s);
            l.next = cfg_.next_stage(s);
            l.prev_rank = l.prev >= 0 ? plan.stage_rank[static_cast<std::size_t>(l.prev)] : -1;
            l.next_rank = l.next >= 0 ? plan.stage_rank[static_cast<std::size_t>(l.next)] : -1;
        }
        flags_.assign(static_cast<std::size_t>(stages_) * microbatches_, 0);
        for (int s = 0; s < stages_; ++s) {
            const stage_link& l = links_[static_cast<std::size_t>(s)];
            const std::uint8_t none_needed =
                static_cast<std::uint8_t>((l.prev < 0 ? input_f : 0) | (l.next < 0 ? input_b : 0));
            if (none_needed == 0) continue;
            for (std::size_t mb = 0; mb < microbatches_; ++mb)
                flags_[static_cast<std::size_t>(s) * microbatches_ + mb] = none_needed;
        }
    }

    [[nodiscard]] constexpr std::uint8_t& flags(int stage, int mb) {
        return flags_[static_cast<std::size_t>(stage) * microbatches_ +
                      static_cast<std::size_t>(mb)];
    }

    // PyTorch's `_ready_to_schedule`: a forward needs its input received or produced on this
    // rank by the previous stage; an input backward (`I` or `B`) needs its gradient received
    // or produced on this rank by the next stage. Everything else is always ready. (A stage's
    // neighbour is produced on this rank exactly when it lives on this rank: each stage lives
    // on one rank.)
    [[nodiscard]] constexpr bool ready(const action& a) {
        if (a.kind() == action_kind::forward) return flags(a.stage(), a.microbatch()) & input_f;
        if (a.kind() == action_kind::backward_input || a.kind() == action_kind::full_backward)
            return flags(a.stage(), a.microbatch()) & input_b;
        return true;
    }

    constexpr void visit(std::size_t ri) {
        const int r = static_cast<int>(ri);
        rank_state& st = state_[ri];
        // Ranks take turns one item at a time, so the rows are read and written as many
        // interleaved streams, more than the hardware prefetcher follows: fetch a rank's next
        // cache lines ahead of its next turns.
        prefetch_ahead(st.next, st.end);
        prefetch_ahead(st.out, st.out_end);
        const slot& head = *st.next;
        if (head) {
            const action a = *head;
            if (a.is_overlap()) {
                const action f = a.forward_part(), b = a.backward_part();
                if (!ready(f) || !ready(b)) return; // blocked: revisited on a RECV
                put(st, a);
                place(f, r);
                place(b, r);
            } else {
                if (!ready(a)) return; // blocked: revisited when a RECV arrives
                put(st, a);
                place(a, r);
            }
        }
        if (++st.next != st.end) schedule_next(ri);
    }

    // Records a placed (sub-)action and, when its peer stage lives on another rank, appends the
    // SEND here and the RECV to the peer.
    constexpr void place(const action& p, int r) {
        const int s = p.stage(), mb = p.microbatch();
        if (p.kind() == action_kind::forward) {
            const stage_link& l = links_[static_cast<std::size_t>(s)];
            if (l.next < 0) return;
            flags(l.next, mb) |= input_f;
            if (l.next_rank == r) return;
            put(state_[static_cast<std::size_t>(r)], action::send_f(s, mb));
            deliver(action::recv_f(l.next, mb), l.next_rank, r);
        } else if (p.kind() == action_kind::backward_input ||
                   p.kind() == action_kind::full_backward) {
            const stage_link& l = links_[static_cast<std::size_t>(s)];
            if (l.prev < 0) return;
            flags(l.prev, mb) |= input_b;
            if (l.prev_rank == r) return;
            put(state_[static_cast<std::size_t>(r)], action::send_b(s, mb));
            deliver(action::recv_b(l.prev, mb), l.prev_rank, r);
        }
    }

    constexpr void deliver(const action& recv, int q, int sender) {
        const auto qi = static_cast<std::size_t>(q);
        rank_state& st = state_[qi];
        prefetch_ahead(st.out, st.out_end);
        put(st, recv);
        if (st.next == st.end) return; // finished: nothing to wake
        if (q > sender) {
            // PyTorch visits q later in this same round.
            current_[qi / 64] |= std::uint64_t{1} << (qi % 64);
            current_summary_[qi / 4096] |= std::uint64_t{1} << (qi / 64 % 64);
        } else {
            schedule_next(qi);
        }
    }

    /// Prefetches the slot two cache lines after `p` at run time, if it is before `end`.
    static constexpr void prefetch_ahead(const slot* p, const slot* end) {
        if (!std::is_constant_evaluated() && end - p > 8) __builtin_prefetch(p + 8);
    }

    /// Appends `a` to a rank's output row (sized for every item: `out_size_`).
    static constexpr void put(rank_state& st, const action& a) {
        *st.out = a;
        ++st.out;
    }

    constexpr void schedule_next(std::size_t r) {
        next_[r / 64] |= std::uint64_t{1} << (r % 64);
        next_summary_[r / 4096] |= std::uint64_t{1} << (r / 64 % 64);
        any_next_ = true;
    }

    config cfg_;
    std::vector<row_view> rows_;
    int stages_ = 0;
    std::size_t microbatches_ = 0;
    std::vector<stage_link> links_;
    std::vector<std::size_t> out_size_; // per rank: the length of its output row
    std::vector<std::uint8_t> flags_;
    std::vector<rank_slots> out_;
    std::vector<rank_state> state_;
    std::vector<std::uint64_t> current_, next_;                 // one bit per rank
    std::vector<std::uint64_t> current_summary_, next_summary_; // one bit per 64-rank word
    bool any_next_ = false;
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
/// Complexity: O(actions + rounds x ranks / 4096) time (one summary word per 4096 ranks is
/// read each round; rounds <= actions), O(stages x microbatches) memory (PyTorch's pass is
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
