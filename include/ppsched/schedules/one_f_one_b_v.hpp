#pragma once
/// \file schedules/one_f_one_b_v.hpp
/// 1F1B-V: 1F1B on the V placement with fused backwards, the baseline of the zero-bubble
/// authors' controllable-memory study (Qi et al., "Pipeline Parallelism with Controllable
/// Memory", NeurIPS 2024, arXiv:2405.15362).

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/concepts.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

namespace detail {

// The computations of a rank in the 1F1B-V building block. Chunk 0 is stage r, chunk 1 stage
// 2p - 1 - r. A fused backward takes two unit slots: its own and the one of its "second half"
// placeholder (v1f1b_w1 / v1f1b_w0), which only reserves time and is dropped at the end.
enum v1f1b_letter : std::int8_t {
    v1f1b_f0 = 0, // forward of chunk 0 (data flows rank 0 -> p-1)
    v1f1b_f1 = 1, // forward of chunk 1 (rank p-1 -> 0)
    v1f1b_b1 = 2, // backward of chunk 1 (rank 0 -> p-1)
    v1f1b_b0 = 3, // backward of chunk 0 (rank p-1 -> 0)
    v1f1b_w1 = 4, // second slot of v1f1b_b1
    v1f1b_w0 = 5, // second slot of v1f1b_b0
    v1f1b_empty = -1,
};

/// The unit-slot construction of 1F1B-V (see `one_f_one_b_v_order`), one step a function.
class v1f1b_builder {
  public:
    static constexpr std::size_t period = 6;

    constexpr explicit v1f1b_builder(const config& cfg)
        : cfg_(cfg), p(cfg.ranks), m(cfg.microbatches), P(static_cast<std::size_t>(cfg.ranks)),
          M(static_cast<std::size_t>(cfg.microbatches)), len_(period * (4 * P + M + 1)) {}

    constexpr order run() {
        place_offsets();
        fill_grid();
        keep_first_windows();
        compact();
        return to_order();
    }

  private:
    [[nodiscard]] constexpr std::size_t& offset(std::size_t r, int letter) {
        return offsets_[r * 6 + static_cast<std::size_t>(letter)];
    }
    [[nodiscard]] constexpr std::int8_t& cell(std::size_t r, std::size_t x) {
        return grid_[r * len_ + x];
    }
    /// Keeps the m copies of a letter from its microbatch 0 at `first`, blanks the others.
    constexpr void keep_window(std::size_t r, std::size_t first) {
        for (std::size_t x = first % period; x < first; x += period) cell(r, x) = v1f1b_empty;
        for (std::size_t x = first + period * M; x < len_; x += period) cell(r, x) = v1f1b_empty;
    }

    constexpr void place_offsets() {
        // 1. Offsets of the letters in each rank's period: the forwards run down and back up the V
        //    one slot per rank, then the backwards likewise, two slots each; every third rank
        //    skips three slots so that the six offsets of a rank stay distinct modulo 6.
        // (A flat vector: clang 14 cannot value-initialise a vector of arrays in a constant
        // expression.)
        offsets_.assign(P * 6, 0);
        std::size_t t = 0;
        for (std::size_t r = 0; r < P; ++r) offset(r, v1f1b_f0) = ++t;
        for (std::size_t r = P; r-- > 0;) offset(r, v1f1b_f1) = ++t;
        t += p % 3 == 0 ? std::size_t{4} : std::size_t{1};
        int cycle = (3 - (p + 2) % 3) % 3;
        auto place_backward = [&](std::size_t r, int letter) {
            offset(r, letter) = t;
            offset(r, letter + 2) = t + 1;
            t += 2;
            if (++cycle == 3) {
                cycle = 0;
                t += 3;
            }
        };
        for (std::size_t r = 0; r < P; ++r) place_backward(r, v1f1b_b1);
        for (std::size_t r = P; r-- > 0;) place_backward(r, v1f1b_b0);
    }

    constexpr void fill_grid() {
        // 2. The periodic grid, long enough for the fill, m periods and the drain.
        grid_.assign(P * len_, v1f1b_empty);
        for (std::size_t r = 0; r < P; ++r) {
            std::array<std::int8_t, period> one{};
            for (int l = 0; l < 6; ++l) one[offset(r, l) % period] = static_cast<std::int8_t>(l);
            for (std::size_t x = 0; x < len_; ++x) cell(r, x) = one[x % period];
        }
    }

