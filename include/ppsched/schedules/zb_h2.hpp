#pragma once
/// \file schedules/zb_h2.hpp
/// ZB-H2: the handcrafted zero-bubble schedule that trades memory for no bubble (Qi et al.,
/// "Zero Bubble Pipeline Parallelism", ICLR 2024, arXiv:2401.10241, section 3.1).

#include <string_view>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/detail/zb_handcrafted.hpp"

namespace ppsched {

/// ZB-H2 (the zero-bubble authors' `ZB-H2`): one stage per rank; rank r runs
/// `2 (ranks - 1 - r)` warm-up forwards, twice 1F1B's, which fill the bubble before the first
/// backward; then for each microbatch a forward (while any is left) and an input gradient `I`,
/// and from its (2r + 1)-th `I` on also the oldest weight gradient `W`; the 2r held-back `W`
/// fill the drain. Peak activation memory is `2 ranks - 1` microbatches on rank 0. With costs F,
/// I, W and W <= F, rank r idles (ranks - 1 - r) max(0, F + I - 2W) between its first and last
/// action: none at all when F + I <= 2W.
struct zb_h2 {
    static constexpr std::string_view name = "zb_h2";
    static constexpr std::string_view pytorch_name = "ZB-H2";
    static constexpr stage_placement placement = stage_placement::loop;

    /// Requires: one stage per rank, and microbatches >= 2 * ranks (the authors' generator
    /// asserts it; rank 0's warm-up alone takes 2 * ranks - 2 forwards).
    constexpr void check(const config& cfg) const {
        PPSCHED_EXPECTS(cfg.stages_per_rank == 1, "zb_h2: stages_per_rank (", cfg.stages_per_rank,
                        ") must be 1 (a single-stage schedule)");
        PPSCHED_EXPECTS(cfg.microbatches >= 2 * cfg.ranks, "zb_h2: microbatches (",
                        cfg.microbatches, ") must be >= 2 * ranks (", 2 * cfg.ranks, ")");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 1; microbatches >= 2 * ranks";
    }
    /// Complexity: linear in the actions.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        return detail::zb_handcrafted_order(cfg, 2);
    }
};
static_assert(schedule<zb_h2>);

} // namespace ppsched
