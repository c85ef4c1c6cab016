#pragma once
/// \file schedules/dualpipe_v.hpp
/// DualPipeV: DeepSeek's DualPipe folded onto the V placement ("cut in half"), overlapping the
/// forward of one chunk with the backward of the other (DeepSeek-AI, "DeepSeek-V3 Technical
/// Report", arXiv:2412.19437, section 3.2.1; DualPipeV from github.com/deepseek-ai/DualPipe).

#include <string_view>

#include "ppsched/action.hpp"
#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/detail/dualpipe_steps.hpp"

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
    /// The eight steps of DeepSeek's `DualPipeV.step()` (shared with `dualpipe`): on rank r,
    /// phase 0 is stage r, phase 1 is stage 2 * ranks - 1 - r, both over every microbatch.
    /// Complexity: linear in the actions.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        order o(cfg);
        for (int r = 0; r < cfg.ranks; ++r) {
            detail::dualpipe_rank_steps(
                o.rank(r), {.stage = {cfg.rank_to_stage(r, 0), cfg.rank_to_stage(r, 1)},
                            .first_microbatch = {0, 0},
                            .microbatches = cfg.microbatches,
                            .half = cfg.ranks,
                            .position = r});
        }
        return o;
    }
};
static_assert(schedule<dualpipe_v>);

} // namespace ppsched
