// `ppsched plan MODEL.json --ranks P --microbatches M [--max-stages-per-rank V]
// [--time-limit S] [--output order.csv] [--format text|json]`: splits a model into stages
// jointly with its schedule (ppsched::plan) and prints the split as a Megatron layout string
// and torchtitan module lists, and how it compares with the default split.

#include <array>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <ppsched/io/csv.hpp>
#include <ppsched/plan/layout.hpp>
#include <ppsched/plan/plan.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "cost_options.hpp"
#include "input.hpp"
#include "output_file.hpp"

namespace ppsched::cli {

namespace {

constexpr std::array<option, 9> plan_option_list{{
    {"--ranks", "P", "pipeline ranks (required)"},
    {"--microbatches", "M", "microbatches per step (required)"},
    {"--max-stages-per-rank", "V", "try 1..V stages per rank (1 to 16, default 4)"},
    {"--time-limit", "S",
     "seconds for all schedule searches together (default 5); past it the default splits' "
     "built-in schedules are still timed, for the baseline"},
    {"--max-evaluations", "N", "per split: stop the search after N simulated orders"},
    {"--fused", "", "the runtime cannot split backward into I and W (B only)"},
    {"--any-v", "",
     "also try V placements of 3 or more stages per rank (by default V takes exactly 2, as "
     "PyTorch's and torchtitan's V schedules place them; more needs a runtime of your own)"},
    {"--output", "FILE", "write the chosen order as PyTorch's CSV to FILE"},
    {"--format", "FORMAT", "text (default) or json"},
}};

constexpr command_help plan_help{
    .name = "plan",
    .arguments = "MODEL.json",
    .summary =
        "Split a model's layers into pipeline stages jointly with the schedule: the stage\n"
        "split, the stages per rank, the placement (loop or V) and the order, minimising the\n"
        "simulated step time within each rank's memory capacity. Prints the split as a\n"
        "Megatron-LM layout string and torchtitan module lists, and the default split (equal\n"
        "decoder layers per stage) with its best built-in schedule for comparison.",
    .options = plan_option_list,
    .details =
        "MODEL.json: layers with F, I, W (or B) in ms, activation and parameters in GB, send\n"
        "in MB; memory_capacity GB, p2p_latency ms, p2p_bandwidth GB/s (docs/planning.md).\n"
        "JSON output: {makespan, lower_bound, gap, stages_per_rank, placement, split_rule,\n"
        "start, layout, megatron_refuses (why Megatron would refuse the layout, or null),\n"
        "stage_layers, modules, peak_memory, default: {layout,\n"
        "stages_per_rank, placement, schedule, makespan} | null (no built-in schedule was\n"
        "timed on a default split that fits), speedup | null}. start is where the chosen\n"
        "order's search began (a built-in schedule, greedy, beam...). Exit status 2 when no\n"
        "split plan tries fits the memory.",
};

std::string json_int_array(const std::vector<int>& v) {
    std::string out = "[";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
    return out + "]";
}

} // namespace

int cmd_plan(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, plan_help);
    if (a.help_requested()) {
        out.out = help_text(plan_help);
        return exit_ok;
    }
    a.expect_positionals(1, 1, "MODEL.json");
    if (!a.has("--ranks")) throw usage_error("missing option --ranks P");
    if (!a.has("--microbatches")) throw usage_error("missing option --microbatches M");
    const int ranks = static_cast<int>(a.integer("--ranks", 1, 4096, 1));
    const int microbatches = static_cast<int>(a.integer("--microbatches", 1, 1 << 20, 1));
    plan_options opts;
    opts.max_stages_per_rank = static_cast<int>(a.integer("--max-stages-per-rank", 1, 16, 4));
    if (auto t = a.value("--time-limit")) {
        opts.time_limit = parse_number(*t, "--time-limit");
        // As tune's: a deadline past 1e7 s is no limit, and far beyond it the clock overflows.
        if (!(opts.time_limit <= 1e7)) throw usage_error("--time-limit must be <= 1e7 seconds");
    }
    opts.max_evaluations =
        static_cast<std::uint64_t>(a.integer("--max-evaluations", 1, 1LL << 40, 0));
    opts.fused_backward = a.has("--fused");
    opts.any_v = a.has("--any-v");
    const std::string format = a.value("--format").value_or("text");
    if (format != "text" && format != "json")
        throw usage_error("--format must be text or json, got '" + format + "'");
    expect_file_names(a, "plan", {"--output"});
    expect_writable_outputs(a, {"--output"});

    const std::string path = a.positionals()[0];
    const model_description model = read_model_json(read_input(path), source_name(path));
    const plan_result r = plan(model, ranks, microbatches, opts);

    const stage_layout stages = layout_of(model, r.stage_layers);
    const std::string layout = write_megatron_layout(stages);
    // Megatron checks a layout's layers (embedding first, loss last, MTP after the decoders):
    // a model without them still plans, but its layout is then not one for Megatron's flag.
    const std::string refusal = megatron_layout_refusal(stages, ranks);
    const std::string modules = write_module_lists(module_lists(model, r.stage_layers));
    const stage_layout default_stages =
        r.default_schedule.empty() ? stage_layout{} : layout_of(model, r.default_stage_layers);
    const std::string default_layout =
        r.default_schedule.empty() ? std::string() : write_megatron_layout(default_stages);
    double peak = 0;
    for (double x : r.schedule.peak_memory) peak = x > peak ? x : peak;
    // No speedup where there is no baseline, or where every step costs nothing (0 / 0):
    // NaN, `null` in JSON.
    const double speedup = r.default_schedule.empty() || r.schedule.makespan <= 0
                               ? std::numeric_limits<double>::quiet_NaN()
                               : r.default_makespan / r.schedule.makespan;

