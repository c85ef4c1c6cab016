#pragma once
/// \file config.hpp
/// A pipeline configuration: how many ranks, stages per rank and microbatches, and where each
/// stage lives.

#include <cstdint>
#include <string_view>

#include "ppsched/action.hpp"
#include "ppsched/error.hpp"

namespace ppsched {

/// How stages map onto ranks (PyTorch's `generate_stage_to_rank_mapping` styles), and how many
/// pipelines share the ranks.
enum class stage_placement : std::uint8_t {
    loop, ///< stage s on rank s % ranks (interleaved schedules)
    v,    ///< zig-zag: stage s on rank s % ranks on even passes, ranks-1 - s % ranks on odd
    /// Two pipelines in opposite directions over the same ranks (DeepSeek's DualPipe), each
    /// with half the stages and half the microbatches. Direction 0: stages [0, S/2), laid out as
    /// `v` lays out S/2 stages, microbatches [0, M/2). Direction 1: stages [S/2, S), the mirror
    /// image (stage S/2 + s on rank ranks-1 - rank of s), microbatches [M/2, M). No data flows
    /// between the directions. With two stages per rank, rank r holds stages r and 2*ranks-1-r
    /// as in the V. Requires an even stages_per_rank.
    dual,
};

/// Name of a placement as used on the command line (`loop`, `v`, `dual`).
[[nodiscard]] constexpr std::string_view to_string_view(stage_placement p) noexcept {
    return p == stage_placement::v ? "v" : p == stage_placement::dual ? "dual" : "loop";
}

/// The placement named `name` (`loop`, `v`, `dual`); false when there is none.
[[nodiscard]] constexpr bool parse_placement(std::string_view name, stage_placement& out) noexcept {
    for (int i = 0; i < 3; ++i) {
        const auto p = static_cast<stage_placement>(i);
        if (to_string_view(p) == name) {
            out = p;
            return true;
        }
    }
    return false;
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

    /// Whether pass `pass` (stages [pass * ranks, (pass + 1) * ranks)) runs from the last rank
    /// to the first.
    [[nodiscard]] constexpr bool reversed_pass(int pass) const noexcept {
        if (placement == stage_placement::v) return pass % 2 == 1;
        if (placement != stage_placement::dual) return false;
        // Direction 1 mirrors direction 0: its passes alternate starting reversed.
        const int half = stages_per_rank / 2;
        return pass < half ? pass % 2 == 1 : (pass - half) % 2 == 0;
    }

    /// The rank that runs `stage`. Requires 0 <= stage < num_stages().
    [[nodiscard]] constexpr int stage_to_rank(int stage) const noexcept {
        const int pass = stage / ranks, pos = stage % ranks;
        return reversed_pass(pass) ? ranks - 1 - pos : pos;
    }

    /// The `local`-th stage held by `rank` (0 <= local < stages_per_rank), in increasing order.
    [[nodiscard]] constexpr int rank_to_stage(int rank, int local) const noexcept {
        return local * ranks + (reversed_pass(local) ? ranks - 1 - rank : rank);
    }

    /// Index of `stage` among the stages of its rank (inverse of `rank_to_stage`).
    [[nodiscard]] constexpr int local_stage_index(int stage) const noexcept {
        return stage / ranks;
    }

    /// Number of independent pipelines (directions) over the ranks: 2 with the `dual`
    /// placement, otherwise 1.
    [[nodiscard]] constexpr int direction_count() const noexcept {
        return placement == stage_placement::dual ? 2 : 1;
    }
    /// The direction (pipeline) `stage` belongs to: 0, or 1 for the second half of the stages
    /// with the `dual` placement.
    [[nodiscard]] constexpr int stage_direction(int stage) const noexcept {
        return direction_count() == 2 && stage >= num_stages() / 2 ? 1 : 0;
    }
    /// The direction microbatch `mb` flows in: 0, or 1 for the second half of the microbatches
    /// with the `dual` placement.
    [[nodiscard]] constexpr int microbatch_direction(int mb) const noexcept {
        return direction_count() == 2 && mb >= microbatches / 2 ? 1 : 0;
    }
    /// The first microbatch `stage` runs (its direction's first).
    [[nodiscard]] constexpr int first_microbatch(int stage) const noexcept {
        return stage_direction(stage) == 1 ? microbatches / 2 : 0;
    }
    /// How many microbatches `stage` runs: all of them, or its direction's half with `dual`.
    /// They are the consecutive ids from `first_microbatch(stage)`.
    [[nodiscard]] constexpr int microbatch_count(int stage) const noexcept {
        if (direction_count() == 1) return microbatches;
        return stage_direction(stage) == 1 ? microbatches - microbatches / 2 : microbatches / 2;
    }
    /// Whether microbatch `mb` (0 <= mb < microbatches) flows through `stage`.
    [[nodiscard]] constexpr bool stage_runs_microbatch(int stage, int mb) const noexcept {
        return mb >= 0 && mb < microbatches && microbatch_direction(mb) == stage_direction(stage);
    }

    /// The stage that feeds `stage` its forward input, or -1 for the first stage of a
    /// direction.
    [[nodiscard]] constexpr int previous_stage(int stage) const noexcept {
        if (direction_count() == 2 && stage == num_stages() / 2) return -1;
        return stage - 1;
    }
    /// The stage that consumes `stage`'s forward output, or -1 for the last stage of a
    /// direction.
    [[nodiscard]] constexpr int next_stage(int stage) const noexcept {
        if (direction_count() == 2 && stage + 1 == num_stages() / 2) return -1;
        return stage + 1 < num_stages() ? stage + 1 : -1;
    }

    friend constexpr bool operator==(const config&, const config&) noexcept = default;
};

namespace detail {
/// The checks of `check(config)` on the counts alone (what any computation on the
/// configuration needs before the placement's own requirement is checked).
constexpr void check_counts(const config& c) {
    PPSCHED_EXPECTS(c.ranks >= 1, "ppsched::config: ranks must be >= 1 (got ", c.ranks, ")");
    PPSCHED_EXPECTS(c.stages_per_rank >= 1, "ppsched::config: stages_per_rank must be >= 1 (got ",
                    c.stages_per_rank, ")");
    PPSCHED_EXPECTS(c.microbatches >= 1, "ppsched::config: microbatches must be >= 1 (got ",
                    c.microbatches, ")");
    PPSCHED_EXPECTS(static_cast<long long>(c.ranks) * c.stages_per_rank <= max_stage + 1LL,
                    "ppsched::config: ranks * stages_per_rank must be <= 65536 (got ", c.ranks,
                    " * ", c.stages_per_rank, ")");
}
} // namespace detail

/// Checks that a configuration is well formed (not whether a schedule supports it).
/// Throws `config_error` (or fails constant evaluation) with a message naming the field.
constexpr void check(const config& c) {
    detail::check_counts(c);
    PPSCHED_EXPECTS(c.placement != stage_placement::dual || c.stages_per_rank % 2 == 0,
                    "ppsched::config: the dual placement needs an even stages_per_rank (got ",
                    c.stages_per_rank, "): each direction holds half of every rank's stages");
}

} // namespace ppsched
