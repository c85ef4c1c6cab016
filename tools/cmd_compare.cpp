// `ppsched compare --ranks P --microbatches M [costs] [--memory-limit X] [--lower]
// [--format text|json|none]`: simulates every schedule that accepts the configuration (for each
// stages-per-rank value it supports) under one model's costs and ranks them by makespan: "which
// schedule should I use"; with a memory limit, "the fastest that fits".

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/config.hpp>
#include <ppsched/io/svg.hpp>
#include <ppsched/registry.hpp>
#include <ppsched/tune/tune.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "cost_options.hpp"
#include "order_source.hpp"
#include "output_file.hpp"

namespace ppsched::cli {

namespace {

constexpr std::array<option, 11> compare_own_options{{
    {"--ranks", "P", "pipeline ranks (required)"},
    {"--microbatches", "M", "microbatches per iteration (required)"},
    {"--stages-per-rank", "V", "only try V stages per rank (default: every V it supports)"},
    {"--max-stages-per-rank", "V", "try stages per rank 1..V (default 4)"},
    {"--lower", "", "simulate the lowered orders (sends, receives, FSDP) a runtime executes"},
    {"--format", "FORMAT", "text (default), json, or none (only the exit status)"},
    {"--max-actions", "N", "skip orders with more actions than N (default 50000000)"},
    {"--output", "FILE",
     "also draw them, by makespan, on one time axis into an SVG file ('-': stdout)"},
    {"--max-boxes", "N", "with --output: draw at most N actions in all (default 1000000)"},
    {"--memory-limit", "X",
     "drop schedules whose peak memory per rank (activations + parameters, in the units of\n"
     "--activation) exceeds X; memory-aware schedules plan with it"},
    {"--tune-time", "S",
     "with per-stage costs (a cost file with one entry per stage, or --model --layout): also\n"
     "the order 'ppsched tune' finds in S seconds per placement (default 1; 0: none)"},
}};

constexpr auto compare_options = with_cost_options(compare_own_options);

constexpr command_help compare_help{
    .name = "compare",
    .arguments = "",
    .summary = "Simulate every schedule that accepts the configuration, trying each number of\n"
               "stages per rank it supports, and list them by makespan with their bubble and\n"
               "peak memory: which schedule suits this model. With --memory-limit, the first\n"
               "row is the fastest schedule that fits in memory.",
    .options = compare_options,
    .details =
        "The costs describe one rank's share of the model (its layers): with V stages per rank\n"
        "each stage costs 1/V of the times and memory given; message costs stay per message.\n"
        "JSON output: {ranks, microbatches, results: [{schedule, name, stages_per_rank,\n"
        "makespan, bubble_fraction, bubble_ratio, peak_activations, peak_memory}] by makespan,\n"
        "rejected: [{schedule, reason}], memory_limit (when given)}. Peaks are the largest\n"
        "over the ranks; one activation (--activation, default 1) is what one microbatch's\n"
        "forwards keep on a rank, so V stages per rank keep 1/V each.",
};

struct result {
    const schedule_entry* entry = nullptr;
    int stages_per_rank = 1;
    simulation sim;
    double peak_activations = 0, peak_memory = 0;
};

struct rejection {
    std::string schedule, reason;
};

// The part of a config_error message after "name: ", so that a table row reads cleanly.
std::string reason_of(const std::string& message) {
    const std::size_t colon = message.find(": ");
    return colon == std::string::npos ? message : message.substr(colon + 2);
}

std::string text_report(int p, int m, const std::optional<double>& limit,
                        const std::vector<result>& results,
                        const std::vector<rejection>& rejected) {
    std::string out = std::to_string(p) + " ranks, " + std::to_string(m) +
                      " microbatches; the costs are a rank's share of the model";
    if (limit) out += "; memory limit " + format_number(*limit) + " per rank";
    out += "\n\n";
    std::vector<std::array<std::string, 7>> rows{
        {"schedule", "V", "makespan", "bubble ratio", "bubble", "peak act.", "peak memory"}};
    for (const auto& r : results)
        rows.push_back({r.entry->pytorch_name, std::to_string(r.stages_per_rank),
                        format_number(r.sim.makespan), format_number(r.sim.bubble_ratio),
                        format_number(100 * r.sim.bubble_fraction) + " %",
                        format_number(r.peak_activations), format_number(r.peak_memory)});
    append_aligned_table(out, rows);
    out += memory_unit_note;
    if (!rejected.empty()) {
        out += "\nnot applicable:\n";
        for (const auto& r : rejected) out += "  " + r.schedule + ": " + r.reason + "\n";
    }
    return out;
}

std::string json_report(int p, int m, const std::optional<double>& limit,
                        const std::vector<result>& results,
                        const std::vector<rejection>& rejected) {
    std::string out =
        "{\"ranks\": " + std::to_string(p) + ", \"microbatches\": " + std::to_string(m) + ",";
    if (limit) out += " \"memory_limit\": " + json_number(*limit) + ",";
    out += "\n \"results\": [";
    for (std::size_t i = 0; i < results.size(); ++i) {
        const auto& r = results[i];
        out += std::string(i ? ",\n  " : "\n  ") +
               "{\"schedule\": " + json_string(r.entry->pytorch_name) +
               ", \"name\": " + json_string(r.entry->name) +
               ", \"stages_per_rank\": " + std::to_string(r.stages_per_rank) +
               ", \"makespan\": " + json_number(r.sim.makespan) +
               ", \"bubble_fraction\": " + json_number(r.sim.bubble_fraction) +
               ", \"bubble_ratio\": " + json_number(r.sim.bubble_ratio) +
               ", \"peak_activations\": " + json_number(r.peak_activations) +
               ", \"peak_memory\": " + json_number(r.peak_memory) + "}";
    }
    out += "],\n \"rejected\": [";
    for (std::size_t i = 0; i < rejected.size(); ++i)
        out += std::string(i ? ",\n  " : "\n  ") +
               "{\"schedule\": " + json_string(rejected[i].schedule) +
               ", \"reason\": " + json_string(rejected[i].reason) + "}";
    return out + "]}\n";
}

} // namespace

int cmd_compare(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, compare_help);
    if (a.help_requested()) {
        out.out = help_text(compare_help);
        return exit_ok;
    }
    a.expect_positionals(0, 0, "");
    if (!a.has("--ranks")) throw usage_error("missing option --ranks P");
    if (!a.has("--microbatches")) throw usage_error("missing option --microbatches M");
    const std::string format = a.value("--format").value_or("text");
    if (format != "text" && format != "json" && format != "none")
        throw usage_error("--format must be text, json or none, got '" + printable(format) + "'");
    const int p = static_cast<int>(a.integer("--ranks", 1, max_stage + 1, 1));
    const int m = static_cast<int>(a.integer("--microbatches", 1, 1LL << 30, 1));
    int v_min = 1, v_max = static_cast<int>(a.integer("--max-stages-per-rank", 1, 64, 4));
    if (a.has("--stages-per-rank"))
        v_min = v_max = static_cast<int>(a.integer("--stages-per-rank", 1, max_stage + 1, 1));
    const long long max_actions = a.integer("--max-actions", 1, 1LL << 40, 50'000'000);
    const long long max_boxes = a.integer("--max-boxes", 1, 1LL << 40, default_max_boxes);
    if (a.has("--max-boxes") && !a.has("--output"))
        throw usage_error("--max-boxes needs --output (nothing is drawn without it)");
    // Every picture together: at least a forward and a backward per stage and microbatch of
    // each schedule tried (about 20), checked before anything is simulated.
    if (a.has("--output") && 2LL * p * m * v_min > max_boxes)
        throw usage_error(too_many_boxes(2LL * p * m * v_min, max_boxes));
    const cost_model costs = read_cost_options(a);
    std::optional<double> limit;
    if (auto text = a.value("--memory-limit")) limit = parse_number(*text, "--memory-limit");
    // A rank's parameters take their share of the limit whatever the schedule (they are split
    // over its stages like the rest); memory-aware schedules plan the activations in the rest.
    double parameters = costs.uniform.parameters.value_or(0.0);
    // --model --layout: the layout fixes V and the per-stage costs; the capacity is the limit.
    const std::optional<model_layout_costs> from_model = read_model_layout(a);
    if (from_model) {
        const int stages = from_model->stages;
        if (stages % p != 0)
            throw usage_error("--layout has " + std::to_string(stages) +
                              " stages, not a multiple of the " + std::to_string(p) + " ranks");
        v_min = v_max = stages / p;
        if (!limit) limit = from_model->capacity;
        parameters = 0; // the largest rank's parameters (stage sums, any placement: a bound)
        for (int s = 0; s < stages; ++s)
            parameters = std::max(parameters, costs.at(s).parameters * v_min);
    }
    // A cost file with per-stage values fixes the stage count, hence V: every schedule with
    // that V is timed with the costs as they are (nothing is split), and so is the order
    // `tune` finds for them.
    const bool per_stage_file = !costs.per_stage.empty() && !from_model;
    if (per_stage_file) {
        const auto stages = static_cast<long long>(costs.per_stage.size());
        if (stages % p != 0)
            throw usage_error("the cost file has " + std::to_string(stages) +
                              " per-stage entries, not a multiple of the " + std::to_string(p) +
                              " ranks (one entry per stage: ranks x stages per rank)");
        if (a.has("--stages-per-rank") && v_min != stages / p)
            throw usage_error("--stages-per-rank " + std::to_string(v_min) +
                              " disagrees with the " + std::to_string(stages) +
                              " per-stage entries of the cost file (" + std::to_string(stages / p) +
                              " per rank)");
        v_min = v_max = static_cast<int>(stages / p);
        for (int s = 0; s < static_cast<int>(stages); ++s)
            parameters = std::max(parameters, costs.at(s).parameters * v_min);
    }
    const bool per_stage = from_model.has_value() || per_stage_file;
    const double tune_seconds =
        a.has("--tune-time") ? parse_number(*a.value("--tune-time"), "--tune-time") : 1.0;
    if (a.has("--tune-time") && !per_stage)
        throw usage_error("--tune-time needs per-stage costs (a cost file with per-stage values, "
                          "or --model --layout)");

