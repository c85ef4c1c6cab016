#pragma once
/// \file schedules/gpipe.hpp
/// GPipe: every forward, then every backward (Huang et al., "GPipe: Efficient Training of Giant
/// Neural Networks using Pipeline Parallelism", NeurIPS 2019, arXiv:1811.06965).

#include <cstddef>
#include <string_view>

#include "ppsched/action.hpp"
#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// GPipe (PyTorch `ScheduleGPipe`): one stage per rank; each rank runs the forwards of all
/// microbatches, then their full backwards, in microbatch order. Activation memory grows with
/// the number of microbatches; the bubble is (ranks - 1) / (microbatches + ranks - 1).
///
/// The order is compact (no idle slots), as PyTorch's runtime executes it; PyTorch's
/// `pipeline_order` also carries idle padding and a trailing `REDUCE_GRAD` (added by lowering
/// here). Any number of microbatches is accepted, also fewer than ranks.
struct gpipe {
    static constexpr std::string_view name = "gpipe";
    static constexpr std::string_view pytorch_name = "GPipe";
    static constexpr stage_placement placement = stage_placement::loop;

    /// Requires: one stage per rank.
    constexpr void check(const config& cfg) const {
        PPSCHED_EXPECTS(cfg.stages_per_rank == 1, "gpipe: stages_per_rank (", cfg.stages_per_rank,
                        ") must be 1 (a single-stage schedule)");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 1";
    }
    /// Rank r: rF0 .. rF(m-1), rB0 .. rB(m-1). Complexity: linear in the actions.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        order o(cfg);
        for (int r = 0; r < cfg.ranks; ++r) {
            o.rank(r).reserve(2 * static_cast<std::size_t>(cfg.microbatches));
            for (int mb = 0; mb < cfg.microbatches; ++mb) o.push(r, action::forward(r, mb));
            for (int mb = 0; mb < cfg.microbatches; ++mb) o.push(r, action::full_backward(r, mb));
        }
        return o;
    }
};
static_assert(schedule<gpipe>);

} // namespace ppsched
