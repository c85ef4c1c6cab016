#pragma once
/// \file algorithms/lower.hpp
/// `lower(order)`: PyTorch's default lowering of a compute-only order into what a runtime
/// executes (`_PipelineScheduleRuntime._prepare_schedule_with_comms`).

#include <cstddef>
#include <vector>

#include "ppsched/algorithms/add_reduce_grad.hpp"
#include "ppsched/algorithms/add_send_recv.hpp"
#include "ppsched/algorithms/add_unshard_reshard.hpp"
#include "ppsched/algorithms/defer_recv.hpp"
#include "ppsched/algorithms/detail/action_table.hpp"
#include "ppsched/algorithms/merge_bw.hpp"
#include "ppsched/config.hpp"
#include "ppsched/algorithms/detail/lowering.hpp"
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
    /// Move each RECV to just before the compute that consumes it (`defer_recv`; PyTorch PR
    /// 178815). Off: PyTorch's placement, where a RECV enters the receiver's row when its SEND
    /// is placed.
    bool defer_recv = false;
    /// The transport the result must be deadlock-free under. PyTorch's placement is safe under
    /// both (every SEND meets its RECV at one point of the send/receive pass's round-robin
    /// sequence); with `defer_recv`, `rendezvous` moves each SEND with its RECV.
    ppsched::transport transport = ppsched::transport::eager;
};

namespace detail {

/// `lower`'s checks of the row count and, for a malformed configuration, of everything that
/// is reported before it (as the passes run one after the other would).
template <order_range R>
constexpr void expect_lowerable(const R& rows, const config& cfg, const lower_options& options) {
    expect_row_count(rows, cfg, "ppsched::lower");
    // A malformed configuration is reported by the send/receive pass (`check`), after the
    // checks of the input; the plan below needs a well-formed one to be built at all.
    const bool well_formed =
        cfg.ranks >= 1 && cfg.stages_per_rank >= 1 && cfg.microbatches >= 1 &&
        static_cast<long long>(cfg.ranks) * cfg.stages_per_rank <= max_stage + 1LL &&
        (cfg.placement != stage_placement::dual || cfg.stages_per_rank % 2 == 0);
    if (!well_formed) {
        expect_compute_only(rows, "ppsched::lower");
        if (options.unshard_reshard)
            PPSCHED_EXPECTS(options.prefetch >= 1,
                            "ppsched::add_unshard_reshard: prefetch must be >= 1 (got ",
                            options.prefetch, ")");
        check(cfg);
    }
    // The passes keep tables of stages x microbatches: bounded by the order's own size (a
    // valid order has at least one slot per two cells: under `dual` a stage runs half the
    // microbatches, and an OVERLAP_F_B holds two actions), so a 2-action order checked
    // against 2^31 microbatches is refused rather than given gigabytes.
    std::size_t slots = 0;
    for (const auto& row : rows) slots += static_cast<std::size_t>(std::ranges::distance(row));
    const std::size_t cells =
        static_cast<std::size_t>(cfg.num_stages()) * static_cast<std::size_t>(cfg.microbatches);
    PPSCHED_EXPECTS(cells <= small_table_cells || cells <= 4 * slots,
                    "ppsched::lower: the order holds far fewer slots than its configuration's "
                    "stages x microbatches (",
                    cfg.num_stages(), " x ", cfg.microbatches,
                    "): it cannot be valid (validate it first)");
}

/// One scan checks the input and gathers the send/receive pass's plan.
template <order_range R>
[[nodiscard]] constexpr p2p_plan plan_lowering(const R& rows, const config& cfg,
                                               const lower_options& options) {
    // One scan checks the input and gathers the send/receive pass's plan (stage ranks, the
    // SENDs and RECVs of each rank). A stage error is reported only after every other check,
    // as when the send/receive pass itself scans the rows built below: UNSHARD, RESHARD and
    // REDUCE_GRAD only repeat stages of the rank's compute actions, never before their first
    // appearance, and `merge_bw` changes no stage, so the same stage fails first.
    p2p_plan plan(cfg);
    action bad_part;
    int bad_rank = -1;
    {
        int r = 0;
        for (const auto& row : rows) {
            std::size_t i = 0;
            for (const auto& s : row) {
                const action* a = slot_action(s);
                expect_compute(a, static_cast<std::size_t>(r), i++, "ppsched::lower");
                if (!a || bad_rank >= 0) continue;
                if (a->is_overlap()) {
                    if (!plan.try_add_part(a->forward_part(), r)) {
                        bad_part = a->forward_part();
                        bad_rank = r;
                    } else if (!plan.try_add_part(a->backward_part(), r)) {
                        bad_part = a->backward_part();
                        bad_rank = r;
                    }
                } else if (!plan.try_add_part(*a, r)) {
                    bad_part = *a;
                    bad_rank = r;
                }
            }
            ++r;
        }
    }
    if (options.unshard_reshard)
        PPSCHED_EXPECTS(options.prefetch >= 1,
                        "ppsched::add_unshard_reshard: prefetch must be >= 1 (got ",
                        options.prefetch, ")");
    if (bad_rank >= 0) plan.report(bad_part, bad_rank);
    // `merge_bw` keeps the SENDs: a `B` sends as the `I` it replaces did, a `W` never does.
    plan.finish();
    return plan;
}

/// The per-rank passes (merge_bw, UNSHARD/RESHARD, REDUCE_GRAD) of every rank, each row
/// preceded by room for its SENDs and RECVs (`plan.comms`).
template <order_range R>
[[nodiscard]] constexpr std::vector<rank_slots>
lower_ranks(const R& rows, const config& cfg, const lower_options& options, p2p_plan& plan) {
    // The per-rank passes run fused, one rank at a time while its row is in cache: its actions
    // are copied once into a reused buffer, and the UNSHARD/RESHARD and REDUCE_GRAD passes
    // append to a second one, which is copied to the end of the rank's output row (sized once,
    // exactly); the send/receive pass then runs in place in those rows.
    const auto ranks = static_cast<std::size_t>(cfg.ranks);
    std::vector<rank_slots> out(ranks);
    std::vector<action> acts;
    // A rank's items, written by index into a buffer that only grows (no out-of-line
    // push_back per item).
    rank_slots items;
    std::size_t count = 0;
    auto store = [&](const action& a) {
        if (count == items.size()) items.resize(2 * count + 64, slot{});
        items[count++] = a;
    };
    unshard_reshard_scratch scratch;
    // Counted over all ranks at once: a stage lives on one rank (the plan checked it).
    reduce_grad_counter counter(cfg);
    auto emit = [&](const action& a) {
        store(a);
        if (options.reduce_grad) counter.after(a, store);
    };
    std::size_t r = 0;
    for (const auto& row : rows) {
        compact_into(row, acts);
        if (options.merge_bw) merge_bw_in_place(acts);
        count = 0;
        if (options.unshard_reshard)
            unshard_reshard_into(acts, options.prefetch, scratch, emit);
        else
            for (const action& a : acts) emit(a);
        rank_slots& o = out[r];
        o.reserve(plan.comms[r] + count);
        o.resize(plan.comms[r]);
        o.insert(o.end(), items.begin(), items.begin() + static_cast<std::ptrdiff_t>(count));
        plan.items[r] = count;
        ++r;
    }
    return out;
}

} // namespace detail

