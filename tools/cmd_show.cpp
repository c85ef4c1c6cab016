// `ppsched show FILE.csv`: reads a pipeline order in PyTorch's CSV form and prints PyTorch's
// step table of it.

#include <algorithm>
#include <optional>
#include <span>
#include <string>

#include <ppsched/io/step_table.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "input.hpp"

namespace ppsched::cli {

namespace {

constexpr option show_options[] = {
    {"--error-step", "N", "mark step N with '<-- ERROR HERE', as PyTorch's error messages do"},
};

constexpr command_help show_help{
    .name = "show",
    .arguments = "FILE.csv",
    .summary = "Print a pipeline order (PyTorch's CSV: one row per rank, one action per cell,\n"
               "an empty cell is idle) as PyTorch's step table (steps as rows, ranks as columns).",
    .options = show_options,
    .details = "FILE.csv may be '-' for standard input.",
};

} // namespace

int cmd_show(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, show_help);
    if (a.help_requested()) {
        out.out = help_text(show_help);
        return exit_ok;
    }
    a.expect_positionals(1, 1, "FILE.csv");
    std::optional<std::size_t> error_step;
    if (a.has("--error-step"))
        error_step = static_cast<std::size_t>(
            a.integer("--error-step", 0, static_cast<long long>(1) << 40, 0));

    const order o = read_order(a.positionals()[0]);
    std::size_t steps = 0;
    for (std::size_t r = 0; r < o.num_ranks(); ++r) steps = std::max(steps, o[r].size());
    if (error_step && *error_step >= steps)
        throw usage_error("--error-step " + std::to_string(*error_step) + " is beyond the table (" +
                          std::to_string(steps) +
                          (steps == 1 ? " step: 0" : " steps: 0.." + std::to_string(steps - 1)) +
                          ")");
    out.out = io::format_step_table(o, error_step);
    return exit_ok;
}

} // namespace ppsched::cli