    constexpr void keep_first_windows() {
        // 3. Microbatch 0 of each letter: a cursor moves forward through time; for each letter,
        //    rank by rank in data-flow order, the letter's next occurrence at or after the cursor
        //    is microbatch 0. Its m copies (one per period) stay, the others are blanked.
        std::size_t cur = period;
        for (const int letter : {v1f1b_f0, v1f1b_f1, v1f1b_b1, v1f1b_b0}) {
            const bool down = letter == v1f1b_f0 || letter == v1f1b_b1; // rank 0 -> p-1
            for (std::size_t i = 0; i < P; ++i) {
                const std::size_t r = down ? i : P - 1 - i;
                for (std::size_t step = 0; step < period; ++step) {
                    if (cell(r, cur) != letter) {
                        ++cur;
                        continue;
                    }
                    keep_window(r, cur);
                    ++cur;
                    if (letter == v1f1b_b1 || letter == v1f1b_b0) {
                        const int second = letter + 2; // its placeholder, within the next period
                        for (std::size_t k = 0; k < period; ++k) {
                            if (cell(r, cur + k) == second) {
                                keep_window(r, cur + k);
                                break;
                            }
                        }
                    }
                    break;
                }
            }
        }
    }

    /// 4. Compaction, in time order: each occurrence moves to the earliest free slot after
    ///    its inputs (see `move_earliest`).
    constexpr void compact() {
        count_live();
        placed_.assign(P * (M + 2) * 6, -1);
        std::vector<std::size_t> seen(P * 6, 0);
        for (std::size_t x0 = 0; x0 < len_; ++x0) {
            for (std::size_t r = 0; r < P; ++r) {
                const std::int8_t c = cell(r, x0);
                if (c == v1f1b_empty) continue;
                const std::size_t k = ++seen[r * 6 + static_cast<std::size_t>(c)];
                move_earliest(r, x0, c, k);
            }
        }
    }

    /// live_[r * len + x]: activations alive on rank r after slot x (a forward adds one, a
    /// backward's second slot frees it); `peak_` bounds how early a forward moves.
    constexpr void count_live() {
        live_.assign(P * len_, 0);
        for (std::size_t r = 0; r < P; ++r) {
            int now = 0;
            for (std::size_t x = 0; x < len_; ++x) {
                const std::int8_t c = cell(r, x);
                if (c == v1f1b_f0 || c == v1f1b_f1) ++now;
                if (c == v1f1b_w1 || c == v1f1b_w0) --now;
                live_[r * len_ + x] = now;
                peak_ = now > peak_ ? now : peak_;
            }
        }
    }

    /// The slot of the k-th (from 1) occurrence of `letter` on rank r placed so far, or -1.
    [[nodiscard]] constexpr long long& where(std::size_t r, std::size_t k, int letter) {
        return placed_[(r * (M + 2) + k) * 6 + static_cast<std::size_t>(letter)];
    }

    /// The latest slot among the inputs of the k-th occurrence of `c` on rank r already placed
    /// (the same letter's previous copy, and the data this one consumes).
    [[nodiscard]] constexpr long long inputs_placed(std::size_t r, std::size_t k, std::int8_t c) {
        const bool first = r == 0, last = r + 1 == P;
        auto max_ll = [](long long a, long long b) { return a < b ? b : a; };
        long long lo = k > 1 ? where(r, k - 1, c) : -1;
        switch (c) {
        case v1f1b_w1:
            return max_ll(lo, where(r, k, v1f1b_b1));
        case v1f1b_w0:
            return max_ll(lo, where(r, k, v1f1b_b0));
        case v1f1b_f0:
            return first ? lo : max_ll(lo, where(r - 1, k, v1f1b_f0));
        case v1f1b_f1:
            return max_ll(lo, last ? where(r, k, v1f1b_f0) : where(r + 1, k, v1f1b_f1));
        case v1f1b_b1: // a fused backward hands over after its second slot
            return max_ll(lo, first ? where(r, k, v1f1b_f1) : where(r - 1, k, v1f1b_w1));
        default: // v1f1b_b0
            return max_ll(lo, last ? where(r, k, v1f1b_w1) : where(r + 1, k, v1f1b_w0));
        }
    }

    /// Moves the k-th occurrence of `c`, at slot x0 of rank r, to the first free slot after its
    /// inputs (two in a row for a backward); a forward only as far back as one more live
    /// activation stays within the peak.
    constexpr void move_earliest(std::size_t r, std::size_t x0, std::int8_t c, std::size_t k) {
        auto x = static_cast<std::size_t>(inputs_placed(r, k, c) + 1);
        const bool backward = c == v1f1b_b1 || c == v1f1b_b0;
        while (x < x0 && cell(r, x) != v1f1b_empty) ++x;
        if (backward)
            while (x < x0 && (cell(r, x) != v1f1b_empty || cell(r, x + 1) != v1f1b_empty)) ++x;
        if (x >= x0) {
            where(r, k, c) = static_cast<long long>(x0);
            return;
        }
        if (c != v1f1b_f0 && c != v1f1b_f1) {
            cell(r, x) = c;
            cell(r, x0) = v1f1b_empty;
            if (c == v1f1b_w1 || c == v1f1b_w0)
                for (std::size_t j = x; j < x0; ++j) --live_[r * len_ + j];
            where(r, k, c) = static_cast<long long>(x);
            return;
        }
        // A forward moves back only through slots where one more activation stays within the
        // peak, then forward again to a free slot.
        std::size_t y = x0;
        while (y > x && live_[r * len_ + y - 1] < peak_) --y;
        while (y < x0 && cell(r, y) != v1f1b_empty) ++y;
        if (y < x0) {
            cell(r, y) = c;
            cell(r, x0) = v1f1b_empty;
            for (std::size_t j = y; j < x0; ++j) ++live_[r * len_ + j];
        }
        where(r, k, c) = static_cast<long long>(y);
    }

