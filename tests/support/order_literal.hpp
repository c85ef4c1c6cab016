#pragma once
// Test helper: writes an order as one CSV-like string per rank ("0F0,,0B0"), usable in constant
// expressions, and prints orders row by row for readable failure messages.

#include <ppsched/action.hpp>
#include <ppsched/config.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/order.hpp>

#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ppsched_test {

/// An order for `cfg` from one comma-separated row per rank (an empty cell is an idle slot).
/// Constexpr; a malformed cell fails the constant evaluation (throws at run time).
constexpr ppsched::order order_of(const ppsched::config& cfg,
                                  std::initializer_list<std::string_view> rows) {
    std::vector<ppsched::rank_slots> out;
    for (std::string_view row : rows) {
        ppsched::rank_slots r;
        if (!row.empty()) {
            std::size_t start = 0;
            while (true) {
                const std::size_t comma = row.find(',', start);
                const std::size_t end = comma == std::string_view::npos ? row.size() : comma;
                const std::string_view cell = row.substr(start, end - start);
                if (cell.empty()) {
                    r.push_back(ppsched::slot{});
                } else {
                    ppsched::action a;
                    if (!ppsched::detail::parse_action(cell, a))
                        throw std::invalid_argument("order_of: bad action");
                    r.push_back(a);
                }
                if (comma == std::string_view::npos) break;
                start = comma + 1;
            }
        }
        out.push_back(std::move(r));
    }
    return ppsched::order(cfg, std::move(out));
}

/// The rows of an order as CSV lines (for comparisons that print well).
template <ppsched::order_range R>
std::vector<std::string> csv_rows(const R& rows) {
    std::vector<std::string> out;
    for (const auto& row : rows) {
        std::string line;
        bool first = true;
        for (const auto& s : row) {
            if (!first) line += ',';
            first = false;
            if (const ppsched::action* a = ppsched::detail::slot_action(s))
                ppsched::append_to(line, *a);
        }
        out.push_back(std::move(line));
    }
    return out;
}

} // namespace ppsched_test
