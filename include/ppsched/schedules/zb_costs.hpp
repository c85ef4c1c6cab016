#pragma once
/// \file schedules/zb_costs.hpp
/// The cost model the cost-aware zero-bubble schedules plan with (`zb_1p`, `zb_2p`, `zb_auto`,
/// `zb_v`): durations of F, I and W (uniform, optionally per stage), the time of a message
/// between ranks, and the authors' memory model (F allocates an activation, I frees a part of
/// it, W the rest). A structural type, so a configured policy can be a template argument.

#include <cstddef>
#include <vector>

#include "ppsched/cost_model.hpp"
#include "ppsched/error.hpp"

namespace ppsched {

/// Durations and memory for a cost-aware zero-bubble schedule. The fields mean what the same
/// fields of `cost_model` mean (`F`, `I`, `W` per stage; a V schedule's stage is one chunk).
/// Per-stage durations: `per_stage[s]` for stages `s < per_stage_count` overrides the uniform
/// values with the fields it sets (as `cost_model::per_stage` does); the pointee must outlive
/// generation (a `static constexpr stage_costs[]` for a template argument). Per-stage memory
/// is not supported: a set `activation` must equal the uniform one.
struct zb_costs {
    double forward = 1;          ///< `F` of one stage and microbatch
    double backward_input = 1;   ///< `I`
    double backward_weight = 1;  ///< `W`
    double comm = 0;             ///< every dependency between two ranks (p2p latency + transfer)
    double activation = 1;       ///< memory an `F` allocates (the memory limit's unit)
    double input_grad_frees = 0; ///< fraction of it `I` frees (in [0, 1]); `W` frees the rest
    const stage_costs* per_stage = nullptr; ///< optional per-stage overrides of F, I, W, B
    std::size_t per_stage_count = 0;        ///< entries at `per_stage`

    friend constexpr bool operator==(const zb_costs&, const zb_costs&) = default;
};

/// The `zb_costs` of a `cost_model`: its uniform F, I, W and activation, its message time as
/// `comm`, its `input_grad_frees`, and a view of its per-stage entries (so the model must
/// outlive the policy that uses the result).
[[nodiscard]] constexpr zb_costs to_zb_costs(const cost_model& model) {
    model.check();
    const resolved_stage_costs u = model.at(-1); // no stage: the uniform values resolved
    return zb_costs{.forward = u.forward,
                    .backward_input = u.backward_input,
                    .backward_weight = u.backward_weight,
                    .comm = model.message_time(),
                    .activation = u.activation,
                    .input_grad_frees = model.input_grad_frees,
                    .per_stage = model.per_stage.empty() ? nullptr : model.per_stage.data(),
                    .per_stage_count = model.per_stage.size()};
}

namespace detail {

/// F, I, W of one stage and the memory deltas, as the greedy schedulers use them.
struct zb_stage_cost {
    double f = 1, i = 1, w = 1;
};

/// Checks `c` for a schedule named `who` (the message prefix); throws `config_error`.
constexpr void check_zb_costs(const zb_costs& c, const char* who) {
    // `x == x` is false only for NaN (no <cmath> in constant expressions).
    auto ok = [](double x) { return x >= 0 && x == x && x < 1e300; };
    PPSCHED_EXPECTS(ok(c.forward) && ok(c.backward_input) && ok(c.backward_weight) && ok(c.comm),
                    who,
                    ": costs.forward, backward_input, backward_weight and comm must be "
                    "non-negative numbers below 1e300 (larger ones overflow the planning)");
    PPSCHED_EXPECTS(ok(c.activation) && c.activation > 0, who,
                    ": costs.activation must be a positive number (it is the memory limit's "
                    "unit)");
    PPSCHED_EXPECTS(c.input_grad_frees >= 0 && c.input_grad_frees <= 1, who,
                    ": costs.input_grad_frees must be in [0, 1]");
    PPSCHED_EXPECTS(c.per_stage != nullptr || c.per_stage_count == 0, who,
                    ": costs.per_stage_count (", c.per_stage_count,
                    ") is set but costs.per_stage is null");
    for (std::size_t s = 0; s < c.per_stage_count; ++s)
        PPSCHED_EXPECTS(!c.per_stage[s].activation || *c.per_stage[s].activation == c.activation,
                        who, ": per-stage activation memory is not supported (stage ", s,
                        " differs from costs.activation); the memory limit is per rank in "
                        "units of one activation");
}

/// The F, I, W of every stage of `stages` stages: the uniform values with the per-stage
/// overrides applied as `cost_model::at` applies them (throws `config_error` on bad values).
[[nodiscard]] constexpr std::vector<zb_stage_cost> zb_stage_costs(const zb_costs& c, int stages) {
    cost_model model;
    model.uniform.forward = c.forward;
    model.uniform.backward_input = c.backward_input;
    model.uniform.backward_weight = c.backward_weight;
    for (std::size_t s = 0; s < c.per_stage_count && s < static_cast<std::size_t>(stages); ++s)
        model.per_stage.push_back(c.per_stage[s]);
    std::vector<zb_stage_cost> out;
    out.assign(static_cast<std::size_t>(stages), zb_stage_cost{});
    for (int s = 0; s < stages; ++s) {
        const resolved_stage_costs r = model.at(s);
        out[static_cast<std::size_t>(s)] = {r.forward, r.backward_input, r.backward_weight};
    }
    return out;
}

} // namespace detail
} // namespace ppsched
