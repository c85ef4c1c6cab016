#pragma once
/// \file algorithms/validate.hpp
/// `validate(order)`: checks that an order (compute-only or lowered) can be run. Constexpr,
/// never throws for bad schedule data: it returns a `validation_report` that converts to `bool`
/// (true = valid) so it works in `static_assert`, and lists each violation with its rule, rank,
/// step and action. Human messages are produced at run time by `describe` / `to_string`.
/// The report and its messages are in algorithms/validation_report.hpp, the validator in
/// algorithms/detail/validator.hpp.

#include "ppsched/algorithms/detail/validator.hpp"
#include "ppsched/algorithms/validation_report.hpp"
#include "ppsched/config.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// Checks an order against `cfg` and returns every violation found; never throws for bad
/// data. The order counts as lowered (communication explicit) when it has any SEND/RECV:
/// then data dependencies across ranks must go through matching SEND/RECV pairs and only
/// receives block; otherwise each compute action waits for the compute it depends on.
/// UNSHARD/RESHARD rules apply to the stages that have them; REDUCE_GRAD when present.
/// Complexity: linear in the number of slots plus stages * microbatches.
/// `options.transport` says how SENDs behave (see `transport`): under `rendezvous` a SEND
/// blocks until its RECV is reached, and a cycle of such waits is a `deadlock`.
template <order_range R>
[[nodiscard]] constexpr validation_report validate(const R& rows, const config& cfg,
                                                   const validate_options& options = {}) {
    detail::validator v(cfg, true, options.transport, options.idle_slots_in_lowered);
    return v.run(rows);
}

/// Checks an order against its own configuration.
[[nodiscard]] constexpr validation_report validate(const order& o,
                                                   const validate_options& options = {}) {
    return validate(o, o.cfg(), options);
}

} // namespace ppsched
