#pragma once
/// \file memory_limit.hpp
/// When memory fits a limit. Memory is summed in floating point, so three activations of 0.1
/// hold 0.30000000000000004, one ulp above 0.3, and a user who gives a limit of 0.3 means
/// them to fit. Every check of memory against a limit in ppsched (the memory-planned
/// schedules, `tune`, the tool's `simulate`, `compare` and `report`) allows this much more.

namespace ppsched {

/// The rounding a memory limit allows: 1e-12 of it, far above what summing a realistic number
/// of activations rounds by (each sum an ulp or a few, 1.1e-16 of it), far below any
/// difference a user means, and within the tolerance `tune`'s bounds give memory.
[[nodiscard]] constexpr double memory_limit_slack(double limit) noexcept {
    return 1e-12 * (limit < 0 ? -limit : limit);
}

/// Whether `memory` fits `limit`, up to rounding (`memory_limit_slack`).
[[nodiscard]] constexpr bool fits_memory_limit(double memory, double limit) noexcept {
    return memory <= limit + memory_limit_slack(limit);
}

} // namespace ppsched
