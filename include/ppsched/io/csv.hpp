#pragma once
/// \file io/csv.hpp
/// PyTorch's CSV form of a pipeline order (`_dump_csv` / `_load_csv`): one row per rank, one
/// action string per cell, an empty cell is an idle slot. Reads LF, CRLF and CR, writes LF.

#include <algorithm>
#include <array>
#include <cstddef>
#include <fstream>
#include <istream>
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

/// Python's `str.strip()` whitespace (`str.isspace()`), which PyTorch's `_Action.from_str`
/// removes from a cell: the bytes of the one whitespace character `s` starts with (`at_end`:
/// ends with), in UTF-8, or 0. ASCII space, \t \n \v \f \r and \x1c-\x1f; U+0085, U+00A0,
/// U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F and U+3000.
[[nodiscard]] constexpr std::size_t cell_space(std::string_view s, bool at_end) noexcept {
    auto byte = [&](std::size_t from_edge, std::size_t n) {
        return static_cast<unsigned>(
            static_cast<unsigned char>(s[at_end ? s.size() - n + from_edge : from_edge]));
    };
    if (s.empty()) return 0;
    const unsigned a = byte(0, 1);
    if (a == ' ' || (a >= '\t' && a <= '\r') || (a >= 0x1c && a <= 0x1f)) return 1;
    if (s.size() >= 2 && byte(0, 2) == 0xC2 && (byte(1, 2) == 0x85 || byte(1, 2) == 0xA0)) return 2;
    if (s.size() >= 3) {
        const unsigned c = byte(0, 3) << 16 | byte(1, 3) << 8 | byte(2, 3);
        if (c == 0xE19A80 || (c >= 0xE28080 && c <= 0xE2808A) || c == 0xE280A8 || c == 0xE280A9 ||
            c == 0xE280AF || c == 0xE2819F || c == 0xE38080)
            return 3;
    }
    return 0;
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
/// slot. LF, CRLF and CR line ends. A blank line is a rank without actions, but blank lines at
/// the end of the text are ignored (an editor's trailing newlines). Refused: a quote after
/// leading spaces (PyTorch refuses it too), and, stricter than PyTorch, text after a quoted
/// cell's closing quote (whitespace there is stripped) and a quoted cell spanning lines (PyTorch's
/// pattern matches only the start of a cell, so `"0F0"x` and a quoted `0F0<newline>0F1` load there
/// as 0F0: a typo silently dropped). Throws `parse_error` naming `source`, the 1-based line and
/// column, and what was expected; a cell is quoted in messages with control characters escaped and
/// cut to 80 characters. Complexity: linear in the text.
[[nodiscard]] inline std::vector<rank_slots> read_csv_rows(std::string_view text,
                                                           std::string_view source = "<csv>") {
    std::vector<rank_slots> rows;
    std::size_t line_no = 0, pos = 0;
    std::string unquoted;
    while (pos < text.size()) {
        // A line ends at LF, CRLF or a lone CR, as in Python's csv module.
        std::size_t eol = text.find_first_of("\r\n", pos);
        if (eol == std::string_view::npos) eol = text.size();
        std::string_view line = text.substr(pos, eol - pos);
        pos = eol + (eol + 1 < text.size() && text[eol] == '\r' && text[eol + 1] == '\n' ? 2 : 1);
        ++line_no;
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
                                      "a quoted cell without its closing '\"' on this line "
                                      "(a cell may not span lines: one line per rank)");
                // Whitespace after the closing quote is kept by csv.reader and stripped by
                // _Action.from_str: allowed; any other text is refused.
                for (std::size_t n; (n = detail::cell_space(line.substr(i), false)) > 0;) i += n;
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
            for (std::size_t n; (n = detail::cell_space(cell.substr(lead), false)) > 0;) lead += n;
            cell.remove_prefix(lead);
            text_start += lead;
            for (std::size_t n; (n = detail::cell_space(cell, true)) > 0;) cell.remove_suffix(n);
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
        // A blank line is a rank with no slots (as Python's csv.reader reads it)...
        if (line.empty()) row.clear();
        rows.push_back(std::move(row));
    }
    // ... except blank lines at the end of the text: an editor's trailing newlines, not ranks.
    while (!rows.empty() && rows.back().empty()) rows.pop_back();
    return rows;
}

/// The sizes to read an order with (`inferable_sizes`): stages (a multiple of the ranks) and
/// microbatches.
struct inferred_sizes {
    long long stages = 1;
    long long microbatches = 1;
};

