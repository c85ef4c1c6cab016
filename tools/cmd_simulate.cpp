// `ppsched simulate NAME --ranks P --microbatches M [--stages-per-rank V] [costs] [--lower]
// [--format text|json|none]`, or `ppsched simulate --csv FILE [costs]`: replays a pipeline
// order under a cost model and reports the makespan, the bubble and each rank's memory.

#include <array>
#include <span>
#include <string>
#include <vector>

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/config.hpp>
#include <ppsched/memory_limit.hpp>
#include <ppsched/registry.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "cost_options.hpp"
#include "input.hpp"
#include "order_source.hpp"
#include "schedule_options.hpp"

namespace ppsched::cli {

namespace {

constexpr std::array<option, 12> simulate_own_options{{
    transport_option,
    {"--ranks", "P", "pipeline ranks (required with NAME; with --csv: fewer rows is invalid)"},
    source_microbatches_option,
    source_stages_per_rank_option,
    {"--csv", "FILE", "simulate the order in FILE (PyTorch's CSV; '-' for stdin) instead of NAME"},
    {"--placement", "P",
     "with --csv: where stage s lives, loop (rank s % P), v (zig-zag) or dual (two opposite "
     "pipelines, DualPipe); default: inferred from the actions"},
    {"--lower", "", "simulate the lowered order (sends, receives, FSDP) a runtime executes"},
    per_rank_option,
    {"--format", "FORMAT", "text (default), json, or none (only the exit status)"},
    {"--timeline", "", "with --format json: also list every action's rank, stream, start, end"},
    max_actions_option,
    {"--memory-limit", "X",
     "check each rank's peak memory (parameters + activations) against X: exit 1 when one "
     "exceeds it (to plan ZB or ZB-V within a limit: 'ppsched generate ... --memory-limit')"},
}};

constexpr auto simulate_options =
    with_cost_options(simulate_own_options, std::span<const option, 1>(schedule_param_options));

constexpr command_help simulate_help{
    .name = "simulate",
    .arguments = "NAME | --csv FILE",
    .summary =
        "Replay a pipeline order under a cost model: each rank runs its actions in order, an\n"
        "action starts when its rank is free and its inputs have arrived. Prints the\n"
        "makespan, the bubble (idle time) and each rank's peak activation memory.",
    .options = simulate_options,
    .details =
        "NAME is a schedule ('ppsched schedules' lists them). Costs are per stage unless\n"
        "--per-rank is given. JSON output: {makespan, bubble_fraction, bubble_ratio, ideal,\n"
        "total_compute, lowered, ranks: [{rank, busy, idle, bubble_fraction, comm_busy,\n"
        "peak_activations, peak_activations_at, peak_memory}]}.\n"
        "Exit status 1 when the order deadlocks or cannot be simulated (the reason on stderr).",
};

std::string text_report(const std::string& title, const simulation& sim, bool from_model) {
    std::string out = title + "\n";
    append_simulation_summary(out, sim);
    out += "\n";
    const std::array<std::string, 7> head{"rank", "busy",           "idle",       "bubble",
                                          "comm", "peak act. (at)", "peak memory"};
    std::vector<std::array<std::string, 7>> rows{head};
    for (const auto& r : sim.ranks)
        rows.push_back(
            {std::to_string(r.rank), format_number(r.busy), format_number(r.idle),
             format_number(100 * r.bubble_fraction) + " %", format_number(r.comm_busy),
             format_number(r.peak_activations) + " (" + format_number(r.peak_activations_at) + ")",
             format_number(r.peak_memory)});
    append_aligned_table(out, rows);
    out += memory_note(from_model);
    return out;
}

std::string json_report(const simulation& sim, bool timeline) {
    std::string out = "{\"makespan\": " + json_number(sim.makespan) +
                      ", \"bubble_fraction\": " + json_number(sim.bubble_fraction) +
                      ", \"bubble_ratio\": " + json_number(sim.bubble_ratio) +
                      ", \"ideal\": " + json_number(sim.ideal) +
                      ", \"total_compute\": " + json_number(sim.total_compute) +
                      ", \"lowered\": " + (sim.lowered ? "true" : "false") + ",\n \"ranks\": [";
    for (std::size_t i = 0; i < sim.ranks.size(); ++i) {
        const auto& r = sim.ranks[i];
        out += std::string(i ? ",\n  " : "\n  ") + "{\"rank\": " + std::to_string(r.rank) +
               ", \"busy\": " + json_number(r.busy) + ", \"idle\": " + json_number(r.idle) +
               ", \"bubble_fraction\": " + json_number(r.bubble_fraction) +
               ", \"comm_busy\": " + json_number(r.comm_busy) +
               ", \"peak_activations\": " + json_number(r.peak_activations) +
               ", \"peak_activations_at\": " + json_number(r.peak_activations_at) +
               ", \"peak_memory\": " + json_number(r.peak_memory) + "}";
    }
    out += "]";
    if (timeline) {
        out += ",\n \"timeline\": [";
        for (std::size_t i = 0; i < sim.timeline.size(); ++i) {
            const auto& t = sim.timeline[i];
            out += std::string(i ? ",\n  " : "\n  ") + "{\"rank\": " + std::to_string(t.rank) +
                   ", \"action\": " + json_string(to_string(t.act)) + ", \"stream\": \"" +
                   std::string(to_string_view(t.on)) + "\", \"start\": " + json_number(t.start) +
                   ", \"end\": " + json_number(t.end) + "}";
        }
        out += "]";
    }
    return out + "}\n";
}

} // namespace

int cmd_simulate(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, simulate_help);
    if (a.help_requested()) {
        out.out = help_text(simulate_help);
        return exit_ok;
    }
    const std::string format = a.value("--format").value_or("text");
    if (format != "text" && format != "json" && format != "none")
        throw usage_error("--format must be text, json or none, got '" + printable(format) + "'");
    if (a.has("--timeline") && format != "json")
        throw usage_error("--timeline needs --format json");
    sourced_order src = load_order(a);
    const order& o = src.o;
    const cost_model& costs = src.costs;
    std::string title = src.title;

