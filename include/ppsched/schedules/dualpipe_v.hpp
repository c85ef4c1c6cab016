#pragma once
/// \file schedules/dualpipe_v.hpp
/// DualPipeV: DeepSeek's DualPipe folded onto the V placement ("cut in half"), overlapping the
/// forward of one chunk with the backward of the other (DeepSeek-AI, "DeepSeek-V3 Technical
/// Report", arXiv:2412.19437, section 3.2.1; DualPipeV from github.com/deepseek-ai/DualPipe).

#include <array>
#include <cstddef>
#include <string_view>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// DualPipeV (PyTorch `ScheduleDualPipeV`): two stages per rank in a V (rank r holds stages r
/// and 2 * ranks - 1 - r). In the steady state every slot is an `OVERLAP_F_B`: the forward of
/// one chunk runs together with the full backward of the other, so that the communication of
/// one hides behind the computation of the other (expert-parallel all-to-all in DeepSeek-V3).
/// The warm-up and drain split backwards into `I` and `W` to fill the bubbles.
struct dualpipe_v {
    static constexpr std::string_view name = "dualpipe_v";
    static constexpr std::string_view pytorch_name = "DualPipeV";
    static constexpr stage_placement placement = stage_placement::v;

    /// Requires: exactly two stages per rank, and at least as many microbatches as stages.
    constexpr void check(const config& cfg) const {
        PPSCHED_EXPECTS(cfg.stages_per_rank == 2, "dualpipe_v: stages_per_rank (",
                        cfg.stages_per_rank,
                        ") must be 2 (the V placement holds two stages per rank)");
        PPSCHED_EXPECTS(cfg.microbatches >= cfg.num_stages(), "dualpipe_v: microbatches (",
                        cfg.microbatches, ") must be >= the number of stages (", cfg.num_stages(),
                        " = 2 * ranks)");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 2 (V placement); microbatches >= 2 * ranks";
    }
    /// The eight phases of DeepSeek's `DualPipeV.step()`. Complexity: linear in the actions.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        const int p = cfg.ranks, m = cfg.microbatches;
        order o(cfg);
        for (int r = 0; r < p; ++r) {
            auto& row = o.rank(r);
            row.reserve(static_cast<std::size_t>(4 * m));
            const std::array<int, 2> stage{cfg.rank_to_stage(r, 0), cfg.rank_to_stage(r, 1)};
            // Next microbatch per chunk for forwards and for backwards (B or I).
            std::array<int, 2> next_f{0, 0}, next_b{0, 0};
            // Input gradients whose weight gradient is pending: (chunk, microbatch), FIFO.
            std::vector<std::array<int, 2>> pending_w;
            std::size_t w_head = 0;
            pending_w.reserve(static_cast<std::size_t>(2 * m));

            auto fwd = [&](int c) { row.push_back(action::forward(stage[c], next_f[c]++)); };
            auto full_bwd = [&](int c) {
                row.push_back(action::full_backward(stage[c], next_b[c]++));
            };
            auto input_bwd = [&](int c) {
                row.push_back(action::backward_input(stage[c], next_b[c]));
                pending_w.push_back({c, next_b[c]++});
            };
            auto bwd = [&](int c, bool split) { split ? input_bwd(c) : full_bwd(c); };
            auto weight = [&] {
                if (w_head == pending_w.size()) return;
                const auto [c, mb] = pending_w[w_head++];
                row.push_back(action::backward_weight(stage[c], mb));
            };
            auto overlapped = [&](int fc, int bc) {
                row.push_back(action::overlap(action::forward(stage[fc], next_f[fc]++),
                                              action::full_backward(stage[bc], next_b[bc]++)));
            };

            // 1-2: fill the V.
            for (int i = 0; i < 2 * (p - r - 1); ++i) fwd(0);
            for (int i = 0; i <= r; ++i) {
                fwd(0);
                fwd(1);
            }
            // 3: chunk-1 backwards start; their weight gradients lag one step.
            for (int i = 0; i < p - r - 1; ++i) {
                input_bwd(1);
                weight();
                fwd(1);
            }
            // 4: steady state, every slot overlapped (the last rank starts with a plain pair).
            for (int i = 0; i < m - 2 * p + r + 1; ++i) {
                if (i == 0 && r == p - 1) {
                    fwd(0);
                    full_bwd(1);
                } else {
                    overlapped(0, 1);
                }
                overlapped(1, 0);
            }
            // 5: chunk-0 forwards are done.
            for (int i = 0; i < p - r - 1; ++i) {
                full_bwd(1);
                overlapped(1, 0);
            }
            // 6: drain, switching to split backwards half way through.
            bool split = false;
            for (int i = 0; i <= r; ++i) {
                if (i == (r + 1) / 2 && r % 2 == 1) split = true;
                bwd(1, split);
                if (i == (r + 1) / 2 && r % 2 == 0) split = true;
                bwd(0, split);
            }
            // 7-8: the delayed weight gradients fill the tail.
            for (int i = 0; i < p - r - 1; ++i) {
                weight();
                bwd(0, split);
            }
            for (int i = 0; i <= r; ++i) weight();
        }
        return o;
    }
};
static_assert(schedule<dualpipe_v>);

} // namespace ppsched
