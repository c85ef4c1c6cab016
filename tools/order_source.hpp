#pragma once
/// \file order_source.hpp
/// The order a timing subcommand (`simulate`, `render`, `trace`, `timeline`) works on: a schedule
/// by NAME (`--ranks`, `--microbatches`, `--stages-per-rank`, schedule parameters) generated with
/// the costs it is timed with, or a PyTorch CSV file (`--csv`, with the configuration options
/// honoured and the rest inferred, then validated); then `--max-actions` and `--lower`.

#include <algorithm>
#include <string>
#include <vector>

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/config.hpp>
#include <ppsched/cost_model.hpp>
#include <ppsched/registry.hpp>
#include <ppsched/simulation.hpp>

#include "cli.hpp"
#include "cost_options.hpp"
#include "input.hpp"
#include "schedule_options.hpp"

namespace ppsched::cli {

/// The default of `--max-boxes`: the most actions one picture draws (a million boxes make an
/// SVG of a few hundred MB, about what a browser still opens).
inline constexpr long long default_max_boxes = 1'000'000;

/// The message for a picture larger than `--max-boxes`.
[[nodiscard]] inline std::string too_many_boxes(long long boxes, long long max_boxes) {
    return "the picture would draw at least " + std::to_string(boxes) +
           " boxes, more than --max-boxes " + std::to_string(max_boxes) +
           " (such a file is too large to open; raise --max-boxes, or draw fewer ranks or "
           "microbatches)";
}

/// An order ready to time, with the costs to time it with and a title for reports.
struct sourced_order {
    order o;
    cost_model costs;
    std::string title; ///< the schedule's PyTorch name, or the CSV file's name
    /// A CSV order's validation (eager transport); empty for a generated order.
    validation_report report;
};

/// Reads the source, cost and lowering options of `a` and builds the order. Throws
/// `usage_error`, `parse_error` or `config_error` for bad usage or input (exit status 2).
/// A cost-aware schedule plans with the costs it is timed with; `--per-rank` splits a rank's
/// costs over the stages a microbatch passes through on it.
/// `max_boxes` (0: none): the most actions a picture may draw, checked before anything is
/// generated (`--max-boxes`).
[[nodiscard]] inline sourced_order load_order(const args& a, long long max_boxes = 0) {
    const long long max_actions = a.integer("--max-actions", 1, 1LL << 40, 50'000'000);
    sourced_order out;
    const schedule_entry* entry = nullptr; // with NAME: generated once the costs are known
    config generated;
    if (auto csv = a.value("--csv")) {
        a.expect_positionals(0, 0, "");
        if (const std::size_t n = a.count("--csv"); n > 1)
            throw usage_error("--csv given " + std::to_string(n) +
                              " times: this command reads one order ('ppsched report' stacks "
                              "several)");
        if (a.has("--microbatch-group-size"))
            throw usage_error("--microbatch-group-size cannot be used with --csv (the order in "
                              "the file is already made)");
        out.title = source_name(*csv);
        // Configuration flags given with --csv are honoured (the rest is inferred).
        out.o = read_order_file(a, io::read_csv_rows(read_input(*csv), out.title), out.title)
                    .to_order(out.title);
        // (Empty slots in a lowered order are allowed here: timing and drawing read step
        // layouts such as PyTorch's _simulate_comms_compute writes; validate and lower, which
        // check files for PyTorch's runtime, refuse them.)
        out.report = validate(out.o);
    } else {
        a.expect_positionals(1, 1, "NAME (or --csv FILE)");
        if (a.has("--placement"))
            throw usage_error("--placement needs --csv (a schedule has its own placement)");
        const schedule_entry* found = builtin_schedules().find(a.positionals()[0]);
        if (found == nullptr) {
            // A file named where a schedule goes: most likely a CSV order without --csv.
            const std::string& name = a.positionals()[0];
            const bool file_like = name.find('/') != std::string::npos ||
                                   name.find('.') != std::string::npos || name == "-";
            throw usage_error("unknown schedule '" + printable(name) +
                              "'; 'ppsched schedules' lists them" +
                              (file_like ? "; to read a CSV order give --csv " + printable(name)
                                         : std::string()));
        }
        if (!a.has("--ranks")) throw usage_error("missing option --ranks P");
        if (!a.has("--microbatches")) throw usage_error("missing option --microbatches M");
        generated.ranks = static_cast<int>(a.integer("--ranks", 1, max_stage + 1, 1));
        generated.microbatches = static_cast<int>(a.integer("--microbatches", 1, 1LL << 30, 1));
        generated.stages_per_rank = static_cast<int>(
            a.integer("--stages-per-rank", 1, max_stage + 1, found->default_stages_per_rank));
        // At least a forward and a backward per stage and microbatch.
        const long long least =
            2LL * generated.ranks * generated.stages_per_rank * generated.microbatches;
        if (max_boxes > 0 && least > max_boxes) throw usage_error(too_many_boxes(least, max_boxes));
        // Its actions and PyTorch's idle steps, after the picture's own limit.
        check_slot_budget(generated, max_actions, "--max-actions " + std::to_string(max_actions));
        entry = found;
        out.title = found->pytorch_name;
    }
    out.costs = read_cost_options(a);
    if (a.has("--model")) {
        // The layout fixes the stage count: V = stages / P.
        const int stages = static_cast<int>(out.costs.per_stage.size());
        const int ranks = entry ? generated.ranks : out.o.cfg().ranks;
        if (stages % ranks != 0)
            throw usage_error("--layout has " + std::to_string(stages) +
                              " stages, not a multiple of the " + std::to_string(ranks) + " ranks");
        if (entry) {
            if (a.has("--stages-per-rank") && generated.stages_per_rank != stages / ranks)
                throw usage_error("--stages-per-rank " + std::to_string(generated.stages_per_rank) +
                                  " differs from the layout's " + std::to_string(stages / ranks));
            generated.stages_per_rank = stages / ranks;
        } else if (out.o.cfg().num_stages() != stages) {
            throw usage_error("--layout has " + std::to_string(stages) +
                              " stages but the order has " +
                              std::to_string(out.o.cfg().num_stages()));
        }
    }
    if (a.has("--per-rank")) {
        if (!out.costs.per_stage.empty())
            throw usage_error("--per-rank cannot split a cost file's per-stage values");
        out.costs = split_over_stages(
            out.costs,
            entry ? stages_per_microbatch(generated.stages_per_rank, entry->placement)
                  : stages_per_microbatch(out.o.cfg().stages_per_rank, out.o.cfg().placement));
    }
    if (entry != nullptr)
        out.o = builtin_schedules().generate(
            entry->name, generated, with_costs(*entry, read_schedule_params(a), out.costs));
    if (static_cast<long long>(out.o.action_count()) > max_actions)
        throw usage_error("the order has " + std::to_string(out.o.action_count()) +
                          " actions, more than --max-actions " + std::to_string(max_actions));
    // A per-stage cost array is for one order's stages: any other length is a mistake (a
    // file written for another stage count), not something to pad with the uniform values.
    if (!out.costs.per_stage.empty() &&
        out.costs.per_stage.size() != static_cast<std::size_t>(out.o.cfg().num_stages())) {
        const std::size_t given = out.costs.per_stage.size();
        const auto ranks = static_cast<std::size_t>(out.o.cfg().ranks);
        // A named schedule's stage count follows --stages-per-rank (2 by default for the
        // interleaved ones): say which value this file fits, where the schedule takes it.
        std::string hint;
        if (out.o.cfg().placement == stage_placement::dual) {
            hint = "; with the dual placement stage i is the i-th stage of the first pipeline "
                   "for i < P*V/2 and of the second after it, see docs/simulation.md";
        } else if (entry != nullptr && ranks > 0 && given % ranks == 0) {
            config fitting = out.o.cfg();
            fitting.stages_per_rank = static_cast<int>(given / ranks);
            try {
                builtin_schedules().check(entry->name, fitting);
                hint = "; this file fits --stages-per-rank " + std::to_string(given / ranks);
            } catch (const config_error& e) {
                hint = "; this file fits " + std::to_string(given / ranks) +
                       (given / ranks == 1 ? " stage" : " stages") + " per rank, which " +
                       entry->pytorch_name + " does not take: " + e.what();
            }
        }
        throw usage_error(per_stage_source(a) + " gives " + std::to_string(given) +
                          " per-stage entries but the order has " +
                          std::to_string(out.o.cfg().num_stages()) +
                          " stages (ranks x stages per rank" + hint + ")");
    }
    if (max_boxes > 0 && static_cast<long long>(out.o.action_count()) > max_boxes)
        throw usage_error(too_many_boxes(static_cast<long long>(out.o.action_count()), max_boxes));
    // An order that deadlocks cannot be lowered; it is timed as it is, and the simulation
    // reports the deadlock (exit status 1, as without --lower).
    if (a.has("--lower") && !out.report.has(rule::deadlock) && out.report.valid()) {
        // Lowering adds a send and a receive per message and FSDP actions: about three
        // actions per compute action, which the limit covers too.
        const auto compute = static_cast<long long>(out.o.action_count());
        if (3 * compute > max_actions)
            throw usage_error("lowered, the order would have about " + std::to_string(3 * compute) +
                              " actions (a send and a receive per message), more than "
                              "--max-actions " +
                              std::to_string(max_actions));
        out.o = lower(out.o);
    }
    return out;
}

/// Whether an invalid order's validation is what to report rather than its simulation's
/// outcome: validation finds more than a deadlock (a missing action, a row too few: the cause
/// of the deadlock the simulator runs into), or the order runs and is still invalid.
[[nodiscard]] inline bool report_validation(const validation_report& report,
                                            const simulation& sim) {
    if (report.valid()) return false;
    return sim || std::any_of(report.begin(), report.end(),
                              [](const violation& v) { return v.what != rule::deadlock; });
}

/// The message and exit status for an order that simulates but breaks a rule of `validate`
/// (a dropped backward, a missing rank row): empty when it is valid.
[[nodiscard]] inline std::string invalid_order_message(const std::string& command,
                                                       const sourced_order& s) {
    if (s.report.valid()) return {};
    return "ppsched: " + command + ": " + s.title + " is not a valid order ('ppsched validate " +
           s.title + "' shows where):\n" + to_string(s.report);
}

} // namespace ppsched::cli