    if (auto file = a.value("--output")) write_output_file(*file, io::write_csv(r.schedule.best));

    const std::string placement(to_string_view(r.placement));
    if (format == "json") {
        std::string s = "{\"makespan\": " + json_number(r.schedule.makespan) +
                        ", \"lower_bound\": " + json_number(r.schedule.bound.value) +
                        ", \"gap\": " + json_number(r.schedule.gap) +
                        ", \"stages_per_rank\": " + std::to_string(r.stages_per_rank) +
                        ", \"placement\": " + json_string(placement) +
                        ", \"split_rule\": " + json_string(r.rule) +
                        ", \"start\": " + json_string(r.schedule.start) +
                        ",\n \"layout\": " + json_string(layout) + ", \"megatron_refuses\": " +
                        (refusal.empty() ? std::string("null") : json_string(refusal)) +
                        ",\n \"stage_layers\": " + json_int_array(r.stage_layers) +
                        ",\n \"modules\": " + modules + ",\n \"peak_memory\": [";
        for (std::size_t i = 0; i < r.schedule.peak_memory.size(); ++i)
            s += (i ? ", " : "") + json_number(r.schedule.peak_memory[i]);
        s += "],\n \"default\": ";
        if (r.default_schedule.empty()) {
            s += "null";
        } else {
            s += "{\"layout\": " + json_string(default_layout) +
                 ", \"stages_per_rank\": " + std::to_string(r.default_stages_per_rank) +
                 ", \"placement\": " +
                 json_string(std::string(to_string_view(r.default_placement))) +
                 ", \"schedule\": " + json_string(r.default_schedule) +
                 ", \"makespan\": " + json_number(r.default_makespan) + "}";
        }
        s += ", \"speedup\": " + json_number(speedup) + "}\n";
        out.out = s;
        return exit_ok;
    }

    std::string s = (model.name.empty() ? source_name(path) : printable(model.name)) + ": " +
                    counted(ranks, "rank", "ranks") + ", " +
                    counted(microbatches, "microbatch", "microbatches") + "\n\n";
    // Where the search found nothing faster than a built-in schedule, the order is that one.
    const bool builtin = r.schedule.start == r.schedule.best_builtin;
    const bool improved = r.schedule.makespan < r.schedule.start_makespan;
    s += "plan: " + counted(r.stages_per_rank, "stage", "stages") + " per rank, placement " +
         placement + ", split '" + r.rule + "', schedule " +
         (improved  ? "improved from " + r.schedule.start
          : builtin ? r.schedule.start + " (the search found nothing faster)"
                    : "found by the search (" + r.schedule.start + ")") +
         "\n";
    s += "  step time      " + format_number(r.schedule.makespan) + " ms (lower bound " +
         format_number(r.schedule.bound.value) + ", gap " +
         (std::isfinite(r.schedule.gap) ? format_number(100 * r.schedule.gap) + " %"
                                        : std::string("unbounded")) +
         ")\n";
    s += "  peak memory    " + format_number(peak) + " GB per rank (capacity " +
         format_number(model.memory_capacity) + ")\n";
    if (refusal.empty())
        s += "  megatron       --pipeline-model-parallel-layout \"" + layout + "\"\n";
    else
        s += "  layout         \"" + layout + "\" (Megatron refuses it: " + refusal + ")\n";
    s += "  layers/stage   " + json_int_array(r.stage_layers) + "\n";
    if (r.placement == stage_placement::v)
        s +=
            r.stages_per_rank == 2
                ? "                 (stages in model order; V placement: rank r holds stages r "
                  "and\n"
                  "                 2P-1-r, as PyTorch's and torchtitan's V schedules place them;\n"
                  "                 Megatron has no V placement: its layout places stage s on\n"
                  "                 rank s % P, another schedule)\n"
                : "                 (stages in model order; V placement: rank r holds stages r,\n"
                  "                 2P-1-r, 2P+r, ... (--any-v): PyTorch's and torchtitan's V\n"
                  "                 schedules take exactly 2 stages per rank and Megatron has no\n"
                  "                 V placement; only a runtime of your own runs this plan)\n";
    s += "  torchtitan     module_fqns_per_model_part =\n" + modules + "\n\n";
    if (r.default_schedule.empty()) {
        s += "default split: no built-in schedule to compare with (none applies, fits its "
             "memory, or is small enough to time)\n";
    } else {
        s += "default split: " + counted(r.default_stages_per_rank, "stage", "stages") +
             " per rank, placement " + std::string(to_string_view(r.default_placement)) +
             ", best built-in " + r.default_schedule + "\n";
        s += "  step time      " + format_number(r.default_makespan) + " ms\n";
        s += (megatron_layout_refusal(default_stages, ranks).empty() ? "  megatron       \""
                                                                     : "  layout         \"") +
             default_layout + "\"\n";
        s += std::isfinite(speedup)
                 ? "  speedup        " + format_number(speedup) + "x\n"
                 : std::string("  speedup        none: the step time is 0 (every cost is 0)\n");
    }
    if (auto file = a.value("--output")) s += "\norder: " + *file + "\n";
    out.out = s;
    return exit_ok;
}

} // namespace ppsched::cli
