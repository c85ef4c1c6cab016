// `ppsched generate NAME --ranks P --microbatches M [--stages-per-rank V] [--format csv|table|none]
// [--lower] [--microbatch-group-size G] [--f X --i X --w X --p2p X] [--memory-limit X]`:
// prints the compute-only pipeline order of a schedule (cost- and memory-aware ones planned
// with the given costs and limit), or with --lower what a runtime executes (PyTorch's lowering:
// UNSHARD/RESHARD, REDUCE_GRAD, SEND/RECV).

#include <span>
#include <string>

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/config.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/io/step_table.hpp>
#include <ppsched/registry.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "schedule_options.hpp"

namespace ppsched::cli {

namespace {

constexpr option generate_options[] = {
    {"--ranks", "P", "pipeline ranks (required)"},
    {"--microbatches", "M", "microbatches per iteration (required)"},
    {"--stages-per-rank", "V",
     "stages per rank (default: the schedule's, see 'ppsched schedules')"},
    {"--format", "FORMAT",
     "csv (PyTorch's CSV, one row per rank; the default), table "
     "(PyTorch's step table), or none (generate, and lower with --lower, but print nothing: "
     "for timing)"},
    {"--lower", "",
     "print the lowered order a runtime executes (PyTorch's _prepare_schedule_with_comms)"},
    schedule_param_options[0],
    planning_options[0],
    planning_options[1],
    planning_options[2],
    planning_options[3],
    planning_options[4],
    planning_options[5],
    for_option,
};

constexpr command_help generate_help{
    .name = "generate",
    .arguments = "NAME",
    .summary = "Print the compute-only pipeline order of schedule NAME (PyTorch's name such as\n"
               "Interleaved1F1B, or the C++ name such as interleaved_1f1b; case-insensitive).",
    .options = generate_options,
    .details = "A configuration the schedule does not support is an error (exit status 2) with\n"
               "the schedule's message. 'ppsched schedules' lists the names and constraints.\n"
               "Names are also the zero-bubble authors' (ZB-H1, ZB-H2, 1F1B-V, ZB-V-Hand, ...).\n"
               "--f --i --w --p2p and --memory-limit only go to schedules that plan with costs\n"
               "or memory ('ppsched schedules --long' shows which); others reject them.",
};

// Orders larger than this many slots are refused: they would not fit a terminal or a file
// anyone reads, and the cap keeps a typo from exhausting memory.
constexpr long long max_slots = 50'000'000;

} // namespace

int cmd_generate(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, generate_help);
    if (a.help_requested()) {
        out.out = help_text(generate_help);
        return exit_ok;
    }
    a.expect_positionals(1, 1, "NAME");
    const schedule_entry* found = builtin_schedules().find(a.positionals()[0]);
    if (found == nullptr)
        throw usage_error("unknown schedule '" + printable(a.positionals()[0]) +
                          "'; 'ppsched schedules' lists them");
    const schedule_entry& entry = *found;
    if (!a.has("--ranks")) throw usage_error("missing option --ranks P");
    if (!a.has("--microbatches")) throw usage_error("missing option --microbatches M");
    const std::string format = a.value("--format").value_or("csv");
    if (format != "csv" && format != "table" && format != "none")
        throw usage_error("--format must be csv or table (or none), got '" + printable(format) +
                          "'");

    constexpr long long max_int = 1LL << 30;
    config cfg;
    cfg.ranks = static_cast<int>(a.integer("--ranks", 1, max_stage + 1, 1));
    cfg.microbatches = static_cast<int>(a.integer("--microbatches", 1, max_int, 1));
    cfg.stages_per_rank = static_cast<int>(
        a.integer("--stages-per-rank", 1, max_stage + 1, entry.default_stages_per_rank));
    // At most three compute actions (F, I, W) per stage and microbatch, and the idle steps.
    check_slot_budget(cfg, max_slots,
                      "the " + std::to_string(max_slots) + " generate prints at most");

    order o = builtin_schedules().generate(entry.name, cfg,
                                           read_planning_params(a, read_schedule_params(a)));
    check_reader(a, o.cfg(), out);
    if (a.has("--lower")) o = lower(o);
    if (format == "csv")
        out.out = io::write_csv(o);
    else if (format == "table")
        out.out = io::format_step_table(o);
    return exit_ok;
}

} // namespace ppsched::cli
