#pragma once
// The text the subcommands report in, in one place: numbers for people and for JSON, a
// labelled summary row, the table of columns aligned under their headings, and the summary
// lines of a simulation (`simulate`, `render`, `trace`, `timeline`, `tune` print them alike).

#include <array>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <ppsched/io/detail/json_text.hpp>
#include <ppsched/io/detail/number_text.hpp>
#include <ppsched/simulation.hpp>

namespace ppsched::cli {

/// The line every text report with memory columns ends its table with: the one memory unit.
inline constexpr std::string_view memory_unit_note =
    "  memory: in memory units (--activation, --parameters; default 1 = one microbatch's "
    "activations of one stage)\n";

/// `memory_unit_note` where the costs are a rank's share of the model (`compare` without
/// per-stage costs): one activation is what a microbatch keeps on a rank, 1/V per stage.
inline constexpr std::string_view rank_share_memory_note =
    "  memory: in memory units (--activation, --parameters; default 1 = one microbatch's "
    "activations on a rank, 1/V per stage)\n";

/// The note instead of `memory_unit_note` where the costs come from a model file (`--model`),
/// whose activations and parameters are in GB.
inline constexpr std::string_view model_memory_note =
    "  memory: in GB, the model file's unit (--model)\n";

/// `model_memory_note` or `memory_unit_note`.
[[nodiscard]] inline std::string_view memory_note(bool from_model) {
    return from_model ? model_memory_note : memory_unit_note;
}

/// A number for people: up to 6 significant digits (`12.5`, `0.333333`).
[[nodiscard]] inline std::string format_number(double v) {
    return ppsched::detail::text::general_number(v);
}

/// A number for JSON: the shortest text that reads back to the same double; `null` for an
/// infinity or NaN, which JSON cannot hold (an unbounded gap).
[[nodiscard]] inline std::string json_number(double v) {
    return std::isfinite(v) ? ppsched::detail::text::shortest_number(v) : std::string("null");
}

/// `s` as a JSON string literal.
[[nodiscard]] inline std::string json_string(std::string_view s) {
    return ppsched::detail::text::json_string(s);
}

/// Appends `  label  value  note`: the label in a field of 15 characters, the value in one of
/// 12 (at least one space before the note).
inline void append_labelled_row(std::string& out, std::string_view label, std::string_view value,
                                std::string_view note = {}) {
    out += "  ";
    out += label;
    out += std::string(label.size() < 15 ? 15 - label.size() : 1, ' ');
    out += value;
    if (!note.empty()) {
        out += std::string(value.size() < 12 ? 12 - value.size() : 1, ' ');
        out += note;
    }
    out += '\n';
}

/// Appends `rows` (the first one the headings) as columns: each cell left-aligned in its
/// column's width, two spaces before the first column, one between columns, no trailing space.
template <std::size_t N>
void append_aligned_table(std::string& out, const std::vector<std::array<std::string, N>>& rows) {
    std::array<std::size_t, N> width{};
    for (const auto& r : rows)
        for (std::size_t i = 0; i < N; ++i)
            width[i] = r[i].size() > width[i] ? r[i].size() : width[i];
    for (const auto& r : rows) {
        std::string line = " ";
        for (std::size_t i = 0; i < N; ++i)
            line += " " + r[i] + std::string(width[i] - r[i].size(), ' ');
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out += line + "\n";
    }
}

/// Appends the summary of a simulation as labelled rows: makespan, ideal time, bubble ratio
/// and bubble.
inline void append_simulation_summary(std::string& out, const simulation& sim) {
    append_labelled_row(out, "makespan", format_number(sim.makespan));
    append_labelled_row(out, "ideal", format_number(sim.ideal),
                        "total compute " + format_number(sim.total_compute) + " / " +
                            std::to_string(sim.ranks.size()) +
                            (sim.ranks.size() == 1 ? " rank" : " ranks"));
    append_labelled_row(out, "bubble ratio", format_number(sim.bubble_ratio),
                        "(makespan - ideal) / ideal");
    append_labelled_row(out, "bubble", format_number(100 * sim.bubble_fraction) + " %",
                        "idle / (ranks x makespan)");
}

} // namespace ppsched::cli