    [[nodiscard]] constexpr order to_order() {
        // 5. The order: each rank's occurrences in slot order, placeholders dropped.
        order o(cfg_);
        for (std::size_t r = 0; r < P; ++r) {
            const int rank = static_cast<int>(r);
            const int s0 = cfg_.rank_to_stage(rank, 0), s1 = cfg_.rank_to_stage(rank, 1);
            auto& row = o.rank(rank);
            row.reserve(4 * M);
            std::array<int, 6> count{};
            for (std::size_t x = 0; x < len_; ++x) {
                const std::int8_t c = cell(r, x);
                if (c == v1f1b_empty) continue;
                const int mb = count[static_cast<std::size_t>(c)]++;
                if (mb >= m) continue;
                switch (c) {
                case v1f1b_f0:
                    row.push_back(action::forward(s0, mb));
                    break;
                case v1f1b_f1:
                    row.push_back(action::forward(s1, mb));
                    break;
                case v1f1b_b1:
                    row.push_back(action::full_backward(s1, mb));
                    break;
                case v1f1b_b0:
                    row.push_back(action::full_backward(s0, mb));
                    break;
                default:
                    break; // placeholders
                }
            }
        }
        return o;
    }

    config cfg_;
    int p, m;
    std::size_t P, M;
    std::size_t len_;                  // slots per rank: the fill, m periods and the drain
    std::vector<std::size_t> offsets_; // per (rank, letter): its offset in the period
    std::vector<std::int8_t> grid_;    // per (rank, slot): a letter or v1f1b_empty
    std::vector<int> live_;            // per (rank, slot): see count_live
    int peak_ = 0;                     // the largest of live_
    std::vector<long long> placed_;    // per (rank, occurrence, letter): see where
};

/// The order of 1F1B-V for `cfg` (V placement, two stages per rank).
///
/// The construction is the authors' unit-slot one: every rank repeats a period of six slots
/// holding one of each letter, at offsets chosen so that each letter's data arrives from the
/// neighbouring rank one slot before it is needed; the first occurrence of each letter in data
/// flow order becomes microbatch 0 (the m occurrences from there are kept, the rest blanked);
/// then one pass in time order moves each occurrence to the earliest free slot after its
/// inputs, forwards only as far as keeps the rank's live activations under the peak of the
/// uncompacted grid (that bound is what keeps 1F1B-V's memory at about 2/3 of 1F1B's).
/// Complexity: O(ranks * (ranks + microbatches)) slots, plus short local scans per move.
[[nodiscard]] constexpr order one_f_one_b_v_order(const config& cfg) {
    return v1f1b_builder(cfg).run();
}

} // namespace detail

/// 1F1B-V (the zero-bubble authors' `1F1B-V`): 1F1B on the V placement (rank r holds stages r
/// and 2 * ranks - 1 - r), with fused backwards `B`. Each rank runs one forward and one
/// backward of each chunk per period in the steady state; the warm-up forwards are bounded by
/// the building block's own activation peak, so a rank holds about 2/3 of 1F1B's activation
/// memory: min(microbatches, floor(2 ranks / 3) + 1) microbatches' worth (measured; a chunk's
/// activation is half a rank's). The order does not depend on costs.
struct one_f_one_b_v {
    static constexpr std::string_view name = "one_f_one_b_v";
    static constexpr std::string_view pytorch_name = "1F1B-V";
    static constexpr stage_placement placement = stage_placement::v;

    /// Requires: exactly two stages per rank; any ranks and microbatches.
    constexpr void check(const config& cfg) const {
        PPSCHED_EXPECTS(cfg.stages_per_rank == 2, "one_f_one_b_v: stages_per_rank (",
                        cfg.stages_per_rank,
                        ") must be 2 (the V placement holds two stages per rank)");
    }
    /// What `check` requires.
    [[nodiscard]] static constexpr std::string_view constraints() noexcept {
        return "stages_per_rank == 2 (V placement)";
    }
    /// Complexity: O(ranks * (ranks + microbatches)), see `detail::one_f_one_b_v_order`.
    [[nodiscard]] constexpr order generate(const config& cfg) const {
        return detail::one_f_one_b_v_order(cfg);
    }
};
static_assert(schedule<one_f_one_b_v>);

} // namespace ppsched
