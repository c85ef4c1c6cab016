// `ppsched report (NAME... | --csv FILE...) [configuration] [costs] [--lower] [--memory-limit X]
// --output FILE.html`: simulates one or more orders and writes one self-contained interactive
// HTML page (timeline, tooltips, dependencies, memory, summary, problems) that opens offline.

#include <algorithm>
#include <array>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/io/html_report.hpp>
#include <ppsched/memory_limit.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "cost_options.hpp"
#include "order_source.hpp"
#include "output_file.hpp"
#include "timeline_source.hpp"

namespace ppsched::cli {

namespace {

constexpr std::array<option, 3> report_own_options{{
    {"--output", "FILE", "the HTML file to write (required; '-' writes it to stdout)"},
    {"--title", "TEXT", "the page title (default: the schedule and configuration)"},
    {"--memory-limit", "X",
     "peak memory a rank may hold (parameters + activations, as simulate checks it): drawn on "
     "the activation charts less each rank's parameters; a rank over it is a problem (exit 1)"},
}};

// The drawing commands' source options but `--steps` (a report is always timed).
constexpr auto report_source_options = [] {
    std::array<option, timeline_source_options.size() - 1> out{};
    std::size_t n = 0;
    for (const option& o : timeline_source_options)
        if (o.name != "--steps") out[n++] = o;
    return out;
}();

constexpr auto report_options = [] {
    std::array<option, report_own_options.size() + report_source_options.size()> all{};
    std::size_t n = 0;
    for (const option& o : report_own_options) all[n++] = o;
    for (const option& o : report_source_options) all[n++] = o;
    return with_cost_options(all);
}();

constexpr command_help report_help{
    .name = "report",
    .arguments = "NAME... | --csv FILE...",
    .summary =
        "Write one self-contained HTML page to explore and compare schedules: every rank's\n"
        "timeline (zoom, pan, a tooltip per action with what it waited for), an action's\n"
        "inputs and critical path on a click, activation memory over time, a sortable summary\n"
        "and the problems of an order that deadlocks or is invalid.",
    .options = report_options,
    .details =
        "Several NAMEs (or several --csv FILEs) are stacked on one time axis; every other\n"
        "option applies to each. The page needs no network (its script is inline) and opens\n"
        "from file://. Prints each schedule's makespan and bubble and where the page is. An\n"
        "order that deadlocks or fails validation is still drawn, its problems marked; the\n"
        "exit status is 1 then. The file is written whole or not at all.",
};

// The words of `argv` split into the sources (each `NAME` or `--csv FILE`) and the rest,
// which applies to every source.
struct split_args {
    std::vector<std::vector<std::string>> sources;
    std::vector<std::string> common;
};

split_args split_sources(std::span<const std::string> argv) {
    split_args out;
    bool options_done = false;
    for (std::size_t i = 0; i < argv.size(); ++i) {
        const std::string& w = argv[i];
        if (options_done || w.size() < 2 || w[0] != '-') {
            out.sources.push_back({w});
            continue;
        }
        if (w == "--") {
            options_done = true;
            continue;
        }
        const std::string name = w.substr(0, w.find('='));
        const bool inline_value = w.find('=') != std::string::npos;
        const option* spec = nullptr;
        for (const option& o : report_options)
            if (o.name == name) spec = &o;
        const bool takes_value = spec != nullptr && !spec->value_name.empty() && !inline_value;
        if (name == "--csv") {
            out.sources.push_back({w});
            if (takes_value && i + 1 < argv.size()) out.sources.back().push_back(argv[++i]);
            continue;
        }
        out.common.push_back(w);
        if (takes_value && i + 1 < argv.size()) out.common.push_back(argv[++i]);
    }
    return out;
}

} // namespace

int cmd_report(std::span<const std::string> argv, output& out) {
    const args all = parse(argv, report_help); // checks every option once
    if (all.help_requested()) {
        out.out = help_text(report_help);
        return exit_ok;
    }
    const auto path = all.value("--output");
    if (!path) throw usage_error("missing option --output FILE.html");
    expect_writable_outputs(all, {"--output"});
    const split_args parts = split_sources(argv);
    if (parts.sources.empty()) throw usage_error("missing argument NAME (or --csv FILE)");
    bool names = false, files = false;
    for (const auto& s : parts.sources) (s[0].rfind("--csv", 0) == 0 ? files : names) = true;
    if (names && files) throw usage_error("give schedule NAMEs or --csv FILEs, not both");
    // Standard input can be read once.
    const auto is_stdin = [](const std::vector<std::string>& s) {
        return s == std::vector<std::string>{"--csv", "-"} ||
               s == std::vector<std::string>{"--csv=-"};
    };
    if (std::count_if(parts.sources.begin(), parts.sources.end(), is_stdin) > 1)
        throw usage_error("--csv - given twice: standard input can be read only once");

    io::report_options opts;
    opts.title = all.value("--title").value_or("");
    if (const auto limit = all.value("--memory-limit")) {
        opts.memory_limit = parse_positive(*limit, "--memory-limit");
    }

    std::vector<io::report_schedule> schedules;
    std::string summary, problems;
    for (const auto& source : parts.sources) {
        std::vector<std::string> words = parts.common;
        words.insert(words.end(), source.begin(), source.end());
        const args a = parse(words, report_help);
        sourced_order src = load_order(a);
        io::report_schedule& s = schedules.emplace_back();
        s.name = src.title;
        s.cfg = src.o.cfg();
        s.sim = simulate(src.o, src.costs);
        s.note = detail::describe_costs(src.costs);
        s.costs = std::move(src.costs);
        // Validation problems, drawn at their step (a few: the first ones tell the story).
        const validation_report v = validate(src.o);
        std::size_t shown = 0;
        for (const violation& x : v) {
            if (++shown > 20) break;
            s.problems.push_back({x.rank, x.step, describe(x)});
        }
        auto count = [](int n, const char* one, const char* many) {
            return std::to_string(n) + " " + (n == 1 ? one : many);
        };
        const std::string title = s.name + " (" + count(s.cfg.ranks, "rank", "ranks") + ", " +
                                  count(s.cfg.stages_per_rank, "stage", "stages") + " per rank, " +
                                  count(s.cfg.microbatches, "microbatch", "microbatches") +
                                  (s.sim.lowered ? ", lowered" : "") + ")";
        if (s.sim)
            summary += title + ": makespan " + format_number(s.sim.makespan) + ", bubble " +
                       format_number(100 * s.sim.bubble_fraction) + " %\n";
        else
            problems += "ppsched: report: " + title + ": " + describe_problem(s.sim) + "\n";
        if (s.sim && opts.memory_limit)
            for (const rank_summary& r : s.sim.ranks)
                if (!fits_memory_limit(r.peak_memory, *opts.memory_limit))
                    problems += "ppsched: report: " + title + ": rank " + std::to_string(r.rank) +
                                " peaks at " + format_number(r.peak_memory) +
                                " (parameters + activations), over --memory-limit " +
                                format_number(*opts.memory_limit) + "\n";
        if (!v.valid())
            problems += "ppsched: report: " + title + ": " + std::to_string(v.total()) +
                        " validation problem" + (v.total() == 1 ? "" : "s") +
                        ", first: " + describe(v[0]) + "\n";
    }
    const std::string html = io::write_html_report(schedules, opts);
    if (*path == "-") {
        out.out = html;
    } else {
        write_output_file(*path, html);
        out.out = summary + "report: " + *path + "\n";
    }
    out.err = problems;
    return problems.empty() ? exit_ok : exit_failure;
}

} // namespace ppsched::cli
