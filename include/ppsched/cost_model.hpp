#pragma once
/// \file cost_model.hpp
/// What actions cost: durations per action kind (uniform or per stage), point-to-point
/// communication, the FSDP communication stream (UNSHARD, REDUCE_GRAD), and memory.
/// Plain aggregates usable in constant expressions; `simulate` reads them.

#include <cstddef>
#include <optional>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/error.hpp"

namespace ppsched {

/// The costs of one stage. Every field is optional: an unset field falls back to the cost
/// model's `uniform` value and then to the defaults of `resolved_stage_costs`, so a per-stage
/// entry only names what differs. Durations and memory are in any consistent units. (Each
/// field has a default initializer, so `stage_costs{.forward = 2}` names one field without
/// -Wmissing-field-initializers.)
struct stage_costs {
    std::optional<double> forward{};         ///< `F`
    std::optional<double> backward_input{};  ///< `I`
    std::optional<double> backward_weight{}; ///< `W`
    std::optional<double> full_backward{};   ///< `B`
    /// An `OVERLAP_F_B` whose forward part runs on this stage (default: the sum of its parts).
    std::optional<double> overlap_f_b{};
    std::optional<double> unshard{};     ///< `UNSHARD` on the communication stream
    std::optional<double> reduce_grad{}; ///< `REDUCE_GRAD` on the communication stream
    std::optional<double> activation{};  ///< memory one microbatch's `F` keeps until its backward
    std::optional<double> parameters{};  ///< memory of the stage's parameters (held throughout)

    friend constexpr bool operator==(const stage_costs&, const stage_costs&) noexcept = default;
};

/// The costs of one stage with every default applied (see `cost_model::at`).
struct resolved_stage_costs {
    double forward = 1;
    double backward_input = 1;
    double backward_weight = 1;
    double full_backward = 2;
    std::optional<double> overlap_f_b; ///< unset: the sum of the overlapped parts
    double unshard = 0;
    double reduce_grad = 0;
    double activation = 1;
    double parameters = 0;

    friend constexpr bool operator==(const resolved_stage_costs&,
                                     const resolved_stage_costs&) noexcept = default;
};

/// A cost model for `simulate`.
///
/// Durations: `F` defaults to 1. When `B` is unset, `I` and `W` default to `F` and `B` to
/// `I + W`. When `B` is set, an unset `I` is `B - W`, an unset `W` is `B - I`, and when both are
/// unset each is `B / 2`. An `OVERLAP_F_B` lasts `overlap_f_b` of its forward's stage when set,
/// otherwise its forward's `F` plus its backward's `B` (or `I`). UNSHARD and REDUCE_GRAD
/// default to 0, RESHARD and SEND/RECV always take 0 on the rank.
///
/// Communication: every dependency between ranks costs `p2p_latency + p2p_transfer` (a message's
/// fixed latency plus its transfer time); dependencies between stages of the same rank cost
/// nothing.
///
/// Memory: `F` of a stage allocates `activation` (default 1) for its microbatch; `B` frees it,
/// `I` frees the fraction `input_grad_frees` of it and `W` the rest (the default 0 keeps all of
/// it until `W`, the zero-bubble papers' model). `parameters` (default 0) is held throughout.
struct cost_model {
    /// Values for every stage.
    stage_costs uniform{};
    /// Per-stage overrides, indexed by stage (may be shorter than the number of stages).
    std::vector<stage_costs> per_stage{};
    /// Fixed cost of every message between ranks.
    double p2p_latency = 0;
    /// Transfer time of every message between ranks (added to the latency).
    double p2p_transfer = 0;
    /// Fraction of a microbatch's activation memory freed by `I` (in [0, 1]).
    double input_grad_frees = 0;

    /// `F` = `forward`, `B` = `backward` (I and W each half of B), everything else default.
    [[nodiscard]] static constexpr cost_model uniform_fb(double forward, double backward) {
        cost_model c;
        c.uniform.forward = forward;
        c.uniform.full_backward = backward;
        return c;
    }
    /// `F`, `I`, `W` given (B = I + W).
    [[nodiscard]] static constexpr cost_model uniform_fiw(double forward, double input,
                                                          double weight) {
        cost_model c;
        c.uniform.forward = forward;
        c.uniform.backward_input = input;
        c.uniform.backward_weight = weight;
        return c;
    }

