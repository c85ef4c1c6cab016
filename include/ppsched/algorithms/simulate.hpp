#pragma once
/// \file algorithms/simulate.hpp
/// `simulate(order, costs)`: a timed replay of a pipeline order under a cost
/// model. Each rank runs its actions in its order; an action starts when the
/// rank is free and its inputs have arrived. Returns every action's start and
/// end, the makespan, each rank's busy and idle time, the bubble, and each
/// rank's peak activation memory. A deadlock is reported, not looped on.
/// `simulate_options{.timeline = false}` keeps only the summary (no per-action
/// storage), for tuners that evaluate many orders. The result types are in simulation.hpp,
/// the engine in algorithms/detail/simulator.hpp.

#include <cstddef>
#include <ranges>

#include "ppsched/algorithms/detail/action_table.hpp"
#include "ppsched/algorithms/detail/simulator.hpp"
#include "ppsched/algorithms/validate.hpp"
#include "ppsched/config.hpp"
#include "ppsched/cost_model.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"
#include "ppsched/simulation.hpp"
#include "ppsched/transport.hpp"

namespace ppsched {

/// Options of `simulate`.
struct simulate_options {
    /// Keep every action's start and end in `simulation::timeline`. When false the timeline is
    /// left empty and every other field is the same; the simulator then stores nothing per
    /// action (it reads the order in place), which is faster and allocates memory only in
    /// proportion to ranks + stages * microbatches: for tuners that evaluate many orders and
    /// need only the makespan, bubble, per-rank summaries and problems.
    bool timeline = true;
    /// How SENDs of a lowered order behave. Under `rendezvous` the order is first checked for
    /// the deadlocks only that transport has (a SEND waiting for a RECV its peer never
    /// reaches; `validate` with `validate_options::transport`), reported as `deadlock` with
    /// every rank of the cycle in `stuck`. The timing itself is eager's: a SEND does not wait
    /// for its RECV's post (an upper bound on how early a rendezvous run can finish).
    ppsched::transport transport = ppsched::transport::eager;
};

/// Simulates `rows` (any order range, compute-only or lowered) for `cfg` under
/// `costs`.
///
/// Dependencies: a forward needs the previous stage's forward of its microbatch
/// (`cfg.previous_stage`); a backward (`B` or `I`) needs its own forward and
/// the next stage's backward (`cfg.next_stage`); a `W` needs its `I`; an
/// `OVERLAP_F_B` needs both parts'. Between ranks an input arrives
/// `costs.message_time()` after it is produced. In a lowered order (one with
/// SEND/RECV) inputs from other ranks go through them instead: a RECV is posted
/// where it stands, a SEND is issued where it stands, and the consumer waits
/// until `max(post, send) + message_time()`. UNSHARD, RESHARD and REDUCE_GRAD
/// run on the rank's communication stream once every earlier compute has
/// finished; compute on a stage waits for the stage's latest UNSHARD. Idle
/// slots take no time.
///
/// Returns the timeline and summary; a deadlock or an action that cannot be
/// simulated is reported in the result (`status`), never looped on. Throws
/// `config_error` for a malformed `cfg` or `costs`, or when the number of rows
/// is not `cfg.ranks`. Complexity: O(actions + stages * microbatches + ranks)
/// time; memory O(actions + stages * microbatches + ranks), or, with
/// `options.timeline` false, O(stages * microbatches + ranks) (unless the rows
/// are made on the fly: a range whose rows are not lvalues is copied).
template <order_range R>
[[nodiscard]] constexpr simulation simulate(const R& rows, const config& cfg,
                                            const cost_model& costs = {},
                                            simulate_options options = {}) {
    check(cfg);
    // The one overflow rule (see `cost_model::check_totals`), over the order's slots.
    std::size_t slots = 0;
    for (const auto& row : rows) {
        if constexpr (std::ranges::sized_range<decltype(row)>)
            slots += static_cast<std::size_t>(std::ranges::size(row));
        else
            for (const auto& s : row) {
                (void)s;
                ++slots;
            }
    }
    costs.check_totals(slots, cfg.num_stages());
    // Bounded resources: no stages x microbatches table for a configuration far larger than
    // the order (it cannot be valid; docs/design.md).
    if (!detail::tables_affordable(rows, cfg)) return detail::unaffordable_simulation(rows, cfg);
    if (options.transport == transport::rendezvous) {
        const validation_report report =
            validate(rows, cfg, validate_options{.transport = transport::rendezvous});
        if (report.has(rule::deadlock) && !validate(rows, cfg).has(rule::deadlock)) {
            simulation sim;
            sim.status = simulation_status::deadlock;
            for (const violation& v : report)
                if (v.what == rule::deadlock)
                    sim.stuck.push_back({v.rank, v.step, v.subject, v.other, v.other_rank});
            return sim;
        }
    }
    if constexpr (detail::simulator<false>::reads_in_place<R>) {
        if (!options.timeline) return detail::simulator<false>(cfg, costs).run(rows);
        return detail::simulator<true>(cfg, costs).run(rows);
    } else {
        // Rows made on the fly: copied into the timeline, which is dropped if not wanted.
        simulation sim = detail::simulator<true>(cfg, costs).run(rows);
        if (!options.timeline) sim.timeline = {};
        return sim;
    }
}

/// Simulates an `order` under `costs` (its own configuration).
[[nodiscard]] constexpr simulation simulate(const order& o, const cost_model& costs = {},
                                            simulate_options options = {}) {
    return simulate(o, o.cfg(), costs, options);
}

} // namespace ppsched
