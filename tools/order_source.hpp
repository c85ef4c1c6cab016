#pragma once
/// \file order_source.hpp
/// The order a timing subcommand (`simulate`, `render`, `trace`, `timeline`) works on: a schedule
/// by NAME (`--ranks`, `--microbatches`, `--stages-per-rank`, schedule parameters) generated with
/// the costs it is timed with, or a PyTorch CSV file (`--csv`, optional `--placement`); then
/// `--max-actions` and `--lower`.

#include <string>
#include <vector>

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/config.hpp>
#include <ppsched/cost_model.hpp>
#include <ppsched/registry.hpp>

#include "cli.hpp"
#include "cost_options.hpp"
#include "input.hpp"
#include "schedule_options.hpp"

namespace ppsched::cli {

/// An order ready to time, with the costs to time it with and a title for reports.
struct sourced_order {
    order o;
    cost_model costs;
    std::string title; ///< the schedule's PyTorch name, or the CSV file's name
};

/// Reads the source, cost and lowering options of `a` and builds the order. Throws
/// `usage_error`, `parse_error` or `config_error` for bad usage or input (exit status 2).
/// A cost-aware schedule plans with the costs it is timed with; `--per-rank` splits a rank's
/// costs over the stages a microbatch passes through on it.
[[nodiscard]] inline sourced_order load_order(const args& a) {
    const long long max_actions = a.integer("--max-actions", 1, 1LL << 40, 50'000'000);
    sourced_order out;
    const schedule_entry* entry = nullptr; // with NAME: generated once the costs are known
    config generated;
    if (auto csv = a.value("--csv")) {
        a.expect_positionals(0, 0, "");
        for (const char* opt :
             {"--ranks", "--microbatches", "--stages-per-rank", "--microbatch-group-size"})
            if (a.has(opt))
                throw usage_error(std::string(opt) + " cannot be used with --csv (the order "
                                                     "in the file has its own configuration)");
        out.o = read_order(*csv);
        out.title = source_name(*csv);
        if (auto name = a.value("--placement")) {
            config cfg = out.o.cfg();
            if (!parse_placement(*name, cfg.placement))
                throw usage_error("--placement must be loop, v or dual, got '" + *name + "'");
            check(cfg);
            out.o = order(cfg, std::vector<rank_slots>(out.o.begin(), out.o.end()));
        }
    } else {
        a.expect_positionals(1, 1, "NAME (or --csv FILE)");
        if (a.has("--placement"))
            throw usage_error("--placement needs --csv (a schedule has its own placement)");
        const schedule_entry* found = builtin_schedules().find(a.positionals()[0]);
        if (found == nullptr)
            throw usage_error("unknown schedule '" + a.positionals()[0] +
                              "'; 'ppsched schedules' lists them");
        if (!a.has("--ranks")) throw usage_error("missing option --ranks P");
        if (!a.has("--microbatches")) throw usage_error("missing option --microbatches M");
        generated.ranks = static_cast<int>(a.integer("--ranks", 1, max_stage + 1, 1));
        generated.microbatches = static_cast<int>(a.integer("--microbatches", 1, 1LL << 30, 1));
        generated.stages_per_rank = static_cast<int>(
            a.integer("--stages-per-rank", 1, max_stage + 1, found->default_stages_per_rank));
        const long long actions =
            3LL * generated.ranks * generated.stages_per_rank * generated.microbatches;
        if (actions > max_actions)
            throw usage_error("the order would have up to " + std::to_string(actions) +
                              " actions, more than --max-actions " + std::to_string(max_actions));
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
    if (a.has("--lower")) out.o = lower(out.o);
    return out;
}

} // namespace ppsched::cli
