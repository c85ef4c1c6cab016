#pragma once
/// \file timeline_source.hpp
/// The input of the drawing subcommands (`render`, `trace`, `timeline`): a schedule by name or a
/// CSV order, costs, optional lowering and step layout, simulated into an `io::chart`; plus the
/// summary they print (makespan, bubble, peak memory per rank).

#include <algorithm>
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include <ppsched/algorithms/add_spacing.hpp>
#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/algorithms/simulate_steps.hpp>
#include <ppsched/algorithms/step_timeline.hpp>
#include <ppsched/config.hpp>
#include <ppsched/io/chart.hpp>
#include <ppsched/registry.hpp>

#include "cli.hpp"
#include "cost_options.hpp"
#include "input.hpp"
#include "order_source.hpp"
#include "schedule_options.hpp"

namespace ppsched::cli {

/// The options that choose what to draw, shared by the drawing subcommands.
inline constexpr std::array<option, 10> timeline_source_options{{
    {"--ranks", "P", "pipeline ranks (required with NAME)"},
    source_microbatches_option,
    source_stages_per_rank_option,
    {"--csv", "FILE", "draw the order in FILE (PyTorch's CSV; '-' for stdin) instead of NAME"},
    {"--placement", "P",
     "with --csv: where the file's stages live, loop, v or dual; default: inferred"},
    {"--lower", "",
     "draw the lowered order a runtime executes (render: its sends, receives and FSDP actions on "
     "a thin lane under each rank; trace: on a communication thread; timeline: its compute "
     "only)"},
    {"--steps", "",
     "one unit per step, laid out by dependencies as PyTorch's visualizer does (no costs)"},
    per_rank_option,
    max_actions_option,
    schedule_param_options[0],
}};

/// A command's own options, then the source options, then the cost options.
template <std::size_t N>
[[nodiscard]] constexpr auto with_timeline_options(const std::array<option, N>& own) {
    std::array<option, N + timeline_source_options.size()> all{};
    for (std::size_t i = 0; i < N; ++i) all[i] = own[i];
    for (std::size_t i = 0; i < timeline_source_options.size(); ++i)
        all[N + i] = timeline_source_options[i];
    return with_cost_options(all);
}

/// What the source options produced.
struct loaded_timeline {
    io::chart chart;         ///< what to draw (with `--steps`: the step layout)
    simulation timed;        ///< the timed simulation (the summary's numbers)
    std::string problem;     ///< non-empty when the order deadlocks or cannot be simulated
    cost_model costs;        ///< the costs `timed` was simulated with
    bool from_model = false; ///< the costs come from a model file (`--model`): memory in GB
};

namespace detail {

// "F 1, I 1, W 1, B 2" and the message and FSDP costs when they are not zero.
inline std::string describe_costs(const cost_model& costs) {
    const resolved_stage_costs c = costs.at(0);
    std::string s = costs.per_stage.empty() ? "costs: " : "costs of stage 0: ";
    s += "F " + format_number(c.forward) + ", I " + format_number(c.backward_input) + ", W " +
         format_number(c.backward_weight) + ", B " + format_number(c.full_backward);
    if (c.overlap_f_b) s += ", F+B overlapped " + format_number(*c.overlap_f_b);
    if (costs.message_time() > 0) s += ", message " + format_number(costs.message_time());
    if (c.unshard > 0) s += ", UNSHARD " + format_number(c.unshard);
    if (c.reduce_grad > 0) s += ", REDUCE_GRAD " + format_number(c.reduce_grad);
    return s;
}

} // namespace detail

/// Reads the source and cost options of `a`, builds the order, lowers it with `--lower`,
/// simulates it and, with `--steps`, lays it out one unit per step. Throws `usage_error`,
/// `parse_error` or `config_error` for bad usage or input (exit status 2). A deadlock or an
/// order the simulator cannot run is not thrown: `problem` says what happened.
/// `max_boxes`: see `load_order`.
[[nodiscard]] inline loaded_timeline load_timeline(const args& a, long long max_boxes = 0) {
    loaded_timeline out;
    const bool steps = a.has("--steps");
    if (steps)
        for (const option& c : cost_option_list)
            if (a.has(c.name))
                throw usage_error(std::string(c.name) +
                                  " has no effect with --steps (every action takes one step)");
    sourced_order source = load_order(a, max_boxes);
    out.chart.name = std::move(source.title);
    const order& o = source.o;
    const cost_model& costs = source.costs;

    out.chart.cfg = o.cfg();
    out.timed = simulate(o, costs);
    out.costs = costs;
    out.from_model = a.has("--model");
    if (report_validation(source.report, out.timed)) {
        out.problem =
            "not a valid order ('ppsched validate' shows where): " + describe(source.report[0]) +
            (source.report.total() > 1
                 ? " (and " + std::to_string(source.report.total() - 1) + " more)"
                 : std::string());
        return out;
    }
    if (!out.timed) {
        out.problem = describe_problem(out.timed);
        return out;
    }
    out.chart.steps = steps;
    if (!steps) {
        out.chart.sim = out.timed;
        out.chart.note = detail::describe_costs(costs);
        return out;
    }
    const bool has_comm =
        std::any_of(out.timed.timeline.begin(), out.timed.timeline.end(),
                    [](const timed_action& t) { return !is_compute(t.act.kind()); });
    if (has_comm) {
        // PyTorch's unit-step run of a lowered order: a receive waits for its send's step.
        const step_simulation run = simulate_steps(o);
        if (!run) {
            out.problem = "the step layout gets stuck: rank " + std::to_string(run.stuck[0].rank) +
                          " at " + to_string(run.stuck[0].blocked);
            return out;
        }
        out.chart.sim = step_timeline(run.timeline);
        out.chart.note = "one step per action, as PyTorch's _simulate_comms_compute runs them";
    } else {
        out.chart.sim = step_timeline(add_spacing(o));
        out.chart.note = "one step per action, spaced by dependencies as PyTorch's visualizer "
                         "(add_schedule_op_spacing)";
    }
    return out;
}

/// The summary the drawing subcommands print: the title, makespan, ideal time, bubble, and
/// each rank's busy and idle time, peak activations and peak memory. With `--steps`, of the
/// step layout drawn (times in steps), as the picture and the trace give them.
[[nodiscard]] inline std::string timeline_summary(const loaded_timeline& t) {
    const simulation& sim = t.chart.steps ? t.chart.sim : t.timed;
    std::string out = ppsched::io::chart_title(t.chart) + "\n";
    if (t.chart.steps) out += "  times in steps: one per action, as drawn (no costs)\n";
    append_simulation_summary(out, sim);
    out += "\n";
    std::vector<std::array<std::string, 6>> rows{
        {"rank", "busy", "idle", "bubble", "peak act.", "peak memory"}};
    for (const auto& r : sim.ranks)
        rows.push_back({std::to_string(r.rank), format_number(r.busy), format_number(r.idle),
                        format_number(100 * r.bubble_fraction) + " %",
                        format_number(r.peak_activations), format_number(r.peak_memory)});
    append_aligned_table(out, rows);
    out += memory_note(t.from_model);
    return out;
}

} // namespace ppsched::cli
