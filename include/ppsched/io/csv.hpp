#pragma once
/// \file io/csv.hpp
/// PyTorch's CSV form of a pipeline order (`_dump_csv` / `_load_csv`): one row per rank, one
/// action string per cell, an empty cell is an idle slot. Reads LF and CRLF, writes LF.

#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/error.hpp"
#include "ppsched/infer_config.hpp"
#include "ppsched/order.hpp"

namespace ppsched::io {

/// Reads CSV text into per-rank rows. Throws `parse_error` naming `source`, the 1-based line
/// and column, and what was expected. Complexity: linear in the text.
[[nodiscard]] inline std::vector<rank_slots> read_csv_rows(std::string_view text,
                                                           std::string_view source = "<csv>") {
    std::vector<rank_slots> rows;
    std::size_t line_no = 0, pos = 0;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        if (eol == std::string_view::npos) eol = text.size();
        std::string_view line = text.substr(pos, eol - pos);
        pos = eol + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        rank_slots row;
        std::size_t cell_start = 0;
        while (true) {
            std::size_t comma = line.find(',', cell_start);
            const std::size_t cell_end = comma == std::string_view::npos ? line.size() : comma;
            const std::string_view cell = line.substr(cell_start, cell_end - cell_start);
            if (cell.empty()) {
                row.push_back(slot{});
            } else {
                action a;
                if (auto st = detail::parse_action(cell, a); !st) {
                    const std::size_t column = cell_start + st.column + 1;
                    throw parse_error(std::string(source) + ":" + std::to_string(line_no) + ":" +
                                          std::to_string(column) + ": invalid action '" +
                                          std::string(cell) + "': expected " + st.what,
                                      line_no, column);
                }
                row.push_back(a);
            }
            if (comma == std::string_view::npos) break;
            cell_start = comma + 1;
        }
        // A blank line is a rank with no slots, except at the very end of the text.
        if (line.empty()) row.clear();
        rows.push_back(std::move(row));
    }
    return rows;
}

/// Reads CSV text into an order. The configuration is inferred from the actions unless given.
/// Throws `parse_error` for bad text (an empty text too: it names no rank) and `config_error`
/// when `cfg` has a different rank count.
[[nodiscard]] inline order read_csv(std::string_view text, std::string_view source = "<csv>") {
    auto rows = read_csv_rows(text, source);
    if (rows.empty())
        throw parse_error(
            std::string(source) + ":1:1: expected at least one row (the text is empty)", 1, 1);
    const config cfg = infer_config(rows);
    return order(cfg, std::move(rows));
}
[[nodiscard]] inline order read_csv(std::string_view text, const config& cfg,
                                    std::string_view source = "<csv>") {
    auto rows = read_csv_rows(text, source);
    PPSCHED_EXPECTS(rows.size() == static_cast<std::size_t>(cfg.ranks),
                    "ppsched::io::read_csv: ", std::string(source), " has ", rows.size(),
                    " rows but the configuration has ", cfg.ranks, " ranks");
    return order(cfg, std::move(rows));
}

/// Reads a whole file. Throws `parse_error` (line 0) when the file cannot be opened.
[[nodiscard]] inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw parse_error(path + ": cannot open file for reading", 0, 0);
    std::ostringstream ss;
    ss << in.rdbuf();
    return std::move(ss).str();
}

/// Reads a CSV file into an order (configuration inferred).
[[nodiscard]] inline order read_csv_file(const std::string& path) {
    return read_csv(read_file(path), path);
}

/// Writes any order range as CSV text (LF line ends, one row per rank).
template <order_range R>
[[nodiscard]] std::string write_csv(const R& rows) {
    std::string out;
    for (const auto& row : rows) {
        bool first = true;
        for (const auto& s : row) {
            if (!first) out += ',';
            first = false;
            if (const action* a = detail::slot_action(s)) append_to(out, *a);
        }
        out += '\n';
    }
    return out;
}

} // namespace ppsched::io
