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
#include <ppsched/memory_limit.hpp>
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
    {"--max-actions", "N",
     "skip orders with more actions than N, counting PyTorch's idle steps (default 50000000)"},
    {"--output", "FILE",
     "also draw them, by makespan, on one time axis into an SVG file ('-': stdout)"},
    {"--max-boxes", "N", "with --output: draw at most N actions in all (default 1000000)"},
    {"--memory-limit", "X",
     "drop schedules whose peak memory per rank (activations + parameters, in the units of "
     "--activation) exceeds X; memory-aware schedules plan with it"},
    {"--tune-time", "S",
     "with per-stage costs (a cost file with one entry per stage, or --model --layout): also "
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
                        const std::vector<result>& results, const std::vector<rejection>& rejected,
                        std::string_view memory_unit) {
    std::string out = counted(p, "rank", "ranks") + ", " +
                      counted(m, "microbatch", "microbatches") +
                      "; the costs are a rank's share of the model";
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
    out += memory_unit;
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

// What the options ask for, read and checked before anything is simulated.
struct compare_request {
    int p = 1, m = 1, v_min = 1, v_max = 4;
    long long max_actions = 0, max_boxes = 0;
    std::string format;
    bool lower = false;
    std::optional<std::string> output_path;
    cost_model costs;
    std::optional<double> limit;
    // A rank's parameters take their share of the limit whatever the schedule (they are split
    // over its stages like the rest); memory-aware schedules plan the activations in the rest.
    double parameters = 0;
    std::optional<model_layout_costs> from_model;
    bool per_stage_file = false, per_stage = false;
    double tune_seconds = 1;
};

// What was simulated (by makespan once ranked) and what was not, with why.
struct comparison {
    std::vector<result> results;
    std::vector<rejection> rejected;
    std::vector<std::unique_ptr<schedule_entry>> tuned_entries; // the entries of tuned results
};

// Throws `usage_error` where --stages-per-rank or --max-stages-per-rank contradicts the V that
// `stages` stages on the ranks fix: `source` names those stages ("the 8 stages of --layout"),
// `fixing` says what fixes V ("of --layout's 8 stages").
void expect_stage_flags_fit(const args& a, const compare_request& q, int stages,
                            const std::string& source, const std::string& fixing) {
    const int v = stages / q.p;
    if (a.has("--stages-per-rank") && q.v_min != v)
        throw usage_error("--stages-per-rank " + std::to_string(q.v_min) + " disagrees with " +
                          source + " (" + std::to_string(v) + " per rank)");
    if (a.has("--max-stages-per-rank") && q.v_max < v)
        throw usage_error("--max-stages-per-rank " + std::to_string(q.v_max) + " is below the " +
                          std::to_string(v) + " stages per rank " + fixing);
}

compare_request read_request(const args& a) {
    compare_request q;
    if (!a.has("--ranks")) throw usage_error("missing option --ranks P");
    if (!a.has("--microbatches")) throw usage_error("missing option --microbatches M");
    q.format = a.value("--format").value_or("text");
    if (q.format != "text" && q.format != "json" && q.format != "none")
        throw usage_error("--format must be text, json or none, got '" + printable(q.format) + "'");
    q.p = static_cast<int>(a.integer("--ranks", 1, max_stage + 1, 1));
    q.m = static_cast<int>(a.integer("--microbatches", 1, 1LL << 30, 1));
    q.v_max = static_cast<int>(a.integer("--max-stages-per-rank", 1, 64, 4));
    if (a.has("--stages-per-rank") && a.has("--max-stages-per-rank"))
        throw usage_error("--stages-per-rank and --max-stages-per-rank contradict each other: "
                          "give one (V only, or 1..V)");
    if (a.has("--stages-per-rank"))
        q.v_min = q.v_max = static_cast<int>(a.integer("--stages-per-rank", 1, max_stage + 1, 1));
    q.max_actions = a.integer("--max-actions", 1, 1LL << 40, 50'000'000);
    q.max_boxes = a.integer("--max-boxes", 1, 1LL << 40, default_max_boxes);
    q.lower = a.has("--lower");
    q.output_path = a.value("--output");
    expect_writable_outputs(a, {"--output"});
    if (a.has("--max-boxes") && !q.output_path)
        throw usage_error("--max-boxes needs --output (nothing is drawn without it)");
    if (q.output_path == "-" && a.has("--format") && q.format != "none")
        throw usage_error("--output - writes the picture to standard output, which leaves no "
                          "room for the " +
                          q.format + " report: give --output a file name");
    // Every picture together: at least a forward and a backward per stage and microbatch of
    // each schedule tried (about 20), checked before anything is simulated.
    if (q.output_path && 2LL * q.p * q.m * q.v_min > q.max_boxes)
        throw usage_error(too_many_boxes(2LL * q.p * q.m * q.v_min, q.max_boxes));
    q.costs = read_cost_options(a);
    if (auto text = a.value("--memory-limit")) q.limit = parse_positive(*text, "--memory-limit");
    q.parameters = q.costs.uniform.parameters.value_or(0.0);
    // --model --layout: the layout fixes V and the per-stage costs; the capacity is the limit.
    q.from_model = read_model_layout(a);
    if (q.from_model) {
        const int stages = q.from_model->stages;
        if (stages % q.p != 0)
            throw usage_error("--layout has " + std::to_string(stages) +
                              " stages, not a multiple of the " + std::to_string(q.p) + " ranks");
        expect_stage_flags_fit(a, q, stages,
                               "the " + std::to_string(stages) + " stages of --layout",
                               "of --layout's " + std::to_string(stages) + " stages");
        q.v_min = q.v_max = stages / q.p;
        if (!q.limit) q.limit = q.from_model->capacity;
        q.parameters = 0; // the largest rank's parameters (stage sums, any placement: a bound)
        for (int s = 0; s < stages; ++s)
            q.parameters = std::max(q.parameters, q.costs.at(s).parameters * q.v_min);
    }
    // A cost file with per-stage values fixes the stage count, hence V: every schedule with
    // that V is timed with the costs as they are (nothing is split), and so is the order
    // `tune` finds for them.
    q.per_stage_file = !q.costs.per_stage.empty() && !q.from_model;
    if (q.per_stage_file) {
        const auto stages = static_cast<long long>(q.costs.per_stage.size());
        if (stages % q.p != 0)
            throw usage_error("the cost file has " + std::to_string(stages) +
                              " per-stage entries, not a multiple of the " + std::to_string(q.p) +
                              " ranks (one entry per stage: ranks x stages per rank)");
        expect_stage_flags_fit(
            a, q, static_cast<int>(stages),
            "the " + std::to_string(stages) + " per-stage entries of the cost file",
            "the cost file's " + std::to_string(stages) + " per-stage entries fix");
        q.v_min = q.v_max = static_cast<int>(stages / q.p);
        for (int s = 0; s < static_cast<int>(stages); ++s)
            q.parameters = std::max(q.parameters, q.costs.at(s).parameters * q.v_min);
    }
    q.per_stage = q.from_model.has_value() || q.per_stage_file;
    q.tune_seconds =
        a.has("--tune-time") ? parse_number(*a.value("--tune-time"), "--tune-time") : 1.0;
    if (a.has("--tune-time") && !q.per_stage)
        throw usage_error("--tune-time needs per-stage costs (a cost file with per-stage values, "
                          "or --model --layout)");
    return q;
}

// Simulates `o` under `costs` (lowered first with --lower); the timeline is kept only for a
// picture, so that memory is one order at a time.
result simulated(const compare_request& q, const schedule_entry& e, int v, order o,
                 const cost_model& costs) {
    if (q.lower) o = lower(o);
    result r{&e, v, simulate(o, costs, simulate_options{.timeline = q.output_path.has_value()}), 0,
             0};
    r.peak_activations = max_over_ranks(r.sim, &rank_summary::peak_activations);
    r.peak_memory = max_over_ranks(r.sim, &rank_summary::peak_memory);
    return r;
}

// Every built-in schedule at every V it accepts: a result per fit, else a rejection with the
// most telling reason.
void collect_builtin(const compare_request& q, comparison& c) {
    for (const schedule_entry& e : builtin_schedules().entries()) {
        std::string first_reason; // why it was not simulated
        bool any = false;
        if (q.per_stage && e.placement == stage_placement::dual) {
            // Per-stage costs describe one pipeline in model order; dual runs two.
            c.rejected.push_back({e.pytorch_name, q.from_model
                                                      ? "a --layout describes one pipeline, not two"
                                                      : "per-stage costs describe one pipeline, "
                                                        "not two"});
            continue;
        }
        for (int v = q.v_min; v <= q.v_max; ++v) {
            const config cfg{.ranks = q.p, .stages_per_rank = v, .microbatches = q.m};
            const cost_model split =
                q.per_stage ? q.costs
                            : split_over_stages(q.costs, stages_per_microbatch(v, e.placement));
            schedule_params params = with_costs(e, {}, split);
            if (q.limit && *q.limit > q.parameters && takes_parameter(e, "memory_limit"))
                params.memory_limit = *q.limit - q.parameters;
            try {
                e.check(cfg, params);
            } catch (const config_error& err) {
                // Prefer the reason for the schedule's own default V (the most telling one).
                if (first_reason.empty() || v == e.default_stages_per_rank)
                    first_reason = reason_of(err.what());
                continue;
            }
            if (estimated_slots(cfg) > static_cast<double>(q.max_actions)) {
                if (first_reason.empty())
                    first_reason = "more slots (PyTorch's idle steps included) than --max-actions";
                continue;
            }
            result r = simulated(q, e, v, e.generate(cfg, params), split);
            if (!r.sim) {
                if (first_reason.empty()) first_reason = describe_problem(r.sim);
                continue;
            }
            if (q.limit && !fits_memory_limit(r.peak_memory, *q.limit)) {
                const std::string why = "peak memory " + format_number(r.peak_memory) +
                                        " exceeds the limit " + format_number(*q.limit) +
                                        " (stages per rank: " + std::to_string(v) + ")";
                if (first_reason.empty() || v == e.default_stages_per_rank) first_reason = why;
                continue;
            }
            c.results.push_back(std::move(r));
            any = true;
        }
        if (!any) c.rejected.push_back({e.pytorch_name, first_reason});
    }
}

// With per-stage costs, the auto-scheduler's order for each placement too.
void collect_tuned(const compare_request& q, comparison& c) {
    if (!q.per_stage || q.tune_seconds <= 0) return;
    for (auto placement : {stage_placement::loop, stage_placement::v}) {
        if (placement == stage_placement::v && q.v_min < 2) continue;
        auto entry = std::make_unique<schedule_entry>();
        entry->name = std::string("tuned_") + std::string(to_string_view(placement));
        entry->pytorch_name = "tuned (" + std::string(to_string_view(placement)) + ")";
        entry->placement = placement;
        tune_problem prob;
        prob.ranks = q.p;
        prob.microbatches = q.m;
        prob.stages_per_rank = q.v_min;
        prob.placement = placement;
        prob.costs = q.costs;
        prob.memory_limit = q.limit;
        tune_options topts;
        topts.time_limit = q.tune_seconds;
        // The tuned order holds every compute action (more once lowered): over --max-actions it
        // is skipped like the built-ins, before the search.
        if (prob.compute_actions() > static_cast<double>(q.max_actions)) {
            c.rejected.push_back({entry->pytorch_name, "more compute actions than --max-actions"});
            c.tuned_entries.push_back(std::move(entry));
            continue;
        }
        try {
            const tune_result tr = tune(prob, topts);
            c.results.push_back(simulated(q, *entry, q.v_min, tr.best, q.costs));
        } catch (const config_error& err) {
            c.rejected.push_back({entry->pytorch_name, reason_of(err.what())});
        }
        c.tuned_entries.push_back(std::move(entry));
    }
}

// By makespan; ties by memory, then as listed (stable).
void rank_results(std::vector<result>& results) {
    std::stable_sort(results.begin(), results.end(), [](const result& x, const result& y) {
        if (x.sim.makespan != y.sim.makespan) return x.sim.makespan < y.sim.makespan;
        return x.peak_memory < y.peak_memory;
    });
}

// The results on one time axis, fastest first.
std::string picture(const compare_request& q, const std::vector<result>& results) {
    long long boxes = 0;
    for (const auto& r : results) boxes += static_cast<long long>(r.sim.timeline.size());
    if (boxes > q.max_boxes) throw usage_error(too_many_boxes(boxes, q.max_boxes));
    std::vector<io::chart> charts;
    for (const auto& r : results) {
        const config cfg{.ranks = q.p,
                         .stages_per_rank = r.stages_per_rank,
                         .microbatches = q.m,
                         .placement = r.entry->placement};
        charts.push_back({r.entry->pytorch_name, cfg, r.sim, false, ""});
    }
    io::svg_options opts;
    opts.title = "ppsched compare: " + counted(q.p, "rank", "ranks") + ", " +
                 counted(q.m, "microbatch", "microbatches") + (q.lower ? ", lowered" : "");
    opts.subtitle = q.from_model ? "fastest first; per-stage costs of --model --layout"
                    : q.per_stage_file
                        ? "fastest first; per-stage costs of the cost file"
                        : "fastest first; the costs are a rank's share of the model, "
                          "split over its V stages";
    return io::write_svg(charts, opts);
}

// Writes the picture (when asked for) and the report; the exit status.
int write_comparison(const compare_request& q, const comparison& c, output& out) {
    if (q.output_path && !c.results.empty()) {
        if (*q.output_path == "-") {
            // The picture is the output (the report would corrupt it).
            out.out = picture(q, c.results);
            return exit_ok;
        }
        write_output_file(*q.output_path, picture(q, c.results));
    }
    if (q.format == "text")
        out.out = text_report(q.p, q.m, q.limit, c.results, c.rejected,
                              q.from_model       ? model_memory_note
                              : q.per_stage_file ? memory_unit_note
                                                 : rank_share_memory_note);
    if (q.per_stage && q.format == "text") {
        const std::string share = "the costs are a rank's share of the model";
        if (const auto at = out.out.find(share); at != std::string::npos)
            out.out.replace(at, share.size(),
                            q.from_model ? "per-stage costs of --model --layout"
                                         : "per-stage costs of the cost file");
    }
    if (q.format == "json") out.out = json_report(q.p, q.m, q.limit, c.results, c.rejected);
    if (c.results.empty()) {
        out.err = "ppsched: compare: no schedule accepts " + counted(q.p, "rank", "ranks") +
                  " and " + counted(q.m, "microbatch", "microbatches") +
                  (q.limit ? " within the memory limit " + format_number(*q.limit) : "") + "\n";
        return exit_failure;
    }
    return exit_ok;
}

} // namespace

int cmd_compare(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, compare_help);
    if (a.help_requested()) {
        out.out = help_text(compare_help);
        return exit_ok;
    }
    a.expect_positionals(0, 0, "");
    const compare_request q = read_request(a);
    comparison c;
    collect_builtin(q, c);
    collect_tuned(q, c);
    rank_results(c.results);
    return write_comparison(q, c, out);
}

} // namespace ppsched::cli
