#pragma once
/// \file schedules/one_f_one_b_overlap.hpp
/// 1F1B with overlapped forward and backward: the steady state runs each forward together with
/// a backward as one `OVERLAP_F_B` (Megatron-LM's combined 1F1B for mixture-of-experts, which
/// hides one microbatch's expert-parallel all-to-all behind another's computation; the order is
/// the PP schedule visualizer's `1f1b_overlap`, github.com/Victarry/PP-Schedule-Visualization).

#include <cstddef>
#include <string_view>
#include <vector>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/detail/megatron_table.hpp"

namespace ppsched {

/// 1F1B with overlapped steady state: one stage per rank; rank r warms up with
/// `w = 2 * (ranks - 1 - r) + 1` forwards, then runs `(F k + w; B k)` as one `OVERLAP_F_B` slot
/// for k = 0, 1, ..., then drains the last w backwards. The overlapped pair never belongs to
/// the same microbatch, so the two halves are independent and their communication can hide
/// behind each other's computation. The warm-up is twice 1F1B's (plus one): rank r holds up to
/// `2 * (ranks - r)` activations, twice 1F1B's, the price of having a backward ready to pair
/// with every steady forward.
struct one_f_one_b_overlap {
    static constexpr std::string_view name = "one_f_one_b_overlap";
    static constexpr std::string_view pytorch_name = "1f1b_overlap";
    static constexpr stage_placement placement = stage_placement::loop;

    /// Requires: one stage per rank; microbatches >= 2 * ranks - 1 (rank 0's warm-up; with
    /// fewer the visualizer fails, and the pairs would not exist).
    constexpr void check(const config& cfg) const {
        PPSCHED_EXPECTS(cfg.stages_per_rank == 1,
                        "one_f_one_b_overlap: stages_per_rank must be 1 (a single-stage schedule; "
                        "interleaved_1f1b_overlap takes more; got ",
                        cfg.stages_per_rank, ")");
        PPSCHED_EXPECTS(cfg.microbatches >= 2 * cfg.ranks - 1,
                        "one_f_one_b_overlap: microbatches (", cfg.microbatches,
                        ") must be >= 2 * ranks - 1 (", 2 * cfg.ranks - 1,
                        "): rank 0 warms up with that many forwards before its first overlapped "
                        "forward+backward");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 1; microbatches >= 2 * ranks - 1";
    }
    /// Complexity: linear in the actions.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        // With one chunk, Megatron's table is the microbatches in order whatever the group.
        const std::vector<detail::megatron_entry> table =
            detail::megatron_schedule_table(cfg.microbatches, 1, cfg.microbatches);
        order o(cfg);
        for (int r = 0; r < cfg.ranks; ++r)
            detail::append_megatron_rank(o.rank(r), cfg, r, table, 2 * (cfg.ranks - 1 - r) + 1,
                                         true);
        return o;
    }
};
static_assert(schedule<one_f_one_b_overlap>);

} // namespace ppsched
