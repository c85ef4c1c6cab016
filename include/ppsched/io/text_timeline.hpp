#pragma once
/// \file io/text_timeline.hpp
/// A compact timeline for terminals: one line per rank, one character per column of time, the
/// letter of the action computing then (`F`, `I`, `W`, `B`, `O` for an overlapped F+B; lower
/// case for odd stage chunks) and `.` when the rank idles. The step table
/// (`io/step_table.hpp`) lists the order; this shows its timing.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/io/detail/number_text.hpp"
#include "ppsched/simulation.hpp"

namespace ppsched::io {

/// How `format_text_timeline` lays out time.
struct text_timeline_options {
    /// Time units per character column; 0 chooses 1 when the makespan fits in `width` columns,
    /// else the smallest 1, 2 or 5 times a power of ten that fits.
    double units_per_column = 0;
    int width = 100;    ///< the most columns `units_per_column = 0` aims for
    bool legend = true; ///< end with a line explaining the letters
};

} // namespace ppsched::io

namespace ppsched::detail {

/// The letter of a compute action: its kind, lower case on odd stage chunks.
[[nodiscard]] constexpr char timeline_letter(const action& a, const config& cfg) noexcept {
    char c = 'O';
    switch (a.kind()) {
    case action_kind::forward:
        c = 'F';
        break;
    case action_kind::backward_input:
        c = 'I';
        break;
    case action_kind::backward_weight:
        c = 'W';
        break;
    case action_kind::full_backward:
        c = 'B';
        break;
    default:
        break;
    }
    const int stage = a.kind() == action_kind::overlap_f_b ? a.forward_part().stage() : a.stage();
    return cfg.local_stage_index(stage) % 2 == 1 ? static_cast<char>(c - 'A' + 'a') : c;
}

/// A time for the ruler and legend: up to 6 significant digits (`10`, `0.5`).
[[nodiscard]] inline std::string timeline_number(double v) { return text::general_number(v); }

} // namespace ppsched::detail

namespace ppsched::io {

/// The compute stream of each rank as a line of characters: column c covers the time
/// [c * k, (c + 1) * k) for k units per column and shows the action that computes longest in it,
/// or `.` when the rank idles for more of it than it computes (communication streams are not
/// shown). Above the ranks a ruler marks every tenth column with its time.
/// Example (GPipe, 2 ranks, 2 microbatches, F = 1, B = 2):
/// ```
///         0
/// rank 0  FF...BBBB
/// rank 1  .FFBBBB..
/// ```
/// Complexity: linear in the actions plus ranks x columns.
[[nodiscard]] inline std::string format_text_timeline(const simulation& sim, const config& cfg,
                                                      const text_timeline_options& opts = {}) {
    double k = opts.units_per_column;
    const double span = sim.makespan;
    const int width = std::max(opts.width, 1);
    if (k <= 0) {
        k = 1;
        for (double p = 1; span / k > width; p *= 10) {
            for (const double m : {1.0, 2.0, 5.0}) {
                k = m * p;
                if (span / k <= width) break;
            }
        }
        // Costs far below one unit (seconds, say) would fill a few columns: then the finest
        // step of 1, 2 or 5 x 10^e that fits the width.
        if (span > 0 && span < 5) {
            const double target = span / width;
            const double p = std::pow(10.0, std::floor(std::log10(target)));
            for (const double m : {1.0, 2.0, 5.0, 10.0}) {
                k = m * p;
                if (span / k <= width) break;
            }
        }
    }
    if (!(span > 0) || !(k > 0) || !std::isfinite(span / k))
        return "(the makespan is " + ppsched::detail::timeline_number(span) +
               ": nothing to draw)\n";
    // (The margin absorbs rounding in a span that is a multiple of k; relative to the smaller
    // of the two, so that a column wider than the whole span is still one column.)
    std::size_t columns = 0;
    while (static_cast<double>(columns) * k < span - 1e-9 * std::min(k, span)) ++columns;
    const auto R = static_cast<std::size_t>(cfg.ranks);
    std::vector<std::string> lines(R, std::string(columns, '.'));
    std::vector<double> best(R * columns, 0.0), busy(R * columns, 0.0);
    for (const timed_action& t : sim.timeline) {
        if (!t.ran || !is_compute(t.act.kind()) || t.rank < 0 ||
            static_cast<std::size_t>(t.rank) >= R || t.end <= t.start)
            continue;
        const auto r = static_cast<std::size_t>(t.rank);
        const char letter = ppsched::detail::timeline_letter(t.act, cfg);
        for (auto c = static_cast<std::size_t>(t.start / k); c < columns; ++c) {
            const double lo = static_cast<double>(c) * k, hi = lo + k;
            if (lo >= t.end) break;
            const double covered = std::min(hi, t.end) - std::max(lo, t.start);
            if (covered <= 0) continue;
            busy[r * columns + c] += covered;
            if (covered > best[r * columns + c]) {
                best[r * columns + c] = covered;
                lines[r][c] = letter;
            }
        }
    }
    // A column shows idle when the rank is idle for more of it than it is busy (and otherwise
    // the action that covers most of it): in a wide column of many short actions, the idle
    // time outweighs each action but not all of them.
    for (std::size_t r = 0; r < R; ++r)
        for (std::size_t c = 0; c < columns; ++c) {
            const double lo = static_cast<double>(c) * k;
            const double len = std::min(lo + k, span) - lo;
            if (len - busy[r * columns + c] > busy[r * columns + c]) lines[r][c] = '.';
        }

    std::size_t label = 0;
    for (std::size_t r = 0; r < R; ++r)
        label = std::max(label, ("rank " + std::to_string(r)).size());
    label += 2;
    std::string ruler(label + columns, ' ');
    for (std::size_t c = 0; c < columns; c += 10) {
        // The time at column c, written from that column if it fits before the next mark.
        const std::string text = ppsched::detail::timeline_number(static_cast<double>(c) * k);
        if (c + text.size() <= columns || c == 0) ruler.replace(label + c, text.size(), text);
    }
    while (!ruler.empty() && ruler.back() == ' ') ruler.pop_back();
    std::string out = ruler + "\n";
    for (std::size_t r = 0; r < R; ++r) {
        std::string name = "rank " + std::to_string(r);
        name.resize(label, ' ');
        out += name + lines[r] + "\n";
    }
    if (opts.legend) {
        out += "one column = " + ppsched::detail::timeline_number(k) +
               (k == 1 ? " time unit" : " time units") +
               "; F forward, I backward input, W backward weight, B full backward, O overlapped "
               "F+B; lower case: odd stage chunks; . idle\n";
    }
    return out;
}

} // namespace ppsched::io
