#pragma once
/// \file algorithms/lower.hpp
/// `lower(order)`: PyTorch's default lowering of a compute-only order into what a runtime
/// executes (`_PipelineScheduleRuntime._prepare_schedule_with_comms`).

#include <cstddef>
#include <vector>

#include "ppsched/algorithms/add_reduce_grad.hpp"
#include "ppsched/algorithms/add_send_recv.hpp"
#include "ppsched/algorithms/add_unshard_reshard.hpp"
#include "ppsched/algorithms/merge_bw.hpp"
#include "ppsched/config.hpp"
#include "ppsched/detail/lowering.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// Which passes `lower` runs. The defaults are PyTorch's pipeline.
struct lower_options {
    /// Insert FSDP `UNSHARD`/`RESHARD` (PyTorch: always).
    bool unshard_reshard = true;
    /// How many distinct upcoming stages a rank keeps unsharded (PyTorch: 3).
    int prefetch = 3;
    /// Insert `REDUCE_GRAD` after each stage's last backward (PyTorch: always).
    bool reduce_grad = true;
    /// Fuse adjacent `I`+`W` into `B` first (PyTorch: not part of the default pipeline).
    bool merge_bw = false;
};

/// Lowers a compute-only order as PyTorch's `_prepare_schedule_with_comms` does: per rank,
/// `add_unshard_reshard` (window `prefetch`) then `add_reduce_grad`; then `add_send_recv` over
/// all ranks (optionally `merge_bw` first). Idle slots are dropped before the send/receive pass
/// (they only pace a step table; the runtime waits on its receives), so the result has none.
/// Requires: one row per rank, only compute actions (F, I, W, B, OVERLAP_F_B) and idle slots,
/// and an order that can run (see `add_send_recv`). Throws `config_error` otherwise.
/// Complexity: O(actions * prefetch + actions log ranks).
template <order_range R>
[[nodiscard]] constexpr order lower(const R& rows, const config& cfg,
                                    const lower_options& options = {}) {
    detail::expect_row_count(rows, cfg, "ppsched::lower");
    detail::expect_compute_only(rows, "ppsched::lower");
    if (options.unshard_reshard)
        PPSCHED_EXPECTS(options.prefetch >= 1,
                        "ppsched::add_unshard_reshard: prefetch must be >= 1 (got ",
                        options.prefetch, ")");
    // The per-rank passes run back to back on one rank's row while it is in cache, instead of
    // each pass walking (and copying) the whole order. Idle slots are dropped by the first.
    std::vector<rank_slots> out;
    out.reserve(static_cast<std::size_t>(cfg.ranks));
    for (const auto& row : rows) {
        rank_slots r;
        if (options.merge_bw)
            r = detail::merge_bw_row(row);
        else
            r = detail::compact_row(row);
        if (options.unshard_reshard) r = detail::unshard_reshard_row(r, options.prefetch);
        if (options.reduce_grad) r = detail::reduce_grad_row(r, cfg);
        out.push_back(std::move(r));
    }
    const order compact(cfg, std::move(out));
    return add_send_recv(compact);
}

/// `lower(o, o.cfg(), options)`.
[[nodiscard]] constexpr order lower(const order& o, const lower_options& options = {}) {
    return lower(o, o.cfg(), options);
}

} // namespace ppsched
