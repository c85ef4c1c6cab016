#pragma once
/// \file schedules/zb_h1.hpp
/// ZB-H1: the handcrafted zero-bubble schedule with 1F1B's memory (Qi et al., "Zero Bubble
/// Pipeline Parallelism", ICLR 2024, arXiv:2401.10241, section 3.1).

#include <string_view>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/detail/zb_handcrafted.hpp"

namespace ppsched {

/// ZB-H1 (the zero-bubble authors' `ZB-H1`): one stage per rank; rank r runs 1F1B's
/// `ranks - 1 - r` warm-up forwards, then for each microbatch a forward (while any is left) and
/// an input gradient `I`, and from its (r + 1)-th `I` on also the oldest weight gradient `W`; the
/// r held-back `W` run at the end, in the drain's bubble. Peak activation memory is 1F1B's
/// (`ranks` microbatches on rank 0; a `W` frees the activation). With costs F, I, W and
/// W <= F, rank r idles (ranks - 1 - r)(F + I - W) between its first and last action, against
/// 1F1B's (ranks - 1 - r)(F + I + W): a third of it when F = I = W.
struct zb_h1 {
    static constexpr std::string_view name = "zb_h1";
    static constexpr std::string_view pytorch_name = "ZB-H1";
    static constexpr stage_placement placement = stage_placement::loop;

    /// Requires: one stage per rank, and microbatches >= 2 * ranks (the authors' generator
    /// asserts it; their schedule is only defined with a full steady state).
    constexpr void check(const config& cfg) const {
        PPSCHED_EXPECTS(cfg.stages_per_rank == 1, "zb_h1: stages_per_rank (", cfg.stages_per_rank,
                        ") must be 1 (a single-stage schedule)");
        PPSCHED_EXPECTS(cfg.microbatches >= 2 * cfg.ranks, "zb_h1: microbatches (",
                        cfg.microbatches, ") must be >= 2 * ranks (", 2 * cfg.ranks, ")");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 1; microbatches >= 2 * ranks";
    }
    /// Complexity: linear in the actions.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        return detail::zb_handcrafted_order(cfg, 1);
    }
};
static_assert(schedule<zb_h1>);

} // namespace ppsched
