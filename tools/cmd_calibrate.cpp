// `ppsched calibrate TRACE... [--output costs.json] [--order order.csv] [--picture overlay.svg]`:
// reads the PP:<action> spans of a measured run (PyTorch profiler traces, or traces written by
// ppsched's executor), fits per-stage costs and the message time, replays the executed order
// with them, and reports predicted against measured step time.

#include <array>
#include <span>
#include <string>
#include <vector>

#include <ppsched/calibrate.hpp>
#include <ppsched/io/cost_json.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/io/pytorch_trace.hpp>
#include <ppsched/io/svg.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "input.hpp"
#include "order_source.hpp"
#include "output_file.hpp"

namespace ppsched::cli {

namespace {

constexpr std::array<option, 4> calibrate_options{{
    {"--output", "FILE",
     "write the fitted costs as JSON (what --costs of simulate and compare "
     "reads)"},
    {"--order", "FILE", "write the executed order as PyTorch's CSV"},
    {"--picture", "FILE", "write an SVG: the measured iteration above its replay, one time axis"},
    {"--max-boxes", "N",
     "with --picture: draw at most N actions (default 1000000, each measured action twice); "
     "more is an error"},
}};

constexpr command_help calibrate_help{
    .name = "calibrate",
    .arguments = "TRACE...",
    .summary =
        "Fit a cost model to a measured run: read the PP:<action> spans of PyTorch profiler\n"
        "traces (one per rank, or one merged) or of traces written by ppsched's executor, fit\n"
        "each stage's F/I/W/B cost (median, spread, outliers) and the message time, replay\n"
        "the executed order with them and compare predicted with measured step time.",
    .options = calibrate_options,
    .details =
        "Costs are in milliseconds (trace times are microseconds). The report names the\n"
        "clock offsets found between ranks, each rank's measured and predicted idle time and\n"
        "the actions whose end differs most. Files are written whole or not at all. Exit\n"
        "status 1 when the executed order is not valid or cannot be replayed (nothing written).\n"
        "docs/calibration.md describes the trace format and the fitting.",
};

/// The measured iteration as a chart: its timeline, and per-rank busy and idle times.
io::chart measured_chart(const calibration& c) {
    const calibration_report& r = c.report;
    io::chart ch;
    ch.name = "measured";
    ch.cfg = c.executed.cfg();
    simulation& s = ch.sim;
    s.timeline = r.measured;
    s.makespan = r.measured_step;
    s.lowered = r.predicted.lowered;
    for (std::size_t k = 0; k < r.measured_idle.size(); ++k) {
        rank_summary rs;
        rs.rank = static_cast<int>(k);
        rs.idle = r.measured_idle[k];
        rs.busy = r.measured_step - rs.idle;
        rs.bubble_fraction = r.measured_step > 0 ? rs.idle / r.measured_step : 0;
        rs.end = r.measured_step;
        // Memory is not measured; it follows from the order, as the replay computes it.
        if (k < r.predicted.ranks.size()) {
            const rank_summary& p = r.predicted.ranks[k];
            rs.peak_activations = p.peak_activations;
            rs.parameters = p.parameters;
            rs.peak_memory = p.peak_memory;
        }
        s.total_compute += rs.busy;
        s.ranks.push_back(rs);
    }
    const double n = static_cast<double>(s.ranks.size());
    s.ideal = n > 0 ? s.total_compute / n : 0;
    s.bubble_fraction =
        s.makespan > 0 && n > 0 ? (n * s.makespan - s.total_compute) / (n * s.makespan) : 0;
    s.bubble_ratio = s.ideal > 0 ? (s.makespan - s.ideal) / s.ideal : 0;
    ch.note = "iteration " + std::to_string(r.shown_iteration) + " of " +
              std::to_string(r.iterations) + " (the median step), ms";
    return ch;
}

} // namespace

int cmd_calibrate(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, calibrate_help);
    if (a.help_requested()) {
        out.out = help_text(calibrate_help);
        return exit_ok;
    }
    a.expect_positionals(1, 4096, "TRACE");
    expect_file_names(a, "calibrate", {"--output", "--order", "--picture"});
    expect_writable_outputs(a, {"--output", "--order", "--picture"});
    if (a.has("--max-boxes") && !a.has("--picture"))
        throw usage_error("--max-boxes needs --picture (nothing is drawn without it)");
    // Read as every input of the tool: a directory or an empty file is said to be one.
    std::vector<io::trace_text> texts;
    for (const std::string& path : a.positionals())
        texts.push_back({read_input(path), source_name(path)});
    const io::measured_trace trace = io::read_pytorch_trace(texts);
    const calibration c = calibrate(trace);
    const std::string report = format_calibration(c);
    if (!c.report.valid) {
        out.err = "ppsched: calibrate: " + c.report.problem + "\n";
        return exit_failure;
    }
    // Build every output before writing any, so an error leaves nothing behind.
    std::vector<std::pair<std::string, std::string>> files;
    if (auto p = a.value("--output")) files.emplace_back(*p, io::write_cost_json(c.costs));
    if (auto p = a.value("--order")) files.emplace_back(*p, io::write_csv(c.executed));
    const long long max_boxes = a.integer("--max-boxes", 1, 1LL << 40, default_max_boxes);
    if (auto p = a.value("--picture")) {
        // Both charts draw every action: twice the executed order's actions.
        const auto boxes = 2 * static_cast<long long>(c.executed.action_count());
        if (boxes > max_boxes) throw usage_error(too_many_boxes(boxes, max_boxes));
        io::chart predicted;
        predicted.name = "simulated with the fitted costs";
        predicted.cfg = c.executed.cfg();
        predicted.sim = c.report.predicted;
        const std::array<io::chart, 2> charts{measured_chart(c), predicted};
        io::svg_options opts;
        opts.title = "measured vs simulated: " + counted(c.executed.cfg().ranks, "rank", "ranks") +
                     ", " + counted(c.executed.cfg().microbatches, "microbatch", "microbatches");
        files.emplace_back(*p, io::write_svg(std::span<const io::chart>(charts), opts));
    }
    write_output_files(files); // all or none
    out.out = report;
    for (const auto& [path, text] : files) out.out += "wrote " + path + "\n";
    return exit_ok;
}

} // namespace ppsched::cli