    /// The costs of `stage`, defaults applied. Throws `config_error` (at compile time: a
    /// diagnostic) for a negative value or a B smaller than a given I or W.
    [[nodiscard]] constexpr resolved_stage_costs at(int stage) const {
        const stage_costs* own = stage >= 0 && static_cast<std::size_t>(stage) < per_stage.size()
                                     ? &per_stage[static_cast<std::size_t>(stage)]
                                     : nullptr;
        auto pick = [&](std::optional<double> stage_costs::*field) -> std::optional<double> {
            if (own && (own->*field)) return own->*field;
            return uniform.*field;
        };
        resolved_stage_costs r;
        r.forward = checked(pick(&stage_costs::forward).value_or(1.0), "F", stage);
        const auto i = pick(&stage_costs::backward_input);
        const auto w = pick(&stage_costs::backward_weight);
        const auto b = pick(&stage_costs::full_backward);
        if (b) {
            r.full_backward = checked(*b, "B", stage);
            r.backward_input = i ? *i : (w ? *b - *w : *b / 2);
            r.backward_weight = w ? *w : *b - r.backward_input;
            // (I, W and B all given are taken as they are: a fused B is its own kernel and may
            // cost anything; only an I or W derived from B must not be negative.)
            PPSCHED_EXPECTS(r.backward_input >= 0 && r.backward_weight >= 0,
                            "ppsched::cost_model: B must be >= the given I or W (stage ", stage,
                            ")");
        } else {
            r.backward_input = i ? *i : r.forward;
            r.backward_weight = w ? *w : r.forward;
            r.full_backward = r.backward_input + r.backward_weight;
        }
        checked(r.backward_input, "I", stage);
        checked(r.backward_weight, "W", stage);
        r.overlap_f_b = pick(&stage_costs::overlap_f_b);
        if (r.overlap_f_b) checked(*r.overlap_f_b, "OVERLAP_F_B", stage);
        r.unshard = checked(pick(&stage_costs::unshard).value_or(0.0), "UNSHARD", stage);
        r.reduce_grad =
            checked(pick(&stage_costs::reduce_grad).value_or(0.0), "REDUCE_GRAD", stage);
        r.activation = checked(pick(&stage_costs::activation).value_or(1.0), "activation", stage);
        r.parameters = checked(pick(&stage_costs::parameters).value_or(0.0), "parameters", stage);
        return r;
    }

    /// Checks the scalar fields (`at` checks the per-stage ones).
    constexpr void check() const {
        checked(p2p_latency, "p2p_latency");
        checked(p2p_transfer, "p2p_transfer");
        PPSCHED_EXPECTS(input_grad_frees >= 0 && input_grad_frees <= 1,
                        "ppsched::cost_model: input_grad_frees must be in [0, 1]");
    }

    /// The one rule against overflow, shared by every entry point (`simulate` calls it):
    /// every value finite and non-negative (`check`, `at`), and the largest duration, message
    /// time or memory value times (`actions` + `stages` + 1) still finite, so no time or
    /// memory total of an order of that size can overflow to infinity. Throws `config_error`.
    /// Complexity: O(stages).
    constexpr void check_totals(std::size_t actions, int stages) const {
        check();
        double largest = message_time();
        PPSCHED_EXPECTS(largest <= max_value,
                        "ppsched::cost_model: p2p_latency + p2p_transfer overflows");
        for (int s = 0; s < stages; ++s) {
            const resolved_stage_costs r = at(s);
            for (double v : {r.forward, r.backward_input, r.backward_weight, r.full_backward,
                             r.overlap_f_b.value_or(0.0), r.unshard, r.reduce_grad, r.activation,
                             r.parameters})
                largest = v > largest ? v : largest;
            // An unset overlap is the sum of its parts (halved: the sum itself may overflow).
            const double half_pair = r.forward / 2 + r.full_backward / 2;
            largest = half_pair > largest ? half_pair : largest;
        }
        // (A derived cost, B = I + W where B is not given, overflows on its own.)
        PPSCHED_EXPECTS(largest <= max_value,
                        "ppsched::cost_model: a derived cost overflows: a B not given is I + W, "
                        "and here that sum is not finite");
        const double count = static_cast<double>(actions) + static_cast<double>(stages) + 1;
        PPSCHED_EXPECTS(largest <= max_value / (4 * count), "ppsched::cost_model: costs up to ",
                        largest, " over ", actions,
                        " actions could overflow the totals (every cost times the number of "
                        "actions must stay below 1e308)");
    }

    /// Time a message between two ranks takes from send to arrival.
    [[nodiscard]] constexpr double message_time() const noexcept {
        return p2p_latency + p2p_transfer;
    }

    friend constexpr bool operator==(const cost_model&, const cost_model&) = default;

  private:
    /// `v`, checked: `what` names the field, `stage` its stage (-1: a scalar field).
    static constexpr double checked(double v, const char* what, int stage = -1) {
        // False for NaN and infinity alike (no <cmath> in constant expressions).
        if (!(v >= 0 && v <= max_value)) {
            if (stage >= 0)
                detail::precondition_failed("ppsched::cost_model: ", what, " of stage ", stage,
                                            " must be a finite non-negative number (got ", v, ")");
            detail::precondition_failed("ppsched::cost_model: ", what,
                                        " must be a finite non-negative number (got ", v, ")");
        }
        return v;
    }
    static constexpr double max_value = 1.7976931348623157e308; // DBL_MAX
};

/// The duration of `a` on its rank given resolved costs per stage (`costs[stage]`).
/// SEND, RECV and RESHARD take no time on the rank.
[[nodiscard]] constexpr double duration(const action& a,
                                        const std::vector<resolved_stage_costs>& costs) noexcept {
    auto of = [&](const action& x) -> const resolved_stage_costs& {
        return costs[static_cast<std::size_t>(x.stage())];
    };
    switch (a.kind()) {
    case action_kind::forward:
        return of(a).forward;
    case action_kind::backward_input:
        return of(a).backward_input;
    case action_kind::backward_weight:
        return of(a).backward_weight;
    case action_kind::full_backward:
        return of(a).full_backward;
    case action_kind::overlap_f_b: {
        const auto& f = of(a);
        if (f.overlap_f_b) return *f.overlap_f_b;
        const action b = a.backward_part();
        return f.forward + (b.kind() == action_kind::backward_input ? of(b).backward_input
                                                                    : of(b).full_backward);
    }
    case action_kind::unshard:
        return of(a).unshard;
    case action_kind::reduce_grad:
        return of(a).reduce_grad;
    default:
        return 0;
    }
}

} // namespace ppsched
