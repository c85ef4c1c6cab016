// `ppsched trace (NAME --ranks P --microbatches M [--stages-per-rank V] | --csv FILE) [costs]
// [--lower] [--steps] --output FILE.json`: writes the simulated timeline in the Chrome trace
// event format (Perfetto, chrome://tracing) and prints its summary.

#include <array>
#include <span>
#include <string>

#include <ppsched/io/chrome_trace.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "output_file.hpp"
#include "timeline_source.hpp"

namespace ppsched::cli {

namespace {

constexpr std::array<option, 2> trace_own_options{{
    {"--output", "FILE", "the JSON file to write (required; '-' writes it to stdout)"},
    {"--us-per-unit", "X", "trace microseconds per simulated time unit (default 1000)"},
}};

constexpr auto trace_options = with_timeline_options(trace_own_options);

constexpr command_help trace_help{
    .name = "trace",
    .arguments = "NAME | --csv FILE",
    .summary =
        "Write the simulated timeline of a pipeline order in the Chrome trace event format\n"
        "(open it in https://ui.perfetto.dev or chrome://tracing): a process per rank with a\n"
        "compute thread and a communication thread, one complete event per action with its\n"
        "simulated start and duration, and a flow arrow from each send to its receive.",
    .options = trace_options,
    .details = "Without --lower the arrows go from each action to its consumer on another rank. A\n"
               "SEND is shown when issued, a RECV when its data arrives (args.posted: when it was\n"
               "posted). The file is written whole or not at all. Exit status 1 when the order\n"
               "deadlocks.",
};

} // namespace

int cmd_trace(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, trace_help);
    if (a.help_requested()) {
        out.out = help_text(trace_help);
        return exit_ok;
    }
    const auto path = a.value("--output");
    if (!path) throw usage_error("missing option --output FILE.json");
    io::trace_options opts;
    if (auto v = a.value("--us-per-unit")) {
        opts.microseconds_per_unit = parse_positive(*v, "--us-per-unit");
    }
    const loaded_timeline t = load_timeline(a);
    if (!t.problem.empty()) {
        out.err = "ppsched: trace: " + ppsched::io::chart_title(t.chart) + ": " + t.problem + "\n";
        return exit_failure;
    }
    opts.name = ppsched::io::chart_title(t.chart);
    const std::string json = io::write_chrome_trace(t.chart.sim, t.chart.cfg, opts);
    if (*path == "-") {
        out.out = json;
        return exit_ok;
    }
    write_output_file(*path, json);
    out.out = timeline_summary(t) + "\ntrace: " + *path +
              " (open it in https://ui.perfetto.dev or chrome://tracing)\n";
    return exit_ok;
}

} // namespace ppsched::cli
