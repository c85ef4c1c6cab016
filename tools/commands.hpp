#pragma once
/// \file commands.hpp
/// The table of `ppsched` subcommands. To add one: write `tools/cmd_<name>.cpp` defining
/// `int cmd_<name>(std::span<const std::string> argv, cli::output& out)`, declare it below and
/// add a row to `commands` (kept in the order `ppsched --help` lists them).

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <ppsched/algorithms/validate.hpp>
#include <ppsched/transport.hpp>

#include "cli.hpp"

namespace ppsched::cli {

/// A subcommand: parses `argv` (the words after its name), appends what it prints to `out`, and
/// returns the exit status. Throws `usage_error`, `ppsched::parse_error` or
/// `ppsched::config_error` for bad usage or input (exit status 2).
using command_function = int (*)(std::span<const std::string> argv, output& out);

int cmd_show(std::span<const std::string> argv, output& out);
int cmd_schedules(std::span<const std::string> argv, output& out);
int cmd_generate(std::span<const std::string> argv, output& out);
int cmd_simulate(std::span<const std::string> argv, output& out);
int cmd_compare(std::span<const std::string> argv, output& out);
int cmd_render(std::span<const std::string> argv, output& out);
int cmd_trace(std::span<const std::string> argv, output& out);
int cmd_timeline(std::span<const std::string> argv, output& out);
int cmd_plan(std::span<const std::string> argv, output& out);
int cmd_tune(std::span<const std::string> argv, output& out);
int cmd_report(std::span<const std::string> argv, output& out);
int cmd_calibrate(std::span<const std::string> argv, output& out);
int cmd_validate(std::span<const std::string> argv, output& out);
int cmd_lower(std::span<const std::string> argv, output& out);

/// The lines `validate` prints for each deadlock cycle of `report` (shared with `lower`).
std::string cycle_lines(const validation_report& report, transport t);
/// The step of `report`'s first violation with a position (for `<-- ERROR HERE`).
std::optional<std::size_t> first_error_step(const validation_report& report);

/// One row of the subcommand table.
struct command {
    std::string_view name;
    std::string_view summary;
    command_function run;
};

/// Every subcommand.
inline constexpr command commands[] = {
    {"show", "print a CSV pipeline order as PyTorch's step table", cmd_show},
    {"validate", "check a CSV pipeline order (compute-only or lowered): every violation, exit 1",
     cmd_validate},
    {"lower", "lower a compute-only CSV order to what PyTorch's runtime executes (sends, FSDP)",
     cmd_lower},
    {"schedules", "list the schedules with their constraints", cmd_schedules},
    {"generate", "print the pipeline order of a schedule for a configuration", cmd_generate},
    {"simulate", "time a schedule or CSV order under a cost model: makespan, bubble, memory",
     cmd_simulate},
    {"compare", "simulate every schedule for a configuration and rank them by makespan",
     cmd_compare},
    {"render", "draw a schedule or CSV order as an SVG Gantt chart and print its summary",
     cmd_render},
    {"trace", "write a simulated timeline as a Chrome trace (Perfetto, chrome://tracing)",
     cmd_trace},
    {"timeline", "print a simulated timeline for a terminal: a line per rank, a letter per time",
     cmd_timeline},
    {"plan", "split a model into pipeline stages jointly with its schedule (layout, order)",
     cmd_plan},
    {"tune", "find the fastest order for per-stage costs and a memory limit, with a lower bound",
     cmd_tune},
    {"report", "write one self-contained interactive HTML page to explore and compare schedules",
     cmd_report},
    {"calibrate", "fit costs to a measured run (profiler traces) and compare its replay with it",
     cmd_calibrate},
};

} // namespace ppsched::cli
