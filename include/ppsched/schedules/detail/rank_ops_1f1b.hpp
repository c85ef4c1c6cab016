#pragma once
/// \file schedules/detail/rank_ops_1f1b.hpp
/// The warm-up / steady 1F1B / cool-down builder of one rank's actions, shared by the
/// interleaved schedules (PyTorch's `_get_1f1b_rank_ops`), and the round arithmetic of the
/// interleaved family.

#include <cstddef>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/order.hpp"

namespace ppsched::detail {

/// How a rank's work splits into the three phases of an interleaved 1F1B schedule.
struct phases_1f1b {
    int warmup_ops = 0;   ///< forwards only
    int steady_ops = 0;   ///< one forward and one backward each
    int cooldown_ops = 0; ///< backwards only
    /// Idle slots emitted after the last warm-up forward (none when <= 0 or no warm-up).
    int post_warmup_idle = 0;
    /// Zero-bubble mode: backwards are split into I and W; the W of a backward is emitted
    /// right after the I once `weight_delay` steady/cool-down ops have passed, the rest are
    /// drained at the end. In non-zero-bubble mode each cool-down backward is preceded by an
    /// idle slot, as PyTorch does.
    bool zero_bubble = false;
    int weight_delay = 0;
};

/// The number of slots `append_rank_ops_1f1b` appends for rank `rank` with phases `ph`.
[[nodiscard]] constexpr std::size_t rank_ops_1f1b_slots(int rank, const phases_1f1b& ph) noexcept {
    const std::size_t backwards = static_cast<std::size_t>(ph.steady_ops + ph.cooldown_ops);
    std::size_t n = static_cast<std::size_t>(rank) + static_cast<std::size_t>(ph.warmup_ops) +
                    static_cast<std::size_t>(ph.steady_ops) + backwards;
    if (ph.warmup_ops > 0 && ph.post_warmup_idle > 0)
        n += static_cast<std::size_t>(ph.post_warmup_idle);
    // Zero bubble: one W per backward; otherwise one idle slot per cool-down backward.
    n += ph.zero_bubble ? backwards : static_cast<std::size_t>(ph.cooldown_ops);
    return n;
}

/// Appends rank `rank`'s actions to `out`: `rank` leading idle slots, then the three phases.
/// `forward_local(op)` and `backward_local(op)` map the rank's op counter (counted over all
/// phases) to the local index (0 .. stages_per_rank - 1) of the stage the op runs; each is
/// called once per forward (backward) op in increasing op order, so it may count instead of
/// divide. Each stage numbers its microbatches in order of use.
/// Complexity: linear in the slots appended; `out` grows once, to its final size.
template <class ForwardLocal, class BackwardLocal>
constexpr void append_rank_ops_1f1b(rank_slots& out, const config& cfg, int rank,
                                    const phases_1f1b& ph, ForwardLocal forward_local,
                                    BackwardLocal backward_local) {
    // The row is sized once (idle-filled) and written by index: idle slots cost nothing more,
    // and an action is stored where it is built rather than handed to an out-of-line
    // push_back (which reloads it from the stack, a store-forwarding stall per action).
    std::size_t k = out.size();
    out.resize(k + rank_ops_1f1b_slots(rank, ph));
    auto put = [&out, &k](const action& a) {
        if (k < out.size())
            out[k] = a;
        else
            out.push_back(a); // not reached: the count above is exact
        ++k;
    };
    auto skip = [&out, &k](int n) {
        for (int i = 0; i < n; ++i, ++k)
            if (k >= out.size()) out.push_back(slot{});
    };
    const auto v = static_cast<std::size_t>(cfg.stages_per_rank);
    // Next microbatch per local stage for F, for the backward (B or I), and for W.
    std::vector<int> next_f(v, 0), next_b(v, 0), next_w(v, 0);
    // Local stages of the backwards (I) whose W is still to come, oldest first.
    std::vector<int> pending_w;
    if (ph.zero_bubble)
        pending_w.reserve(static_cast<std::size_t>(ph.steady_ops + ph.cooldown_ops));
    std::size_t w_head = 0;

    auto emit_forward = [&](int op) {
        const int l = forward_local(op);
        put(action::forward(cfg.rank_to_stage(rank, l), next_f[static_cast<std::size_t>(l)]++));
    };
    auto emit_backward = [&](int op) {
        const int l = backward_local(op);
        const int s = cfg.rank_to_stage(rank, l);
        const int mb = next_b[static_cast<std::size_t>(l)]++;
        if (ph.zero_bubble) {
            put(action::backward_input(s, mb));
            pending_w.push_back(l);
        } else {
            put(action::full_backward(s, mb));
        }
    };
    auto emit_weight = [&] {
        const int l = pending_w[w_head++];
        put(action::backward_weight(cfg.rank_to_stage(rank, l),
                                    next_w[static_cast<std::size_t>(l)]++));
    };
    auto maybe_weight = [&](int op) {
        if (ph.zero_bubble && op - ph.warmup_ops >= ph.weight_delay) emit_weight();
    };

    skip(rank);
    const int total = ph.warmup_ops + ph.steady_ops + ph.cooldown_ops;
    for (int op = 0; op < total; ++op) {
        if (op < ph.warmup_ops) {
            emit_forward(op);
            if (op == ph.warmup_ops - 1) skip(ph.post_warmup_idle);
        } else if (op < ph.warmup_ops + ph.steady_ops) {
            emit_forward(op);
            emit_backward(op);
            maybe_weight(op);
        } else {
            if (!ph.zero_bubble) skip(1);
            emit_backward(op);
            maybe_weight(op);
        }
    }
    while (ph.zero_bubble && w_head < pending_w.size()) emit_weight();
    out.resize(k);
}

/// The interleaved family's rounds: `max(1, microbatches / ranks)`.
[[nodiscard]] constexpr int interleaved_rounds(const config& cfg) noexcept {
    const int r = cfg.microbatches / cfg.ranks;
    return r > 1 ? r : 1;
}

/// Builds an interleaved schedule (Interleaved1F1B when `zero_bubble` is false,
/// InterleavedZeroBubble's rank ops before bubble insertion when true): microbatches run in
/// rounds of `microbatches / rounds`, each round visiting the rank's stages in turn.
/// Requires: microbatches divisible by `interleaved_rounds(cfg)`.
/// Complexity: linear in the slots produced.
[[nodiscard]] constexpr order interleaved_rank_ops(const config& cfg, bool zero_bubble) {
    const int p = cfg.ranks, v = cfg.stages_per_rank, m = cfg.microbatches;
    const int per_round = m / interleaved_rounds(cfg);
    order o(cfg);
    for (int r = 0; r < p; ++r) {
        phases_1f1b ph;
        // Zero bubble warms up one forward per downstream rank, plain interleaved two.
        const int factor = zero_bubble ? 1 : 2;
        const int warm = (v - 1) * per_round + factor * (p - 1 - r);
        ph.warmup_ops = warm < m * v ? warm : m * v;
        ph.steady_ops = m * v - ph.warmup_ops;
        ph.cooldown_ops = ph.warmup_ops;
        ph.post_warmup_idle =
            zero_bubble ? p - r - 1 : (v * p + 2 * (p - 1 - r)) - (ph.warmup_ops + r);
        ph.zero_bubble = zero_bubble;
        ph.weight_delay = zero_bubble ? r : 0;
        // Op k runs local stage (k / per_round) % v forwards and v - 1 - that backwards
        // (counted from the first backward op): counted, not divided, per op.
        auto round_robin = [per_round, v](int first) {
            return [per_round, v, local = first, left = per_round](int) mutable {
                if (left == 0) {
                    left = per_round;
                    local = local + 1 == v ? 0 : local + 1;
                }
                --left;
                return local;
            };
        };
        auto backward_from_last = [f = round_robin(0), v](int op) mutable { return v - 1 - f(op); };
        append_rank_ops_1f1b(o.rank(r), cfg, r, ph, round_robin(0), backward_from_last);
    }
    return o;
}

} // namespace ppsched::detail
