#pragma once
/// \file schedules/v_half.hpp
/// V-Half: the controllable-memory V schedule with about half of 1F1B's activation memory
/// (Qi et al., "Pipeline Parallelism with Controllable Memory", NeurIPS 2024, arXiv:2405.15362;
/// the authors' `zbv_greedy.py`).

#include <string_view>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/detail/v_greedy.hpp"

namespace ppsched {

/// V-Half: two stages per rank in a V (rank r holds stages r and 2 * ranks - 1 - r), backwards
/// split into `I` and `W`. Every rank repeats a building block of period 6 unit slots whose
/// offsets for F, f (chunk 1's forward), B (chunk 1's I) and b (chunk 0's I) are
/// `[2r, 3p-2-r, 3p+g+2r-1, 6p+g-2-r]` (g = 3 when p is even); that spacing bounds the activations
/// a rank holds to (ranks + 2) / 2 of a full rank's (both chunks) for microbatches >= ranks, and
/// fewer below. The `W` take the free slots, and two squeeze passes pull the warm-up and cool-down
/// earlier without raising any rank's peak. The order does not depend on costs (the authors' costs
/// only time it).
struct v_half {
    static constexpr std::string_view name = "v_half";
    static constexpr std::string_view pytorch_name = "V-Half";
    static constexpr stage_placement placement = stage_placement::v;

    /// Requires: two stages per rank; microbatches < 2^27 (the slot grid is indexed by int).
    constexpr void check(const config& cfg) const {
        PPSCHED_EXPECTS(cfg.stages_per_rank == 2, "v_half: stages_per_rank (", cfg.stages_per_rank,
                        ") must be 2 (the V placement holds two stages per rank)");
        PPSCHED_EXPECTS(cfg.microbatches < (1 << 27), "v_half: microbatches (", cfg.microbatches,
                        ") must be < 2^27 (its slot grid is indexed by int)");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 2 (V placement)";
    }
    /// Complexity: O(actions + ranks^3) (see detail/v_greedy.hpp).
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        return detail::v_greedy(cfg.ranks, cfg.microbatches, detail::v_greedy_kind::half)
            .make_order(cfg);
    }
};
static_assert(schedule<v_half>);

} // namespace ppsched