    std::vector<result> results;
    std::vector<rejection> rejected;
    for (const schedule_entry& e : builtin_schedules().entries()) {
        std::string first_reason; // why it was not simulated
        bool any = false;
        if (per_stage && e.placement == stage_placement::dual) {
            // Per-stage costs describe one pipeline in model order; dual runs two.
            rejected.push_back({e.pytorch_name, from_model
                                                    ? "a --layout describes one pipeline, not two"
                                                    : "per-stage costs describe one pipeline, "
                                                      "not two"});
            continue;
        }
        for (int v = v_min; v <= v_max; ++v) {
            const config cfg{.ranks = p, .stages_per_rank = v, .microbatches = m};
            const cost_model split =
                per_stage ? costs : split_over_stages(costs, stages_per_microbatch(v, e.placement));
            schedule_params params = with_costs(e, {}, split);
            if (limit && *limit > parameters && takes_parameter(e, "memory_limit"))
                params.memory_limit = *limit - parameters;
            try {
                e.check(cfg, params);
            } catch (const config_error& err) {
                // Prefer the reason for the schedule's own default V (the most telling one).
                if (first_reason.empty() || v == e.default_stages_per_rank)
                    first_reason = reason_of(err.what());
                continue;
            }
            if (3LL * p * v * m > max_actions) {
                if (first_reason.empty()) first_reason = "more actions than --max-actions";
                continue;
            }
            order o = e.generate(cfg, params);
            if (a.has("--lower")) o = lower(o);
            // Without a picture no timeline is kept: memory is one order at a time.
            result r{&e, v, simulate(o, split, simulate_options{.timeline = a.has("--output")}), 0,
                     0};
            if (!r.sim) {
                if (first_reason.empty()) first_reason = describe_problem(r.sim);
                continue;
            }
            r.peak_activations = max_over_ranks(r.sim, &rank_summary::peak_activations);
            r.peak_memory = max_over_ranks(r.sim, &rank_summary::peak_memory);
            if (limit && r.peak_memory > *limit * (1 + 1e-12)) {
                const std::string why = "peak memory " + format_number(r.peak_memory) +
                                        " exceeds the limit " + format_number(*limit) +
                                        " (stages per rank: " + std::to_string(v) + ")";
                if (first_reason.empty() || v == e.default_stages_per_rank) first_reason = why;
                continue;
            }
            results.push_back(std::move(r));
            any = true;
        }
        if (!any) rejected.push_back({e.pytorch_name, first_reason});
    }
    // With per-stage costs, the auto-scheduler's order for each placement too.
    std::vector<std::unique_ptr<schedule_entry>> tuned_entries;
    if (per_stage && tune_seconds > 0) {
        for (auto placement : {stage_placement::loop, stage_placement::v}) {
            if (placement == stage_placement::v && v_min < 2) continue;
            auto entry = std::make_unique<schedule_entry>();
            entry->name = std::string("tuned_") + std::string(to_string_view(placement));
            entry->pytorch_name = "tuned (" + std::string(to_string_view(placement)) + ")";
            entry->placement = placement;
            tune_problem prob;
            prob.ranks = p;
            prob.microbatches = m;
            prob.stages_per_rank = v_min;
            prob.placement = placement;
            prob.costs = costs;
            prob.memory_limit = limit;
            tune_options topts;
            topts.time_limit = tune_seconds;
            try {
                const tune_result tr = tune(prob, topts);
                order o = tr.best;
                if (a.has("--lower")) o = lower(o);
                result r{entry.get(), v_min,
                         simulate(o, costs, simulate_options{.timeline = a.has("--output")}), 0, 0};
                r.peak_activations = max_over_ranks(r.sim, &rank_summary::peak_activations);
                r.peak_memory = max_over_ranks(r.sim, &rank_summary::peak_memory);
                results.push_back(std::move(r));
            } catch (const config_error& err) {
                rejected.push_back({entry->pytorch_name, reason_of(err.what())});
            }
            tuned_entries.push_back(std::move(entry));
        }
    }
    // By makespan; ties by memory, then as listed (stable).
    std::stable_sort(results.begin(), results.end(), [](const result& x, const result& y) {
        if (x.sim.makespan != y.sim.makespan) return x.sim.makespan < y.sim.makespan;
        return x.peak_memory < y.peak_memory;
    });
    if (auto path = a.value("--output"); path && !results.empty()) {
        long long boxes = 0;
        for (const auto& r : results) boxes += static_cast<long long>(r.sim.timeline.size());
        if (boxes > max_boxes) throw usage_error(too_many_boxes(boxes, max_boxes));
        std::vector<io::chart> charts;
        for (const auto& r : results) {
            const config cfg{.ranks = p,
                             .stages_per_rank = r.stages_per_rank,
                             .microbatches = m,
                             .placement = r.entry->placement};
            charts.push_back({r.entry->pytorch_name, cfg, r.sim, false, ""});
        }
        io::svg_options opts;
        opts.title = "ppsched compare: " + std::to_string(p) + " ranks, " + std::to_string(m) +
                     " microbatches" + (a.has("--lower") ? ", lowered" : "");
        opts.subtitle = from_model ? "fastest first; per-stage costs of --model --layout"
                        : per_stage_file
                            ? "fastest first; per-stage costs of the cost file"
                            : "fastest first; the costs are a rank's share of the model, "
                              "split over its V stages";
        if (*path == "-") {
            // The picture is the output (the report would corrupt it).
            out.out = io::write_svg(charts, opts);
            return exit_ok;
        }
        write_output_file(*path, io::write_svg(charts, opts));
    }
    if (format == "text") out.out = text_report(p, m, limit, results, rejected);
    if (per_stage && format == "text") {
        const std::string share = "the costs are a rank's share of the model";
        if (const auto at = out.out.find(share); at != std::string::npos)
            out.out.replace(at, share.size(),
                            from_model ? "per-stage costs of --model --layout"
                                       : "per-stage costs of the cost file");
    }
    if (format == "json") out.out = json_report(p, m, limit, results, rejected);
    if (results.empty()) {
        out.err = "ppsched: compare: no schedule accepts " + std::to_string(p) + " ranks and " +
                  std::to_string(m) + " microbatches" +
                  (limit ? " within the memory limit " + format_number(*limit) : "") + "\n";
        return exit_failure;
    }
    return exit_ok;
}

} // namespace ppsched::cli
