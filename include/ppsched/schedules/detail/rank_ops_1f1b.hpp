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

/// Appends rank `rank`'s actions to `out`: `rank` leading idle slots, then the three phases.
/// `forward_stage(op)` and `backward_stage(op)` map the rank's op counter (counted over all
/// phases) to the stage the op runs; each stage numbers its microbatches in order of use.
/// Requires: the stage functions return stages of this rank.
/// Complexity: linear in the slots appended.
template <class ForwardStage, class BackwardStage>
constexpr void append_rank_ops_1f1b(rank_slots& out, const config& cfg, int rank,
                                    const phases_1f1b& ph, ForwardStage forward_stage,
                                    BackwardStage backward_stage) {
    const auto v = static_cast<std::size_t>(cfg.stages_per_rank);
    // Next microbatch per local stage for F, for the backward (B or I), and for W.
    std::vector<int> next_f(v, 0), next_b(v, 0), next_w(v, 0);
    // Stages of the backwards (I) whose W is still to come, oldest first.
    std::vector<int> pending_w;
    std::size_t w_head = 0;
    auto local = [&cfg](int stage) {
        return static_cast<std::size_t>(cfg.local_stage_index(stage));
    };

    auto emit_forward = [&](int op) {
        const int s = forward_stage(op);
        out.push_back(action::forward(s, next_f[local(s)]++));
    };
    auto emit_backward = [&](int op) {
        const int s = backward_stage(op);
        const int mb = next_b[local(s)]++;
        if (ph.zero_bubble) {
            out.push_back(action::backward_input(s, mb));
            pending_w.push_back(s);
        } else {
            out.push_back(action::full_backward(s, mb));
        }
    };
    auto emit_weight = [&] {
        const int s = pending_w[w_head++];
        out.push_back(action::backward_weight(s, next_w[local(s)]++));
    };
    auto maybe_weight = [&](int op) {
        if (ph.zero_bubble && op - ph.warmup_ops >= ph.weight_delay) emit_weight();
    };

    for (int i = 0; i < rank; ++i) out.push_back(slot{});
    const int total = ph.warmup_ops + ph.steady_ops + ph.cooldown_ops;
    for (int op = 0; op < total; ++op) {
        if (op < ph.warmup_ops) {
            emit_forward(op);
            if (op == ph.warmup_ops - 1)
                for (int i = 0; i < ph.post_warmup_idle; ++i) out.push_back(slot{});
        } else if (op < ph.warmup_ops + ph.steady_ops) {
            emit_forward(op);
            emit_backward(op);
            maybe_weight(op);
        } else {
            if (!ph.zero_bubble) out.push_back(slot{});
            emit_backward(op);
            maybe_weight(op);
        }
    }
    while (ph.zero_bubble && w_head < pending_w.size()) emit_weight();
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
        const int warmup = ph.warmup_ops;
        auto& row = o.rank(r);
        row.reserve(static_cast<std::size_t>((zero_bubble ? 3 : 2) * m * v + 2 * p));
        append_rank_ops_1f1b(
            row, cfg, r, ph,
            [&cfg, per_round, v, r](int op) { return cfg.rank_to_stage(r, (op / per_round) % v); },
            [&cfg, per_round, v, r, warmup](int op) {
                return cfg.rank_to_stage(r, v - 1 - ((op - warmup) / per_round) % v);
            });
    }
    return o;
}

} // namespace ppsched::detail
