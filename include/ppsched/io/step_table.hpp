#pragma once
/// \file io/step_table.hpp
/// The step table of PyTorch's `_format_pipeline_order`: one line per step, one column per rank,
/// optionally marking one step with `<-- ERROR HERE`. Byte-for-byte the same text as PyTorch
/// prints, so tables can be compared with PyTorch's logs and error messages.

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ppsched/action.hpp"
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
/// Complexity: linear in ranks x steps (the size of the table).
template <order_range R>
[[nodiscard]] std::string format_step_table(const R& rows,
                                            std::optional<std::size_t> error_step = {}) {
    // Render every cell once; the widths depend on all of them.
    std::vector<std::vector<std::string>> cells;
    std::size_t steps = 0;
    for (const auto& row : rows) {
        std::vector<std::string> column;
        for (const auto& s : row) {
            const action* a = ppsched::detail::slot_action(s);
            column.push_back(a ? to_string(*a) : std::string{});
        }
        if (column.size() > steps) steps = column.size();
        cells.push_back(std::move(column));
    }

    const std::size_t digits = ppsched::detail::decimal_digits(steps == 0 ? 0 : steps - 1);
    const std::size_t label_width = 5 + digits; // "Step " + digits
    std::vector<std::size_t> widths(cells.size(), label_width);
    for (std::size_t r = 0; r < cells.size(); ++r)
        for (const auto& c : cells[r])
            if (c.size() > widths[r]) widths[r] = c.size();

    std::string out;
    out.append(label_width + 2, ' ');
    for (std::size_t r = 0; r < cells.size(); ++r) {
        if (r > 0) out += ' ';
        ppsched::detail::append_padded(out, "Rank " + std::to_string(r), widths[r]);
    }
    out += '\n';

    const std::string empty;
    for (std::size_t i = 0; i < steps; ++i) {
        const std::string number = std::to_string(i);
        out += "Step ";
        out.append(digits - number.size(), '0');
        out += number;
        out += ": ";
        for (std::size_t r = 0; r < cells.size(); ++r) {
            if (r > 0) out += ' ';
            ppsched::detail::append_padded(out, i < cells[r].size() ? cells[r][i] : empty,
                                           widths[r]);
        }
        if (error_step && *error_step == i) out += " <-- ERROR HERE";
        out += '\n';
    }
    return out;
}

} // namespace io
} // namespace ppsched
