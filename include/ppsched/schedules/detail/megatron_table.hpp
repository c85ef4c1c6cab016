#pragma once
/// \file schedules/detail/megatron_table.hpp
/// Megatron-LM's interleaved schedule table (`get_schedule_table` in
/// `megatron/core/pipeline_parallel/schedules.py`) and the per-rank order built from it
/// (`convert_schedule_table_to_order`), shared by `megatron_interleaved` and the overlapped
/// 1F1B schedules.

#include <cstddef>
#include <span>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/order.hpp"

namespace ppsched::detail {

/// One entry of the schedule table: the i-th forward of every rank runs `microbatch` on the
/// rank's chunk `chunk` (0 <= chunk < stages_per_rank).
struct megatron_entry {
    int chunk = 0;
    int microbatch = 0;
};

/// The schedule table for `m` microbatches, `v` chunks and group size `g` (>= 1): microbatches
/// are cut into consecutive groups [0, g), [g, 2g), ... (the last one is short when g does not
/// divide m); each group runs through chunk 0, then chunk 1, ..., then chunk v - 1.
/// The same table serves every rank. Complexity: O(m * v).
[[nodiscard]] constexpr std::vector<megatron_entry> megatron_schedule_table(int m, int v, int g) {
    std::vector<megatron_entry> table;
    table.reserve(static_cast<std::size_t>(m) * static_cast<std::size_t>(v));
    for (int start = 0; start < m; start += g) {
        const int end = start + g < m ? start + g : m;
        for (int c = 0; c < v; ++c)
            for (int k = start; k < end; ++k) table.push_back({c, k});
    }
    return table;
}

/// Megatron's warm-up: `2 * (ranks - 1 - rank) + (v - 1) * g` forwards, at most all of them.
/// (Megatron special-cases ranks == 1 to 0, which would run a backward before its forward;
/// the general formula is used instead.)
[[nodiscard]] constexpr int megatron_warmup(const config& cfg, int rank, int g) noexcept {
    const long long w =
        2LL * (cfg.ranks - 1 - rank) + static_cast<long long>(cfg.stages_per_rank - 1) * g;
    const long long total = static_cast<long long>(cfg.microbatches) * cfg.stages_per_rank;
    return static_cast<int>(w < total ? w : total);
}

/// Appends rank `rank`'s order: the first `warmup` forwards of the table; then, for each later
/// forward i, forward i followed by backward i - warmup; then the last `warmup` backwards.
/// Backward j runs the microbatch of table entry j on the mirrored chunk (v - 1 - chunk): the
/// backward pass visits a microbatch's chunks in reverse. With `overlap`, each steady pair is
/// one `OVERLAP_F_B` slot (forward part first) instead of two slots.
/// Requires: 0 <= warmup <= table.size(). Complexity: linear in the table.
constexpr void append_megatron_rank(rank_slots& row, const config& cfg, int rank,
                                    std::span<const megatron_entry> table, int warmup,
                                    bool overlap) {
    const int v = cfg.stages_per_rank;
    const int n = static_cast<int>(table.size());
    auto forward = [&](int i) {
        const megatron_entry& e = table[static_cast<std::size_t>(i)];
        return action::forward(cfg.rank_to_stage(rank, e.chunk), e.microbatch);
    };
    auto backward = [&](int i) {
        const megatron_entry& e = table[static_cast<std::size_t>(i)];
        return action::full_backward(cfg.rank_to_stage(rank, v - 1 - e.chunk), e.microbatch);
    };
    row.reserve(row.size() + static_cast<std::size_t>(overlap ? n + warmup : 2 * n));
    for (int i = 0; i < warmup; ++i) row.push_back(forward(i));
    for (int i = warmup; i < n; ++i) {
        if (overlap) {
            row.push_back(action::overlap(forward(i), backward(i - warmup)));
        } else {
            row.push_back(forward(i));
            row.push_back(backward(i - warmup));
        }
    }
    for (int j = n - warmup; j < n; ++j) row.push_back(backward(j));
}

} // namespace ppsched::detail