    const simulation sim =
        simulate(o, costs, ppsched::simulate_options{.transport = read_transport(a)});
    const config cfg = o.cfg();
    title += ": " + counted(cfg.ranks, "rank", "ranks") + ", " +
             counted(cfg.stages_per_rank, "stage", "stages") + " per rank, " +
             counted(cfg.microbatches, "microbatch", "microbatches") +
             (sim.lowered ? ", lowered" : "");
    if (report_validation(src.report, sim)) {
        out.err = invalid_order_message("simulate", src);
        return exit_failure;
    }
    if (!sim) {
        out.err = "ppsched: simulate: " + title + ": " + describe_problem(sim) + "\n";
        return exit_failure;
    }
    if (format == "text") out.out = text_report(title, sim, a.has("--model"));
    if (format == "json") out.out = json_report(sim, a.has("--timeline"));
    if (auto text = a.value("--memory-limit")) {
        const double limit = parse_positive(*text, "--memory-limit");
        std::string over;
        for (const rank_summary& r : sim.ranks)
            if (!fits_memory_limit(r.peak_memory, limit))
                over += std::string(over.empty() ? "" : ", ") + "rank " + std::to_string(r.rank) +
                        " peaks at " + format_number(r.peak_memory);
        if (format == "text")
            out.out += "\nmemory limit " + format_number(limit) + ": " +
                       (over.empty() ? "every rank fits" : "exceeded (" + over + ")") + "\n";
        if (!over.empty()) {
            out.err = "ppsched: simulate: " + title + ": peak memory exceeds the limit " +
                      format_number(limit) + ": " + over + "\n";
            return exit_failure;
        }
    }
    return exit_ok;
}

} // namespace ppsched::cli