/// Lowers a compute-only order as PyTorch's `_prepare_schedule_with_comms` does: per rank,
/// `add_unshard_reshard` (window `prefetch`) then `add_reduce_grad`; then `add_send_recv` over
/// all ranks (optionally `merge_bw` first). Idle slots are dropped before the send/receive pass
/// (they only pace a step table; the runtime waits on its receives), so the result has none.
/// Requires: one row per rank, only compute actions (F, I, W, B, OVERLAP_F_B) and idle slots,
/// and an order that can run (see `add_send_recv`). Throws `config_error` otherwise.
/// With `options.defer_recv`, `defer_recv(result, options.transport)` last.
/// Complexity: O(actions * prefetch) (see `add_send_recv` for its per-round term).
template <order_range R>
[[nodiscard]] constexpr order lower(const R& rows, const config& cfg,
                                    const lower_options& options = {}) {
    detail::expect_lowerable(rows, cfg, options);
    detail::p2p_plan plan = detail::plan_lowering(rows, cfg, options);
    std::vector<rank_slots> out = detail::lower_ranks(rows, cfg, options, plan);
    order lowered = detail::send_recv_pass(std::move(out), std::move(plan)).run();
    if (!options.defer_recv) return lowered;
    return defer_recv(lowered, options.transport);
}

/// `lower(o, o.cfg(), options)`.
[[nodiscard]] constexpr order lower(const order& o, const lower_options& options = {}) {
    return lower(o, o.cfg(), options);
}

} // namespace ppsched
