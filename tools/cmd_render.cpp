// `ppsched render (NAME --ranks P --microbatches M [--stages-per-rank V] | --csv FILE) [costs]
// [--lower] [--steps] --output FILE.svg`: draws a pipeline order as an SVG Gantt chart (one row
// per rank, a box per action at its simulated start and end) and prints its summary.

#include <array>
#include <span>
#include <string>

#include <ppsched/algorithms/memory_timeline.hpp>
#include <ppsched/io/svg.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "output_file.hpp"
#include "timeline_source.hpp"

namespace ppsched::cli {

namespace {

constexpr std::array<option, 6> render_own_options{{
    {"--max-boxes", "N", "draw at most N actions (default 1000000); more is an error"},
    {"--output", "FILE", "the SVG file to write (required; '-' writes it to stdout)"},
    {"--title", "TEXT", "the chart's first title line (default: schedule and configuration)"},
    {"--no-labels", "", "no microbatch numbers in the boxes"},
    {"--memory", "", "draw each rank's activation memory over time under the chart"},
    {"--memory-limit", "X",
     "with --memory: a dashed line at activation memory X (activations only: simulate's and "
     "report's --memory-limit add the parameters)"},
}};

constexpr auto render_options = with_timeline_options(render_own_options);

constexpr command_help render_help{
    .name = "render",
    .arguments = "NAME | --csv FILE",
    .summary =
        "Draw a pipeline order as an SVG Gantt chart: one row per rank, each action a box from\n"
        "its simulated start to its end, coloured by kind (F, I, W, B, overlapped F+B) with a\n"
        "shade per stage chunk and labelled with its microbatch; idle time shows as gaps.\n"
        "Prints the summary (makespan, bubble, peak memory per rank) and where the picture is.",
    .options = render_options,
    .details =
        "Hovering a box shows its action, stage, microbatch, start and end. With --lower the\n"
        "sends, receives and FSDP actions appear on a thin lane under each rank. With --steps\n"
        "each action takes one unit at its step, as PyTorch's schedule visualizer draws it.\n"
        "With --memory a chart of each rank's activation memory over time (a line per rank)\n"
        "is drawn under the timeline. The file is written whole or not at all. Exit status 1\n"
        "when the order deadlocks.",
};

} // namespace

int cmd_render(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, render_help);
    if (a.help_requested()) {
        out.out = help_text(render_help);
        return exit_ok;
    }
    const auto path = a.value("--output");
    if (!path) throw usage_error("missing option --output FILE.svg");
    loaded_timeline t = load_timeline(a, a.integer("--max-boxes", 1, 1LL << 40, default_max_boxes));
    if (!t.problem.empty()) {
        out.err = "ppsched: render: " + ppsched::io::chart_title(t.chart) + ": " + t.problem + "\n";
        return exit_failure;
    }
    io::svg_options opts;
    opts.title = a.value("--title").value_or("");
    opts.labels = !a.has("--no-labels");
    if (const auto limit = a.value("--memory-limit")) {
        if (!a.has("--memory")) throw usage_error("--memory-limit needs --memory");
        opts.memory_limit = parse_positive(*limit, "--memory-limit");
    }
    if (a.has("--memory")) {
        if (t.chart.steps) throw usage_error("--memory needs a timed chart (not --steps)");
        opts.memory.push_back(memory_timeline(t.timed, t.costs));
    }
    const std::string svg = io::write_svg(t.chart, opts);
    if (*path == "-") {
        out.out = svg;
        return exit_ok;
    }
    write_output_file(*path, svg);
    out.out = timeline_summary(t) + "\npicture: " + *path + "\n";
    return exit_ok;
}

} // namespace ppsched::cli
