#pragma once
/// \file config.hpp
/// A pipeline configuration: how many ranks, stages per rank and microbatches, and where each
/// stage lives.

#include <cstdint>
#include <string_view>

#include "ppsched/action.hpp"
#include "ppsched/error.hpp"

namespace ppsched {

/// How stages map onto ranks (PyTorch's `generate_stage_to_rank_mapping` styles).
enum class stage_placement : std::uint8_t {
    loop, ///< stage s on rank s % ranks (interleaved schedules)
    v,    ///< zig-zag: stage s on rank s % ranks on even passes, ranks-1 - s % ranks on odd
};

/// Name of a placement as used on the command line (`loop`, `v`).
[[nodiscard]] constexpr std::string_view to_string_view(stage_placement p) noexcept {
    return p == stage_placement::v ? "v" : "loop";
}

/// A pipeline configuration. Members are declared so that designated initialisers read
/// naturally: `ppsched::config{.ranks = 4, .stages_per_rank = 2, .microbatches = 8}`.
struct config {
    int ranks = 1;           ///< pipeline ranks (processes)
    int stages_per_rank = 1; ///< model chunks per rank ("virtual stages")
    int microbatches = 1;    ///< microbatches per iteration
    stage_placement placement = stage_placement::loop;

    /// Total number of stages.
    [[nodiscard]] constexpr int num_stages() const noexcept { return ranks * stages_per_rank; }

    /// The rank that runs `stage`. Requires 0 <= stage < num_stages().
    [[nodiscard]] constexpr int stage_to_rank(int stage) const noexcept {
        const int pass = stage / ranks, pos = stage % ranks;
        return (placement == stage_placement::v && pass % 2 == 1) ? ranks - 1 - pos : pos;
    }

    /// The `local`-th stage held by `rank` (0 <= local < stages_per_rank), in increasing order.
    [[nodiscard]] constexpr int rank_to_stage(int rank, int local) const noexcept {
        return (placement == stage_placement::v && local % 2 == 1) ? (local + 1) * ranks - 1 - rank
                                                                   : local * ranks + rank;
    }

    /// Index of `stage` among the stages of its rank (inverse of `rank_to_stage`).
    [[nodiscard]] constexpr int local_stage_index(int stage) const noexcept { return stage / ranks; }

    /// The stage that feeds `stage` its forward input, or -1 for the first stage.
    [[nodiscard]] constexpr int previous_stage(int stage) const noexcept { return stage - 1; }
    /// The stage that consumes `stage`'s forward output, or -1 for the last stage.
    [[nodiscard]] constexpr int next_stage(int stage) const noexcept {
        return stage + 1 < num_stages() ? stage + 1 : -1;
    }

    friend constexpr bool operator==(const config&, const config&) noexcept = default;
};

/// Checks that a configuration is well formed (not whether a schedule supports it).
/// Throws `config_error` (or fails constant evaluation) with a message naming the field.
constexpr void check(const config& c) {
    PPSCHED_EXPECTS(c.ranks >= 1, "ppsched::config: ranks must be >= 1 (got ", c.ranks, ")");
    PPSCHED_EXPECTS(c.stages_per_rank >= 1, "ppsched::config: stages_per_rank must be >= 1 (got ",
                    c.stages_per_rank, ")");
    PPSCHED_EXPECTS(c.microbatches >= 1, "ppsched::config: microbatches must be >= 1 (got ",
                    c.microbatches, ")");
    PPSCHED_EXPECTS(static_cast<long long>(c.ranks) * c.stages_per_rank <= max_stage + 1LL,
                    "ppsched::config: ranks * stages_per_rank must be <= 65536 (got ", c.ranks,
                    " * ", c.stages_per_rank, ")");
}

} // namespace ppsched
