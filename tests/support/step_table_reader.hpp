#pragma once
// Reads PyTorch's step table (`_format_pipeline_order`, as in conformance/torch/misc/*.txt) back
// into an order, so the tests can take PyTorch's intermediate results as inputs.
// Columns are found from where cells start: each column holds at least one action.

#include <ppsched/action.hpp>
#include <ppsched/infer_config.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/order.hpp>

#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ppsched_test {

/// The rows of a step table; idle cells become idle slots, trailing idle slots are dropped.
inline std::vector<ppsched::rank_slots> read_step_table(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    if (lines.empty()) throw std::runtime_error("empty step table");
    int ranks = 0;
    for (std::size_t p = lines[0].find("Rank "); p != std::string::npos;
         p = lines[0].find("Rank ", p + 1))
        ++ranks;
    std::set<std::size_t> starts;
    std::vector<std::string> body;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const std::size_t colon = lines[i].find(": ");
        if (lines[i].rfind("Step ", 0) != 0 || colon == std::string::npos)
            throw std::runtime_error("not a step line: " + lines[i]);
        body.push_back(lines[i].substr(colon + 2));
        const std::string& b = body.back();
        for (std::size_t c = 0; c < b.size(); ++c)
            if (b[c] != ' ' && (c == 0 || b[c - 1] == ' ')) starts.insert(c);
    }
    if (static_cast<int>(starts.size()) != ranks)
        throw std::runtime_error("cannot find one column per rank in the step table");
    const std::vector<std::size_t> col(starts.begin(), starts.end());
    std::vector<ppsched::rank_slots> rows(static_cast<std::size_t>(ranks));
    for (const auto& b : body) {
        for (std::size_t r = 0; r < col.size(); ++r) {
            std::string cell = col[r] < b.size() ? b.substr(col[r]) : std::string();
            cell = cell.substr(0, cell.find(' '));
            if (cell.empty())
                rows[r].push_back(ppsched::slot{});
            else
                rows[r].push_back(ppsched::parse_action(cell));
        }
    }
    for (auto& row : rows)
        while (!row.empty() && row.back().is_idle()) row.pop_back();
    return rows;
}

} // namespace ppsched_test
