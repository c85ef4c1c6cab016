#pragma once
/// \file schedules/dualpipe.hpp
/// DualPipe: DeepSeek's bidirectional schedule, two pipelines fed from both ends of the ranks at
/// once, overlapping the forward of one with the backward of the other (DeepSeek-AI,
/// "DeepSeek-V3 Technical Report", arXiv:2412.19437, section 3.2.1;
/// github.com/deepseek-ai/DualPipe).

#include <string_view>

#include "ppsched/action.hpp"
#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/detail/dualpipe_steps.hpp"

namespace ppsched {

/// DualPipe (DeepSeek's `DualPipe`, conformance name "DualPipe"): on the `dual` placement, two
/// pipelines in opposite directions over the same ranks, each rank holding a stage of each (two
/// model copies). Direction 0 runs stages 0..ranks-1 on ranks 0..ranks-1 with the first half of
/// the microbatches; direction 1 runs stage ranks + s on rank ranks-1-s with the second half.
/// Each rank runs the eight steps DualPipeV runs (`dualpipe_v`), with the pipeline that starts
/// nearer to it as its first phase: the bubble of one direction's warm-up is filled by the other
/// direction, and the steady state overlaps a forward of one with a full backward of the other.
/// Published bubble (PP = ranks): (PP/2 - 1)(F&B + B - 3W); activations PP + 1 chunks per rank.
struct dualpipe {
    static constexpr std::string_view name = "dualpipe";
    static constexpr std::string_view pytorch_name = "DualPipe";
    static constexpr stage_placement placement = stage_placement::dual;

    /// Requires: two stages per rank, an even number of ranks, and an even number of
    /// microbatches, at least 2 * ranks (each direction gets half, at least one per stage).
    constexpr void check(const config& cfg) const {
        PPSCHED_EXPECTS(cfg.stages_per_rank == 2, "dualpipe: stages_per_rank (",
                        cfg.stages_per_rank,
                        ") must be 2 (each rank holds one stage of each direction)");
        PPSCHED_EXPECTS(cfg.ranks % 2 == 0, "dualpipe: ranks (", cfg.ranks,
                        ") must be even (rank r and rank ranks-1-r run mirror images; the two "
                        "middle ranks meet)");
        PPSCHED_EXPECTS(cfg.microbatches % 2 == 0 && cfg.microbatches >= 2 * cfg.ranks,
                        "dualpipe: microbatches (", cfg.microbatches,
                        ") must be even and >= 2 * ranks (", 2 * cfg.ranks,
                        "): each direction takes half and needs at least one per stage");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 2 (dual placement); ranks even; microbatches even and >= 2 * "
               "ranks";
    }
    /// The eight steps of DeepSeek's `DualPipe.step()`, run by rank r as a rank min(r, ranks-1-r)
    /// places from the outer end of a pipeline of ranks/2 ranks (the two middle ranks are its
    /// turn); its phase 0 is its stage of the direction that enters on its side (direction 0 on
    /// the first half of the ranks, 1 on the second), with that direction's microbatch ids.
    /// Complexity: linear in the actions.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        order o(cfg);
        const int p = cfg.ranks;
        for (int r = 0; r < p; ++r) {
            // Stage of each direction on this rank (local 0 = direction 0, local 1 = 1).
            const int s0 = cfg.rank_to_stage(r, 0), s1 = cfg.rank_to_stage(r, 1);
            const bool swap = r >= p / 2;
            const int first = swap ? s1 : s0, second = swap ? s0 : s1;
            detail::dualpipe_rank_steps(
                o.rank(r),
                {.stage = {first, second},
                 .first_microbatch = {cfg.first_microbatch(first), cfg.first_microbatch(second)},
                 .microbatches = cfg.microbatches / 2,
                 .half = p / 2,
                 .position = r < p - 1 - r ? r : p - 1 - r});
        }
        return o;
    }
};
static_assert(schedule<dualpipe>);

} // namespace ppsched
