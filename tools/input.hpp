#pragma once
/// \file input.hpp
/// Reading the inputs of `ppsched` subcommands: files or standard input, with the checks every
/// subcommand wants (a directory, an empty file, an order without actions are bad input).

#include <filesystem>
#include <string>
#include <system_error>

#include <ppsched/error.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/order.hpp>

#include "cli.hpp"

namespace ppsched::cli {

/// The name of `path` in messages (`<stdin>` for `-`).
[[nodiscard]] inline std::string source_name(const std::string& path) {
    return path == "-" ? "<stdin>" : printable(path, 1024);
}

/// The whole text of `path` ('-': standard input), without a UTF-8 byte order mark (then
/// `had_mark` is set, where given). Throws `parse_error` when it cannot be read, is a directory
/// or is empty.
[[nodiscard]] inline std::string read_input(const std::string& path, bool* had_mark = nullptr) {
    std::error_code ec;
    if (path != "-" && std::filesystem::is_directory(path, ec))
        throw parse_error(printable(path, 1024) + ": is a directory, expected a file", 0, 0);
    std::string text = path == "-" ? read_stdin() : io::read_file(path);
    if (path != "-") files_read().push_back(path);
    // A UTF-8 byte order mark (some editors on Windows write one) is not part of the text.
    const bool mark = text.starts_with("\xEF\xBB\xBF");
    if (mark) text.erase(0, 3);
    if (had_mark != nullptr) *had_mark = mark;
    if (text.empty()) throw parse_error(source_name(path) + ": empty file", 0, 0);
    return text;
}

/// Throws `parse_error` for rows without a single action: almost certainly the wrong file (a
/// blank one).
template <order_range R>
void expect_actions(const R& rows, const std::string& source) {
    for (const auto& row : rows)
        for (const auto& s : row)
            if (ppsched::detail::slot_action(s) != nullptr) return;
    throw parse_error(source + ": no actions (expected one row per rank of actions like 0F0)", 0,
                      0);
}

/// The CSV order in `path` ('-': standard input), configuration inferred from its actions.
/// Throws `parse_error` for unreadable or malformed input and for an order without actions.
[[nodiscard]] inline order read_order(const std::string& path) {
    const std::string source = source_name(path);
    order o = io::read_csv(read_input(path), source);
    expect_actions(o, source);
    return o;
}

} // namespace ppsched::cli
