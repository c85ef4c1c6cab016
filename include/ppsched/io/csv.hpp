#pragma once
/// \file io/csv.hpp
/// PyTorch's CSV form of a pipeline order (`_dump_csv` / `_load_csv`): one row per rank, one
/// action string per cell, an empty cell is an idle slot. Reads LF and CRLF, writes LF.

#include <array>
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

namespace detail {

/// Python's `str.strip()` whitespace, which PyTorch's `_Action.from_str` removes from a cell.
[[nodiscard]] constexpr bool is_cell_space(char c) noexcept {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/// A parse error at `source:line:column` with `message` (the cell text made printable).
[[noreturn]] inline void csv_error(std::string_view source, std::size_t line, std::size_t column,
                                   const std::string& message) {
    throw parse_error(std::string(source) + ":" + std::to_string(line) + ":" +
                          std::to_string(column) + ": " + message,
                      line, column);
}

} // namespace detail

/// Reads CSV text into per-rank rows, as PyTorch's `_load_csv` does (Python's `csv.reader`,
/// then `_Action.from_str` per cell): cells are split at commas; a cell that starts with `"`
/// is quoted (it ends at the next lone `"`, and `""` inside is one `"`); whitespace around a
/// cell's text is ignored (`0F0, 0F1`), and a cell that is empty or only whitespace is an idle
/// slot. LF and CRLF line ends. Not accepted (PyTorch cannot load them either): text after a
/// quoted cell's closing quote, a quote after leading spaces, a quoted cell spanning lines.
/// Throws `parse_error` naming `source`, the 1-based line and column, and what was expected;
/// a cell is quoted in messages with control characters escaped and cut to 80 characters.
/// Complexity: linear in the text.
[[nodiscard]] inline std::vector<rank_slots> read_csv_rows(std::string_view text,
                                                           std::string_view source = "<csv>") {
    std::vector<rank_slots> rows;
    std::size_t line_no = 0, pos = 0;
    std::string unquoted;
    while (pos < text.size()) {
        std::size_t eol = text.find('\n', pos);
        if (eol == std::string_view::npos) eol = text.size();
        std::string_view line = text.substr(pos, eol - pos);
        pos = eol + 1;
        ++line_no;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        rank_slots row;
        std::size_t at = 0;
        while (true) {
            // One cell: [cell_start, at) of the line, `text_start` where its text begins.
            const std::size_t cell_start = at;
            std::string_view cell;
            std::size_t text_start = at;
            if (at < line.size() && line[at] == '"') {
                unquoted.clear();
                std::size_t i = at + 1;
                bool closed = false;
                while (i < line.size()) {
                    if (line[i] == '"') {
                        if (i + 1 < line.size() && line[i + 1] == '"') {
                            unquoted += '"';
                            i += 2;
                            continue;
                        }
                        closed = true;
                        ++i;
                        break;
                    }
                    unquoted += line[i++];
                }
                if (!closed)
                    detail::csv_error(source, line_no, cell_start + 1,
                                      "unterminated quoted cell (a closing '\"' is missing)");
                if (i < line.size() && line[i] != ',')
                    detail::csv_error(source, line_no, i + 1,
                                      "unexpected text after a quoted cell (expected ',' or the "
                                      "end of the line)");
                cell = unquoted;
                text_start = cell_start + 1;
                at = i;
            } else {
                std::size_t comma = line.find(',', at);
                if (comma == std::string_view::npos) comma = line.size();
                cell = line.substr(at, comma - at);
                at = comma;
            }
            // Whitespace around the text is not part of it (Python's str.strip()).
            std::size_t lead = 0;
            while (lead < cell.size() && detail::is_cell_space(cell[lead])) ++lead;
            cell.remove_prefix(lead);
            text_start += lead;
            while (!cell.empty() && detail::is_cell_space(cell.back())) cell.remove_suffix(1);
            if (cell.empty()) {
                row.push_back(slot{});
            } else {
                action a;
                if (auto st = ppsched::detail::parse_action(cell, a); !st) {
                    const std::size_t column = text_start + st.column + 1;
                    detail::csv_error(source, line_no, column,
                                      "invalid action '" + ppsched::detail::printable(cell) +
                                          "': expected " + st.what);
                }
                row.push_back(a);
            }
            if (at >= line.size()) break;
            ++at; // the comma
        }
        // A blank line is a rank with no slots, except at the very end of the text.
        if (line.empty()) row.clear();
        rows.push_back(std::move(row));
    }
    return rows;
}

/// Checks that the indices of `rows` could belong to a valid order of this size, before a
/// configuration is inferred from them (which sizes tables by stages x microbatches): a valid
/// order naming stage S - 1 and microbatch M - 1 runs every (stage, microbatch) it owns, so it
/// has at least S x M compute parts (S x M / 2 forwards and as many backwards with two
/// directions). `infer_stages`, `infer_microbatches`: which of the two are inferred (the
/// others are given, and indices beyond them are `validate`'s business). Throws `parse_error`
/// naming the cell with the largest index. Complexity: linear in the slots.
/// `ranks`: the pipeline's ranks (0: one per row); every rank holds as many stages.
template <order_range R>
void expect_inferable_indices(const R& rows, std::string_view source = "<csv>",
                              bool infer_stages = true, bool infer_microbatches = true,
                              int ranks = 0) {
    long long parts = 0, max_stage_seen = -1, max_mb = -1, row_count = 0;
    std::size_t stage_row = 0, stage_cell = 0, mb_row = 0, mb_cell = 0;
    std::size_t r = 0;
    for (const auto& row : rows) {
        std::size_t i = 0;
        for (const auto& s : row) {
            if (const action* a = ppsched::detail::slot_action(s)) {
                std::array<action, 2> p;
                const int n = a->parts(p);
                for (int k = 0; k < n; ++k) {
                    const action& x = p[static_cast<std::size_t>(k)];
                    ++parts;
                    if (x.stage() > max_stage_seen) {
                        max_stage_seen = x.stage();
                        stage_row = r;
                        stage_cell = i;
                    }
                    if (x.microbatch() > max_mb) {
                        max_mb = x.microbatch();
                        mb_row = r;
                        mb_cell = i;
                    }
                }
            }
            ++i;
        }
        ++r;
    }
    row_count = static_cast<long long>(r);
    const long long P = ranks > 0 ? ranks : (row_count > 0 ? row_count : 1);
    // The stages are rounded up to a multiple of the ranks, as `infer_config` does.
    const long long S = infer_stages ? (max_stage_seen + P) / P * P : 1;
    const long long M = infer_microbatches ? max_mb + 1 : 1;
    if (S * M <= parts || max_stage_seen < 0) return;
    if (ranks > 0 && ranks != row_count && infer_stages && (max_stage_seen + 1) * M <= parts)
        // The file's own indices fit its size: the given rank count is what does not.
        throw parse_error(std::string(source) + ": " + std::to_string(parts) +
                              (parts == 1 ? " action" : " actions") + " in " +
                              std::to_string(row_count) + (row_count == 1 ? " row" : " rows") +
                              ", too few for " + std::to_string(P) + " ranks: a valid order of " +
                              std::to_string(S) + " stages and " + std::to_string(M) +
                              (M == 1 ? " microbatch" : " microbatches") + " has at least " +
                              std::to_string(S * M) + " actions (check --ranks)",
                          0, 0);
    // Name the index that is further out of reach.
    const bool blame_mb = infer_microbatches && (!infer_stages || M >= S);
    const std::size_t row = blame_mb ? mb_row : stage_row;
    const std::size_t cell = blame_mb ? mb_cell : stage_cell;
    std::string what = blame_mb ? "microbatch " + std::to_string(max_mb)
                                : "stage " + std::to_string(max_stage_seen);
    throw parse_error(
        std::string(source) + ":" + std::to_string(row + 1) + ": cell " + std::to_string(cell + 1) +
            " names " + what + ", more than an order of this size can hold: a valid order with " +
            std::to_string(S) + (S == 1 ? " stage" : " stages") + " and " + std::to_string(M) +
            " microbatches has at least " + std::to_string(S * M) + " actions, this one has " +
            std::to_string(parts) +
            " (give the configuration to check it against: --stages-per-rank, "
            "--microbatches)",
        row + 1, 0);
}

/// Reads CSV text into an order. The configuration is inferred from the actions unless given
/// (then `expect_inferable_indices` first). Throws `parse_error` for bad text (an empty text
/// too: it names no rank) and `config_error` when `cfg` has a different rank count.
[[nodiscard]] inline order read_csv(std::string_view text, std::string_view source = "<csv>") {
    auto rows = read_csv_rows(text, source);
    if (rows.empty())
        throw parse_error(
            std::string(source) + ":1:1: expected at least one row (the text is empty)", 1, 1);
    expect_inferable_indices(rows, source);
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
            if (const action* a = ppsched::detail::slot_action(s)) append_to(out, *a);
        }
        out += '\n';
    }
    return out;
}

} // namespace ppsched::io
