#pragma once
/// \file io/step_table.hpp
/// The step table of PyTorch's `_format_pipeline_order`: one line per step, one column per rank,
/// optionally marking one step with `<-- ERROR HERE`. Byte-for-byte the same text as PyTorch
/// prints, so tables can be compared with PyTorch's logs and error messages. `format_report`
/// prints a validation report above the table, marking the step of its first violation.

#include <cstddef>
#include <optional>
#include <ranges>
#include <string>
#include <type_traits>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/algorithms/validation_report.hpp"
#include "ppsched/order.hpp"

namespace ppsched {
namespace detail {

/// Number of decimal digits of `n` (at least 1).
[[nodiscard]] inline std::size_t decimal_digits(std::size_t n) noexcept {
    std::size_t d = 1;
    while (n >= 10) {
        n /= 10;
        ++d;
    }
    return d;
}

/// Appends `text` left-aligned in a field of `width` characters.
inline void append_padded(std::string& out, const std::string& text, std::size_t width) {
    out += text;
    if (text.size() < width) out.append(width - text.size(), ' ');
}

/// `io::format_step_table` for a range whose rows are lvalues (so iterators into all rows can be
/// held at once).
template <order_range R>
[[nodiscard]] std::string format_step_table_of_lvalue_rows(const R& rows,
                                                           std::optional<std::size_t> error_step) {
    using row_iterator =
        std::ranges::iterator_t<const std::remove_cvref_t<std::ranges::range_reference_t<const R>>>;
    // Pass 1: column widths and the number of steps. Cells are rendered into one reused buffer,
    // so memory stays O(ranks) however long the order is.
    std::string cell;
    std::vector<std::size_t> lengths; // per rank: longest action text
    std::size_t steps = 0;
    for (const auto& row : rows) {
        std::size_t longest = 0, n = 0;
        for (const auto& s : row) {
            ++n;
            if (const action* a = ppsched::detail::slot_action(s)) {
                cell.clear();
                append_to(cell, *a);
                if (cell.size() > longest) longest = cell.size();
            }
        }
        lengths.push_back(longest);
        if (n > steps) steps = n;
    }
    const std::size_t ranks = lengths.size();
    const std::size_t digits = decimal_digits(steps == 0 ? 0 : steps - 1);
    const std::size_t label_width = 5 + digits; // "Step " + digits
    std::vector<std::size_t> widths(ranks);
    for (std::size_t r = 0; r < ranks; ++r)
        widths[r] = lengths[r] > label_width ? lengths[r] : label_width;

    std::string out;
    out.append(label_width + 2, ' ');
    for (std::size_t r = 0; r < ranks; ++r) {
        if (r > 0) out += ' ';
        cell = "Rank ";
        cell += std::to_string(r);
        append_padded(out, cell, widths[r]);
    }
    out += '\n';

    // Pass 2: walk all rows in step with one iterator per rank.
    std::vector<row_iterator> at, end;
    for (const auto& row : rows) {
        at.push_back(std::ranges::begin(row));
        end.push_back(std::ranges::end(row));
    }
    for (std::size_t i = 0; i < steps; ++i) {
        const std::string number = std::to_string(i);
        out += "Step ";
        out.append(digits - number.size(), '0');
        out += number;
        out += ": ";
        for (std::size_t r = 0; r < ranks; ++r) {
            if (r > 0) out += ' ';
            cell.clear();
            if (at[r] != end[r]) {
                if (const action* a = ppsched::detail::slot_action(*at[r])) append_to(cell, *a);
                ++at[r];
            }
            append_padded(out, cell, widths[r]);
        }
        if (error_step && *error_step == i) out += " <-- ERROR HERE";
        out += '\n';
    }
    return out;
}

} // namespace detail

namespace io {

/// PyTorch's step table of any order range (`_format_pipeline_order`).
///
/// Layout (PyTorch's exactly): a header line of `Rank <r>` labels after a blank margin as wide as
/// a step label plus two; then for each step `Step <i>: ` (i zero-padded to the digits of the last
/// step) followed by one cell per rank, left-aligned and separated by one space; every line ends
/// with `\n`, trailing padding included. An idle slot, or a step past the end of a shorter rank,
/// is an empty cell. A column is as wide as its longest action or the step label, whichever is
/// wider (PyTorch does not count the `Rank <r>` label, so a wide label can shift the header).
/// When `error_step` names a step, that line ends with ` <-- ERROR HERE`.
///
/// Beyond PyTorch (which raises on these): an order with fewer steps than ranks still gets every
/// column, and an empty order prints the header alone.
/// Complexity: linear in ranks x steps (the size of the table); extra memory O(ranks).
template <order_range R>
[[nodiscard]] std::string format_step_table(const R& rows,
                                            std::optional<std::size_t> error_step = {}) {
    using row_reference = std::ranges::range_reference_t<const R>;
    if constexpr (!std::is_lvalue_reference_v<row_reference>) {
        // Rows made on the fly (a transforming view): pass 2 keeps iterators into every row at
        // once, so copy them first.
        std::vector<rank_slots> copy;
        for (const auto& row : rows) {
            rank_slots r;
            for (const auto& s : row) {
                const action* a = ppsched::detail::slot_action(s);
                r.push_back(a ? slot(*a) : slot());
            }
            copy.push_back(std::move(r));
        }
        return format_step_table(copy, error_step);
    } else {
        return ppsched::detail::format_step_table_of_lvalue_rows(rows, error_step);
    }
}

} // namespace io

/// The report followed by PyTorch's step table of `rows`, with `<-- ERROR HERE` on the step of
/// the first violation that has a position (run time only).
template <order_range R>
[[nodiscard]] std::string format_report(const R& rows, const validation_report& report) {
    std::optional<std::size_t> error_step;
    for (const auto& v : report) {
        if (v.step >= 0) {
            error_step = static_cast<std::size_t>(v.step);
            break;
        }
    }
    return to_string(report) + (report.valid() ? "\n" : "") +
           io::format_step_table(rows, error_step);
}

} // namespace ppsched
