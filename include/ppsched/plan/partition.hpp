#pragma once
/// \file plan/partition.hpp
/// `min_max_partition`: the exact split of a sequence of weights into contiguous, non-empty
/// parts that minimises the largest (scaled) part, subject to a per-part feasibility rule, and
/// among those splits the one with the smallest sum of squared parts (the most even).

#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "ppsched/error.hpp"

namespace ppsched {

/// A per-part rule: may part `k` hold the items `[first, last)`?
using partition_rule = std::function<bool(int k, int first, int last)>;

/// Splits `weights` into `parts` contiguous non-empty parts. Part `k` holding items
/// `[i, j)` costs `scale[k] * (weights[i] + ... + weights[j-1])` (`scale` empty: all 1); the
/// result minimises the largest part cost exactly, then, among the splits reaching it, the sum
/// of squared part costs. Parts that `allowed` rejects are never used. Returns the number of
/// items in each part, or nothing when no split satisfies `allowed` (or there are fewer items
/// than parts).
/// Complexity: O(parts * n * L) time, L the most items a part of cost at most the answer holds
/// (n in the worst case: two dynamic programs over prefixes), O(parts * n) memory. Requires
/// non-negative weights and scales.
[[nodiscard]] inline std::optional<std::vector<int>>
min_max_partition(std::span<const double> weights, int parts, std::span<const double> scale = {},
                  const partition_rule& allowed = {}) {
    PPSCHED_EXPECTS(parts >= 1, "ppsched::min_max_partition: parts must be >= 1 (got ", parts, ")");
    PPSCHED_EXPECTS(scale.empty() || scale.size() == static_cast<std::size_t>(parts),
                    "ppsched::min_max_partition: scale must be empty or have one entry per part");
    const int n = static_cast<int>(weights.size());
    if (n < parts) return std::nullopt;
    const auto un = static_cast<std::size_t>(n);
    std::vector<double> prefix(un + 1, 0);
    for (std::size_t i = 0; i < un; ++i) prefix[i + 1] = prefix[i] + weights[i];
    auto cost = [&](int k, int i, int j) {
        const double s = prefix[static_cast<std::size_t>(j)] - prefix[static_cast<std::size_t>(i)];
        return scale.empty() ? s : scale[static_cast<std::size_t>(k)] * s;
    };
    auto ok = [&](int k, int i, int j) { return !allowed || allowed(k, i, j); };
    const double inf = std::numeric_limits<double>::infinity();
    const std::size_t stride = un + 1;
    auto at = [stride](int k, int j) {
        return static_cast<std::size_t>(k) * stride + static_cast<std::size_t>(j);
    };

    // Pass 1: best[k][j] = the least largest cost of splitting the first j items into k parts.
    std::vector<double> best(static_cast<std::size_t>(parts + 1) * stride, inf);
    best[at(0, 0)] = 0;
    // The last part [i, j) grows as i falls, and its cost never falls (weights and scales are
    // non-negative, and floating-point sums and differences are monotone): once it reaches
    // the best found, no smaller i can do better. So a part is scanned only up to the size
    // the answer allows, not over every i.
    for (int k = 1; k <= parts; ++k)
        for (int j = k; j <= n - (parts - k); ++j)
            for (int i = j - 1; i >= k - 1; --i) {
                const double c = cost(k - 1, i, j);
                if (c >= best[at(k, j)]) break;
                const double before = best[at(k - 1, i)];
                if (before == inf || !ok(k - 1, i, j)) continue;
                const double v = before > c ? before : c;
                if (v < best[at(k, j)]) best[at(k, j)] = v;
            }
    const double bottleneck = best[at(parts, n)];
    if (bottleneck == inf) return std::nullopt;

    // Pass 2: among splits whose every part costs at most the bottleneck, the least sum of
    // squares (a tolerance absorbs the rounding of the prefix sums).
    const double cap = bottleneck + 1e-9 * (bottleneck > 1 ? bottleneck : 1);
    // Squares of parts beyond 1e150 overflow: then they are taken in units of the bottleneck.
    const double unit = bottleneck > 1e150 ? bottleneck : 1.0;
    std::vector<double> squares(static_cast<std::size_t>(parts + 1) * stride, inf);
    std::vector<int> from(static_cast<std::size_t>(parts + 1) * stride, -1);
    squares[at(0, 0)] = 0;
    // (The same scan from the largest i, up to the cap; at equal sums the smallest i wins, as
    // in a scan from the smallest.)
    for (int k = 1; k <= parts; ++k)
        for (int j = k; j <= n - (parts - k); ++j)
            for (int i = j - 1; i >= k - 1; --i) {
                const double c = cost(k - 1, i, j);
                if (c > cap) break;
                const double before = squares[at(k - 1, i)];
                if (before == inf || !ok(k - 1, i, j)) continue;
                const double v = before + (c / unit) * (c / unit);
                if (v <= squares[at(k, j)]) {
                    squares[at(k, j)] = v;
                    from[at(k, j)] = i;
                }
            }
    std::vector<int> sizes(static_cast<std::size_t>(parts));
    for (int k = parts, j = n; k > 0; --k) {
        const int i = from[at(k, j)];
        sizes[static_cast<std::size_t>(k - 1)] = j - i;
        j = i;
    }
    return sizes;
}

} // namespace ppsched
