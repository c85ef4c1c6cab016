#pragma once
/// \file cost_options.hpp
/// The cost options shared by `ppsched simulate` and `ppsched compare` (`--costs FILE`, `--f X`,
/// ...), and the number formatting of their reports.

#include <array>
#include <charconv>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/cost_model.hpp>
#include <ppsched/io/cost_json.hpp>
#include <ppsched/registry.hpp>

#include "cli.hpp"
#include "input.hpp"
#include "model_options.hpp"
#include "report_text.hpp"

namespace ppsched::cli {

/// The cost options, in the order `--help` lists them.
inline constexpr std::array<option, 16> cost_option_list{{
    {"--costs", "FILE", "cost model as JSON (see docs/simulation.md); the flags below override it"},
    {"--f", "X", "forward time (default 1)"},
    {"--i", "X", "input-gradient backward time (default: F, or B - W)"},
    {"--w", "X", "weight-gradient backward time (default: F, or B - I)"},
    {"--b", "X", "full backward time (default I + W)"},
    {"--overlap", "X", "overlapped F+B time (default: the sum of its parts)"},
    {"--p2p", "X", "latency of every message between ranks (default 0)"},
    {"--comm", "X", "", "--p2p"},
    {"--transfer", "X", "transfer time of every message, added to the latency (default 0)"},
    {"--unshard", "X", "UNSHARD time, on the communication stream (default 0)"},
    {"--reduce-grad", "X", "REDUCE_GRAD time, on the communication stream (default 0)"},
    {"--activation", "X",
     "activation memory a forward keeps per microbatch, in memory units (default 1: one "
     "microbatch's activations of one stage)"},
    {"--parameters", "X", "parameter memory, in the same memory units (default 0)"},
    {"--i-frees", "X", "fraction of the activation memory I frees; W frees the rest (default 0)"},
    {"--model", "FILE",
     "with --layout: per-stage costs of a model file's layers (docs/planning.md)"},
    {"--layout", "STRING",
     "Megatron layout string splitting --model into stages (\"Et*3|(tt|)*29,m|L\")"},
}};

/// A command's own options, then `extra` (e.g. `schedule_param_options`), then the cost
/// options.
template <std::size_t N, std::size_t K = 0>
[[nodiscard]] constexpr std::array<option, N + K + cost_option_list.size()>
with_cost_options(const std::array<option, N>& own, std::span<const option, K> extra = {}) {
    std::array<option, N + K + cost_option_list.size()> all{};
    std::size_t at = 0;
    for (const option& o : own) all[at++] = o;
    for (const option& o : extra) all[at++] = o;
    for (const option& o : cost_option_list) all[at++] = o;
    return all;
}

/// True when schedule `e` takes the parameter `name` (`costs`, `memory_limit`, ...).
[[nodiscard]] inline bool takes_parameter(const schedule_entry& e, std::string_view name) {
    for (const auto& p : e.parameters)
        if (p.name == name) return true;
    return false;
}

/// `params` plus the cost model, for a schedule that plans with one (cost-aware schedules
/// should plan with the costs they are then timed with).
[[nodiscard]] inline schedule_params with_costs(const schedule_entry& e, schedule_params params,
                                                const cost_model& costs) {
    if (takes_parameter(e, "costs")) params.costs = costs;
    return params;
}

/// Parses a non-negative number given to option `what`.
[[nodiscard]] inline double parse_number(std::string_view text, std::string_view what) {
    double v = 0;
    const char* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(text.data(), last, v);
    // `from_chars` reads "inf" and "nan": refused here like every non-finite cost (the cost
    // model's own check says the same for cost files).
    if (text.empty() || ec != std::errc{} || end != last || !(v >= 0))
        throw usage_error(std::string(what) + " expects a non-negative number, got '" +
                          printable(text) + "'");
    if (!(v <= std::numeric_limits<double>::max()))
        throw usage_error(std::string(what) + " expects a finite non-negative number, got '" +
                          printable(text) + "'");
    return v;
}

/// Parses a positive finite number given to option `what` (one message for every other value:
/// negative, zero, infinite or not a number).
[[nodiscard]] inline double parse_positive(std::string_view text, std::string_view what) {
    double v = -1;
    try {
        v = parse_number(text, what);
    } catch (const usage_error&) {
        v = -1;
    }
    if (!(v > 0))
        throw usage_error(std::string(what) + " must be a number > 0, got '" + printable(text) +
                          "'");
    return v;
}

/// Where the options' per-stage costs come from, for messages: the cost file's name, or the
/// layout splitting --model.
[[nodiscard]] inline std::string per_stage_source(const args& a) {
    if (a.has("--layout")) return "--layout '" + printable(*a.value("--layout")) + "'";
    return printable(a.value("--costs").value_or("the cost file"));
}

/// The cost model the options describe: the file (if any), then each flag.
/// Throws `parse_error` for a bad file and `usage_error` for a bad flag.
[[nodiscard]] inline cost_model read_cost_options(const args& a) {
    cost_model c;
    // Read as every input is (a directory, an empty file and '-' handled alike).
    if (auto file = a.value("--costs"))
        c = io::read_cost_json(read_input(*file), source_name(*file));
    if (auto split = read_model_layout(a)) {
        if (a.has("--costs")) throw usage_error("--costs and --model cannot be used together");
        c = std::move(split->costs);
    }
    const std::array<std::pair<std::string_view, std::optional<double> stage_costs::*>, 9> flags{
        {{"--f", &stage_costs::forward},
         {"--i", &stage_costs::backward_input},
         {"--w", &stage_costs::backward_weight},
         {"--b", &stage_costs::full_backward},
         {"--overlap", &stage_costs::overlap_f_b},
         {"--unshard", &stage_costs::unshard},
         {"--reduce-grad", &stage_costs::reduce_grad},
         {"--activation", &stage_costs::activation},
         {"--parameters", &stage_costs::parameters}}};
    for (const auto& [name, field] : flags) {
        if (auto v = a.value(name)) {
            c.uniform.*field = parse_number(*v, name);
            // A flag sets the value of every stage, overriding the file's per-stage ones.
            for (auto& s : c.per_stage) s.*field = std::nullopt;
        }
    }
    if (auto v = a.value("--p2p")) c.p2p_latency = parse_number(*v, a.spelling("--p2p"));
    if (auto v = a.value("--transfer")) c.p2p_transfer = parse_number(*v, "--transfer");
    if (auto v = a.value("--i-frees")) {
        c.input_grad_frees = parse_number(*v, "--i-frees");
        if (c.input_grad_frees > 1) throw usage_error("--i-frees must be in [0, 1]");
    }
    // Report inconsistent values (a B below a given I) as bad usage now, not mid-simulation.
    try {
        c.check();
        (void)c.at(0);
    } catch (const config_error& e) {
        throw usage_error(e.what());
    }
    return c;
}

/// How many of a rank's `v` stages one microbatch passes through: all of them, except in the
/// two-direction (`dual`) placement, where each rank holds one stage of each pipeline (each a
/// whole rank's share of the model) and a microbatch flows through only one of them.
[[nodiscard]] inline int stages_per_microbatch(int v, stage_placement placement) {
    return placement == stage_placement::dual ? v / 2 : v;
}

/// `c` with every stage doing 1/`v` of the work and memory (the costs describe a rank's share
/// of the model, split over its `v` stages); message costs unchanged.
/// Requires: no per-stage overrides.
[[nodiscard]] inline cost_model split_over_stages(cost_model c, int v) {
    auto scale = [v](std::optional<double>& x) {
        if (x) *x /= v;
    };
    auto& u = c.uniform;
    // Unset I, W, B and overlaps derive from F and B, so scaling F (default 1) and the values
    // that are set scales them all; activation memory defaults to 1.
    u.forward = u.forward.value_or(1.0);
    u.activation = u.activation.value_or(1.0);
    for (auto* x : {&u.forward, &u.backward_input, &u.backward_weight, &u.full_backward,
                    &u.overlap_f_b, &u.unshard, &u.reduce_grad, &u.activation, &u.parameters})
        scale(*x);
    return c;
}

/// The largest value of `field` over the ranks of a simulation.
[[nodiscard]] inline double max_over_ranks(const simulation& sim, double rank_summary::*field) {
    double m = 0;
    for (const auto& r : sim.ranks) m = r.*field > m ? r.*field : m;
    return m;
}

} // namespace ppsched::cli
