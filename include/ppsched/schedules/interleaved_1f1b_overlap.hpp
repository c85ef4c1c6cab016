#pragma once
/// \file schedules/interleaved_1f1b_overlap.hpp
/// Interleaved 1F1B with overlapped forward and backward: Megatron-LM's interleaved schedule
/// with `overlap_moe_expert_parallel_comm`, which pairs each steady forward with a backward as
/// one `OVERLAP_F_B` to hide expert-parallel all-to-all (the order is the PP schedule
/// visualizer's `1f1b_interleave_overlap`, github.com/Victarry/PP-Schedule-Visualization).

#include <cstddef>
#include <string_view>
#include <vector>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/detail/megatron_table.hpp"

namespace ppsched {

/// Interleaved 1F1B with overlapped steady state: rank r holds stages r, r + ranks, ... (loop
/// placement). The forwards and backwards follow Megatron's interleaved table with group size
/// `ranks` (see `megatron_interleaved`); rank r warms up with one forward more than Megatron's
/// interleaved 1F1B, `w = 2 * (ranks - 1 - r) + (stages_per_rank - 1) * ranks + 1`, then runs
/// forward i + w overlapped with backward i as one `OVERLAP_F_B` slot, then drains the last w
/// backwards. With one stage per rank it is `one_f_one_b_overlap`.
///
/// Which configurations: the visualizer checks nothing and fails when a warm-up exceeds the
/// forwards, and some configurations it does generate deadlock (ranks 4, stages_per_rank 2,
/// microbatches 6: rank 0's pair `(4F5;4B0)` waits for `3F5`, which rank 3 runs in the pair
/// `(3F5;3B0)`, which waits for `4B0`). ppsched accepts what Megatron's own rules accept for
/// group size `ranks` (microbatches a multiple of ranks) and asks for microbatches >= 2 * ranks
/// so that rank 0's warm-up leaves forwards to overlap. Every configuration so accepted
/// validates (tested over a sweep); the rule is sufficient, not necessary (e.g. ranks 2,
/// microbatches 3 would run).
///
/// Beyond the visualizer: on one rank it warms up with 1 forward, which for stages_per_rank
/// >= 2 runs a backward before its forward; ppsched keeps the general warm-up
/// (stages_per_rank), which is valid.
struct interleaved_1f1b_overlap {
    static constexpr std::string_view name = "interleaved_1f1b_overlap";
    static constexpr std::string_view pytorch_name = "1f1b_interleave_overlap";
    static constexpr stage_placement placement = stage_placement::loop;

    /// Requires: microbatches a multiple of ranks and >= 2 * ranks.
    constexpr void check(const config& cfg) const {
        const int p = cfg.ranks, m = cfg.microbatches;
        PPSCHED_EXPECTS(m % p == 0, "interleaved_1f1b_overlap: microbatches (", m,
                        ") must be a multiple of ranks (", p,
                        "): microbatches run through each chunk in groups of ranks, and a short "
                        "last group can make an overlapped pair wait on a rank that waits on it "
                        "(a deadlock)");
        PPSCHED_EXPECTS(m >= 2 * p, "interleaved_1f1b_overlap: microbatches (", m,
                        ") must be >= 2 * ranks (", 2 * p,
                        "): rank 0 warms up with 2 * ranks - 1 + (stages_per_rank - 1) * ranks "
                        "forwards and needs forwards left to overlap");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "microbatches a multiple of ranks and >= 2 * ranks";
    }
    /// Complexity: linear in the actions.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        const int p = cfg.ranks;
        const std::vector<detail::megatron_entry> table =
            detail::megatron_schedule_table(cfg.microbatches, cfg.stages_per_rank, p);
        order o(cfg);
        for (int r = 0; r < p; ++r)
            detail::append_megatron_rank(o.rank(r), cfg, r, table,
                                         detail::megatron_warmup(cfg, r, p) + 1, true);
        return o;
    }
};
static_assert(schedule<interleaved_1f1b_overlap>);

} // namespace ppsched