/// The stages and microbatches to read `rows` with, where they are inferred from its actions
/// (`infer_stages`, `infer_microbatches`; the others are given, and indices beyond them are
/// `validate`'s business). Sizing tables by stages x microbatches must stay linear in the
/// file (at most 4 x its action parts, or 2^16 cells, which are harmless), so:
/// 1. the sizes its forwards show, when they fit that budget: microbatches = how many
///    microbatch indices run their forward on at least half as many stages as the most-run
///    one, stages = the highest stage running at least half as many forwards as the busiest.
///    For a valid order (any placement: under `dual` each microbatch runs on half the
///    stages) these are its highest indices + 1; for an order with a typo (0B17 among 8
///    microbatches, or 0F17 for 0F7) they are the sizes the other actions show, so
///    `validate` names the action out of range instead of reading 18 microbatches;
/// 2. else (no forwards, say) its highest indices + 1, if they fit the budget;
/// 3. else `parse_error`, naming the cell with the largest index.
/// `ranks`: the pipeline's ranks (0: one per row); every rank holds as many stages.
/// Complexity: O(n log n) in the actions (the forwards' indices are sorted).
template <order_range R>
[[nodiscard]] inferred_sizes inferable_sizes(const R& rows, std::string_view source = "<csv>",
                                             bool infer_stages = true,
                                             bool infer_microbatches = true, int ranks = 0) {
    long long parts = 0, max_stage_seen = -1, max_mb = -1, row_count = 0;
    std::size_t stage_row = 0, stage_cell = 0, mb_row = 0, mb_cell = 0;
    std::vector<int> forward_stages, forward_mbs;
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
                    if (x.kind() == action_kind::forward) {
                        forward_stages.push_back(x.stage());
                        forward_mbs.push_back(x.microbatch());
                    }
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
    const auto round_up = [P](long long top) { return top < 0 ? P : (top + P) / P * P; };
    // The stages are rounded up to a multiple of the ranks, as `infer_config` does.
    const long long S = infer_stages ? round_up(max_stage_seen) : 1;
    const long long M = infer_microbatches ? (max_mb < 0 ? 1 : max_mb + 1) : 1;
    if (max_stage_seen < 0) return {S, M};
    // (At most 2^31 - 1 cells: both sizes then fit an int, whatever the text's length.)
    const long long budget = std::min(std::max(4 * parts, 1LL << 16), (1LL << 31) - 1);
    if (!forward_stages.empty()) {
        // Each value's count, sorted once; then those counted at least half as often as the
        // most counted one.
        struct run {
            int value;
            long long count;
        };
        const auto runs_of = [](std::vector<int>& v) {
            std::sort(v.begin(), v.end());
            std::vector<run> out;
            long long most = 0;
            for (std::size_t i = 0, j = 0; i < v.size(); i = j) {
                while (j < v.size() && v[j] == v[i]) ++j;
                out.push_back({v[i], static_cast<long long>(j - i)});
                most = std::max(most, out.back().count);
            }
            std::erase_if(out, [most](const run& x) { return 2 * x.count < most; });
            return out;
        };
        const std::vector<run> stages = runs_of(forward_stages); // sorted: the last is the top
        const long long top = stages.back().value;
        const auto microbatches = static_cast<long long>(runs_of(forward_mbs).size());
        const long long Sc = infer_stages ? round_up(top) : S;
        const long long Mc = infer_microbatches ? microbatches : M;
        if (Sc * Mc <= budget) return {Sc, Mc};
    }
    if (S * M <= budget) return {S, M};
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
            (M == 1 ? " microbatch" : " microbatches") + " has at least " + std::to_string(S * M) +
            " actions, this one has " + std::to_string(parts) +
            (ranks > 0 && ranks != row_count ? " (" + std::to_string(row_count) + " rows for " +
                                                   std::to_string(ranks) + " ranks: check --ranks)"
                                             : std::string()),
        row + 1, 0);
}

/// Reads CSV text into an order. The configuration is inferred from the actions unless given
/// (`inferable_sizes`, then `infer_config`). Throws `parse_error` for bad text (an empty text
/// too: it names no rank) and `config_error` when `cfg` has a different rank count.
[[nodiscard]] inline order read_csv(std::string_view text, std::string_view source = "<csv>") {
    auto rows = read_csv_rows(text, source);
    if (rows.empty())
        throw parse_error(std::string(source) +
                              ":1:1: expected at least one row (the text has none: it is "
                              "empty or only blank lines)",
                          1, 1);
    const inferred_sizes sizes = inferable_sizes(rows, source);
    config cfg = infer_config(rows);
    if (sizes.stages != cfg.num_stages() || sizes.microbatches != cfg.microbatches) {
        // Read with the sizes its forwards show (a stray index is out of range of them).
        // (inferable_sizes keeps both within an int.)
        cfg.stages_per_rank = static_cast<int>(sizes.stages / cfg.ranks);
        cfg.microbatches = static_cast<int>(sizes.microbatches);
        ppsched::detail::choose_placement(rows, cfg);
    }
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

/// The most `read_file` and `read_stream` read by default (1 GiB): a larger input (a wrong
/// path such as /dev/zero, a runaway generator) is refused instead of filling the memory.
inline constexpr std::size_t default_max_input_bytes = std::size_t{1} << 30;

/// Reads all of `in` (named `name` in messages). Throws `parse_error` (line 0) when the stream
/// fails or holds more than `max_bytes`; never returns a part of the input (a failed read,
/// out of memory included, is an error, not the end of the text).
[[nodiscard]] inline std::string read_stream(std::istream& in, std::string_view name,
                                             std::size_t max_bytes = default_max_input_bytes) {
    std::string text;
    std::vector<char> buffer(std::size_t{1} << 16);
    while (in.read(buffer.data(), static_cast<std::streamsize>(buffer.size())) || in.gcount() > 0) {
        const auto n = static_cast<std::size_t>(in.gcount());
        if (n > max_bytes - text.size())
            throw parse_error(ppsched::detail::printable(name, 1024) + ": larger than the " +
                                  std::to_string(max_bytes) + " bytes ppsched reads",
                              0, 0);
        text.append(buffer.data(), n);
    }
    if (in.bad()) throw parse_error(ppsched::detail::printable(name, 1024) + ": read error", 0, 0);
    return text;
}

/// Reads a whole file (see `read_stream`). Throws `parse_error` (line 0) when the file cannot be
/// opened or read, or is larger than `max_bytes`.
[[nodiscard]] inline std::string read_file(const std::string& path,
                                           std::size_t max_bytes = default_max_input_bytes) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw parse_error(ppsched::detail::printable(path, 1024) + ": cannot open file for reading",
                          0, 0);
    return read_stream(in, path, max_bytes);
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
