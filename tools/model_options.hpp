#pragma once
/// \file model_options.hpp
/// `--model MODEL.json --layout "STRING"`: the costs of the split a user runs today, for the
/// timing subcommands (`simulate`, `render`, `compare`, ...): the model's layers grouped into
/// stages by a Megatron-LM layout string, summed per stage (`ppsched::stage_costs_of`).

#include <optional>
#include <string>

#include <ppsched/cost_model.hpp>
#include <ppsched/plan/layout.hpp>
#include <ppsched/plan/model.hpp>
#include <ppsched/plan/split.hpp>

#include "cli.hpp"
#include "input.hpp"

namespace ppsched::cli {

/// The per-stage costs of a model split by a layout, with its stage count and capacity.
struct model_layout_costs {
    cost_model costs;
    int stages = 0;
    double capacity = 0; ///< the model's memory capacity per rank
};

/// Reads `--model` and `--layout` (both or neither). Throws `usage_error` when one is missing,
/// `parse_error` for a bad model file or layout string, `config_error` when the layout's
/// layers differ from the model's.
[[nodiscard]] inline std::optional<model_layout_costs> read_model_layout(const args& a) {
    const auto file = a.value("--model");
    const auto layout = a.value("--layout");
    if (!file && !layout) return std::nullopt;
    if (!file) throw usage_error("--layout needs --model MODEL.json (the layers' costs)");
    if (!layout)
        throw usage_error("--model needs --layout STRING (Megatron's layout string; "
                          "'ppsched plan' proposes one)");
    const model_description m = read_model_json(read_input(*file), source_name(*file));
    const std::vector<int> sizes = split_of(m, parse_megatron_layout(*layout, "--layout"));
    return model_layout_costs{stage_costs_of(m, sizes), static_cast<int>(sizes.size()),
                              m.memory_capacity};
}

} // namespace ppsched::cli
