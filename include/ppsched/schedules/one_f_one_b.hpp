#pragma once
/// \file schedules/one_f_one_b.hpp
/// 1F1B: one forward, one backward (PipeDream-Flush: Narayanan et al., "Memory-Efficient
/// Pipeline-Parallel DNN Training", ICML 2021, arXiv:2006.09503; first in PipeDream, SOSP 2019).

#include <cstddef>
#include <string_view>

#include "ppsched/action.hpp"
#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// 1F1B (PyTorch `Schedule1F1B`): one stage per rank; rank r warms up with `ranks - r`
/// forwards, then alternates a backward and a forward, then drains the backwards. At most
/// `ranks - r` activations are alive on rank r, whatever the number of microbatches; the
/// bubble is the same as GPipe's.
///
/// The order is compact (no idle slots) and its last rank runs F0, B0, F1, B1, ... (what
/// PyTorch's runtime executes; PyTorch's own `pipeline_order` misnumbers that rank's forwards
/// from 1).
struct one_f_one_b {
    static constexpr std::string_view name = "one_f_one_b";
    static constexpr std::string_view pytorch_name = "1F1B";
    static constexpr stage_placement placement = stage_placement::loop;

    /// Requires: one stage per rank, and at least as many microbatches as ranks (PyTorch's
    /// requirement: with fewer the warm-up never reaches the steady state).
    constexpr void check(const config& cfg) const {
        PPSCHED_EXPECTS(cfg.stages_per_rank == 1, "one_f_one_b: stages_per_rank (",
                        cfg.stages_per_rank, ") must be 1 (a single-stage schedule)");
        PPSCHED_EXPECTS(cfg.microbatches >= cfg.ranks, "one_f_one_b: microbatches (",
                        cfg.microbatches, ") must be >= ranks (", cfg.ranks, ")");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 1; microbatches >= ranks";
    }
    /// Complexity: linear in the actions.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        const int m = cfg.microbatches;
        order o(cfg);
        for (int r = 0; r < cfg.ranks; ++r) {
            o.rank(r).reserve(2 * static_cast<std::size_t>(m));
            const int warmup = cfg.ranks - r < m ? cfg.ranks - r : m;
            int f = 0, b = 0;
            while (f < warmup) o.push(r, action::forward(r, f++));
            // Steady state: each backward frees the activation the next forward needs.
            while (b < m) {
                o.push(r, action::full_backward(r, b++));
                if (f < m) o.push(r, action::forward(r, f++));
            }
        }
        return o;
    }
};
static_assert(schedule<one_f_one_b>);

} // namespace ppsched
