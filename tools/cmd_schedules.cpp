// `ppsched schedules`: lists every schedule of the registry with its names, placement, default
// stages per rank and constraints.

#include <algorithm>
#include <span>
#include <string>
#include <vector>

#include <ppsched/registry.hpp>

#include "cli.hpp"
#include "commands.hpp"

namespace ppsched::cli {

namespace {

constexpr option schedules_options[] = {
    {"--long", "", "also print each schedule's idea and paper, other names and parameters"},
};

constexpr command_help schedules_help{
    .name = "schedules",
    .arguments = "",
    .summary = "List the schedules 'ppsched generate' knows: PyTorch's name (accepted\n"
               "case-insensitively, as is the C++ name), the C++ policy type, the stage\n"
               "placement, the default stages per rank, and what a configuration must satisfy.",
    .options = schedules_options,
};

} // namespace

int cmd_schedules(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, schedules_help);
    if (a.help_requested()) {
        out.out = help_text(schedules_help);
        return exit_ok;
    }
    a.expect_positionals(0, 0, "");
    const bool long_form = a.has("--long");

    std::vector<std::vector<std::string>> table{
        {"NAME", "C++ TYPE", "PLACEMENT", "STAGES/RANK", "CONSTRAINTS"}};
    for (const schedule_entry& e : builtin_schedules().entries())
        table.push_back({e.pytorch_name, "ppsched::" + e.name,
                         std::string(to_string_view(e.placement)),
                         std::to_string(e.default_stages_per_rank), e.constraints});
    std::vector<std::size_t> width(table[0].size(), 0);
    for (const auto& row : table)
        for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());

    const auto entries = builtin_schedules().entries();
    for (std::size_t i = 0; i < table.size(); ++i) {
        std::string line;
        for (std::size_t c = 0; c < table[i].size(); ++c) {
            line += table[i][c];
            if (c + 1 < table[i].size())
                line += std::string(width[c] - table[i][c].size() + 2, ' ');
        }
        out.out += line + "\n";
        if (long_form && i > 0) {
            const schedule_entry& e = entries[i - 1];
            out.out += "    " + e.summary + "\n";
            for (const std::string& alias : e.aliases) out.out += "    also named " + alias + "\n";
            for (const schedule_param_info& p : e.parameters)
                out.out += "    parameter " + p.name + ": " + p.description + "\n";
        }
    }
    return exit_ok;
}

} // namespace ppsched::cli
