#pragma once
/// \file schedules/megatron_interleaved.hpp
/// Megatron-LM's interleaved 1F1B with a microbatch group size (Narayanan et al., "Efficient
/// Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC 2021,
/// arXiv:2104.04473; the group size is Megatron-LM's `microbatch_group_size_per_vp_stage`).

#include <cstddef>
#include <string_view>
#include <vector>

#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/schedules/detail/megatron_table.hpp"

namespace ppsched {

/// Megatron-LM's interleaved 1F1B (`forward_backward_pipelining_with_interleaving`): rank r
/// holds stages r, r + ranks, ... (loop placement, one chunk per pass). Microbatches are cut
/// into groups of `g = microbatch_group_size` consecutive ones; every rank runs a group through
/// its chunks in turn, then the next group. Rank r warms up with
/// `2 * (ranks - 1 - r) + (stages_per_rank - 1) * g` forwards, then alternates forward and
/// backward, then drains; no idle slots.
///
/// g = ranks (the default, `microbatch_group_size == 0`) is PyTorch's Interleaved1F1B where
/// both accept (same rows once PyTorch's idle slots are dropped); a larger g moves towards
/// breadth-first (g = microbatches), holding `(g - ranks) * (stages_per_rank - 1)` more
/// activations on every rank. A structural type, so a configured policy is a template
/// argument: `generate<megatron_interleaved{.microbatch_group_size = 4}>(cfg)`.
///
/// Beyond Megatron: one rank (Megatron never interleaves there, and its one-rank shortcut of
/// no warm-up would run a backward before its forward) uses the general warm-up
/// `(stages_per_rank - 1) * g`, which is valid. One stage per rank is rejected: Megatron runs
/// its non-interleaved 1F1B there, which is `one_f_one_b`.
struct megatron_interleaved {
    /// g: consecutive microbatches each chunk runs before the rank moves on to its next chunk;
    /// 0 means `ranks` (Megatron's default).
    int microbatch_group_size = 0;

    static constexpr std::string_view name = "megatron_interleaved";
    static constexpr std::string_view pytorch_name = "MegatronInterleaved";
    static constexpr stage_placement placement = stage_placement::loop;

    /// The group size used for `cfg`: `microbatch_group_size`, or `cfg.ranks` when it is 0.
    [[nodiscard]] constexpr int group_size(const config& cfg) const noexcept {
        return microbatch_group_size == 0 ? cfg.ranks : microbatch_group_size;
    }

    /// Requires (Megatron's own checks, in its order, after the first): stages_per_rank >= 2;
    /// ranks <= g <= microbatches; microbatches % g == 0 or >= ranks.
    constexpr void check(const config& cfg) const {
        const int p = cfg.ranks, m = cfg.microbatches, g = group_size(cfg);
        PPSCHED_EXPECTS(cfg.stages_per_rank >= 2,
                        "megatron_interleaved: stages_per_rank must be >= 2 (got ",
                        cfg.stages_per_rank,
                        "); with one stage per rank Megatron runs its non-interleaved 1F1B, "
                        "which is one_f_one_b");
        PPSCHED_EXPECTS(g >= p,
                        "megatron_interleaved: microbatch_group_size (default: ranks) must be in "
                        "[ranks, microbatches] = [",
                        p, ", ", m, "] (got ", g,
                        "): a rank runs g microbatches on one chunk before starting them on its "
                        "next chunk, which needs the first of them back from the last rank after "
                        "its trip through all ranks; with g < ranks the rank waits for it (a "
                        "dependency bubble)");
        PPSCHED_EXPECTS(g <= m,
                        "megatron_interleaved: microbatch_group_size (default: ranks) must be in "
                        "[ranks, microbatches] = [",
                        p, ", ", m, "] (got ", g,
                        "): a group cannot hold more microbatches than there are");
        const int rem = m % g;
        PPSCHED_EXPECTS(rem == 0 || rem >= p,
                        "megatron_interleaved: microbatches % microbatch_group_size must be 0 or "
                        ">= ranks (got ",
                        m, " % ", g, " = ", rem, " with ", p,
                        " ranks): the last group would hold fewer microbatches than ranks, so "
                        "each of its chunks waits for the previous chunk's output from the last "
                        "rank (a dependency bubble that costs throughput)");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank >= 2; ranks <= microbatch_group_size (default ranks) <= "
               "microbatches; microbatches % microbatch_group_size == 0 or >= ranks";
    }
    /// Complexity: linear in the actions.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        const int g = group_size(cfg);
        const std::vector<detail::megatron_entry> table =
            detail::megatron_schedule_table(cfg.microbatches, cfg.stages_per_rank, g);
        order o(cfg);
        for (int r = 0; r < cfg.ranks; ++r)
            detail::append_megatron_rank(o.rank(r), cfg, r, table,
                                         detail::megatron_warmup(cfg, r, g), false);
        return o;
    }
};
static_assert(schedule<megatron_interleaved>);

} // namespace ppsched
