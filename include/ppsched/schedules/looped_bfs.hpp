#pragma once
/// \file schedules/looped_bfs.hpp
/// Looped breadth-first: each rank runs all microbatches through one stage before the next
/// (Lamy-Poirier, "Breadth-First Pipeline Parallelism", MLSys 2023, arXiv:2211.05953).

#include <cstddef>
#include <string_view>

#include "ppsched/action.hpp"
#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// Looped BFS (PyTorch `ScheduleLoopedBFS`): rank r holds stages r, r + ranks, ... (loop
/// placement). After `r` idle slots it runs the forwards of every microbatch on its stages in
/// increasing stage order, waits `2 * (ranks - 1 - r)` slots, then runs the full backwards in
/// decreasing stage order, each stage's microbatches in reverse. Like GPipe per loop, so it
/// keeps every activation alive, but few, large communication phases suit FSDP-sharded stages.
struct looped_bfs {
    static constexpr std::string_view name = "looped_bfs";
    static constexpr std::string_view pytorch_name = "LoopedBFS";
    static constexpr stage_placement placement = stage_placement::loop;

    /// Every well-formed configuration is supported.
    constexpr void check(const config&) const {}
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "any configuration";
    }
    /// Complexity: linear in the slots produced.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        const int p = cfg.ranks, v = cfg.stages_per_rank, m = cfg.microbatches;
        order o(cfg);
        for (int r = 0; r < p; ++r) {
            o.rank(r).reserve(static_cast<std::size_t>(2 * m * v + 2 * p));
            for (int i = 0; i < r; ++i) o.push_idle(r);
            for (int l = 0; l < v; ++l)
                for (int mb = 0; mb < m; ++mb)
                    o.push(r, action::forward(cfg.rank_to_stage(r, l), mb));
            for (int i = 0; i < 2 * (p - 1 - r); ++i) o.push_idle(r);
            for (int l = v - 1; l >= 0; --l)
                for (int mb = m - 1; mb >= 0; --mb)
                    o.push(r, action::full_backward(cfg.rank_to_stage(r, l), mb));
        }
        return o;
    }
};
static_assert(schedule<looped_bfs>);

} // namespace ppsched
