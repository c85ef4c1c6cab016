// `ppsched timeline (NAME --ranks P --microbatches M [--stages-per-rank V] | --csv FILE) [costs]
// [--lower] [--steps] [--width N | --units-per-column X]`: prints the simulated timeline as one
// line per rank, a letter per column of time ('.' when idle).

#include <array>
#include <span>
#include <string>

#include <ppsched/io/text_timeline.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "timeline_source.hpp"

namespace ppsched::cli {

namespace {

constexpr std::array<option, 3> timeline_own_options{{
    {"--width", "N", "at most N columns of time (default 100)"},
    {"--units-per-column", "X",
     "time units per column (default: 1, or what fits --width; finer when the makespan is "
     "under 5 units)"},
    {"--summary", "", "also print the summary (makespan, bubble, peak memory per rank)"},
}};

constexpr auto timeline_options = with_timeline_options(timeline_own_options);

constexpr command_help timeline_help{
    .name = "timeline",
    .arguments = "NAME | --csv FILE",
    .summary = "Print the simulated timeline of a pipeline order for a terminal: one line per\n"
               "rank, one letter per column of time (F, I, W, B, O for an overlapped F+B; lower\n"
               "case on odd stage chunks), '.' when the rank idles.",
    .options = timeline_options,
    .details = "Each column shows the action that computes longest in it. 'ppsched generate\n"
               "--format table' prints the order itself as PyTorch's step table.\n"
               "Exit status 1 when the order deadlocks.",
};

} // namespace

int cmd_timeline(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, timeline_help);
    if (a.help_requested()) {
        out.out = help_text(timeline_help);
        return exit_ok;
    }
    io::text_timeline_options opts;
    opts.width = static_cast<int>(a.integer("--width", 1, 1'000'000, 100));
    if (auto v = a.value("--units-per-column")) {
        if (a.has("--width"))
            throw usage_error("--width and --units-per-column exclude each other");
        opts.units_per_column = parse_positive(*v, "--units-per-column");
    }
    const loaded_timeline t = load_timeline(a);
    if (!t.problem.empty()) {
        out.err =
            "ppsched: timeline: " + ppsched::io::chart_title(t.chart) + ": " + t.problem + "\n";
        return exit_failure;
    }
    if (opts.units_per_column > 0 && t.chart.sim.makespan / opts.units_per_column > 1'000'000)
        throw usage_error("--units-per-column is too small: more than 1000000 columns");
    out.out = ppsched::io::chart_title(t.chart) + "\n" +
              io::format_text_timeline(t.chart.sim, t.chart.cfg, opts);
    if (a.has("--summary")) out.out += "\n" + timeline_summary(t);
    return exit_ok;
}

} // namespace ppsched::cli
