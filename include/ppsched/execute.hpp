#pragma once
/// \file execute.hpp
/// `execute(program, cfg, rank, handlers)`: runs one rank's lowered program by calling a
/// training runtime's handlers, one per action kind, the way PyTorch's
/// `_PipelineScheduleRuntime` steps through `pipeline_order_with_comms`. The executor owns the
/// sequencing and the hand-over of boundary values (activations, gradients); the handlers own
/// the model, its saved state and the communication library (MPI, NCCL, gloo, ...).
///
/// Data flow, in one place:
/// - `value_type` is whatever the runtime moves between stages (a tensor, a buffer handle).
///   The executor only moves values; it never looks inside them.
/// - `forward(ctx, input)` returns the stage's output activation. The input is the previous
///   stage's output for the same microbatch (handed over locally when that stage is on this
///   rank, otherwise taken from the matching `RECV_F`), or `value_type{}` for the first stage,
///   whose handler loads the microbatch's data itself.
/// - `backward_input(ctx, grad)` / `full_backward(ctx, grad)` return the gradient w.r.t. the
///   stage's input. `grad` is the next stage's input gradient (handed over or received), or
///   `value_type{}` for the last stage, whose handler starts from its loss.
/// - An output goes to the consuming stage's forward (or backward) if that stage is on this
///   rank, to the `SEND_F`/`SEND_B` of the same stage and microbatch if it is on another rank,
///   and is dropped at the ends of the pipeline. Saved activations (what a backward needs from
///   its forward) stay inside the handlers.
///
/// Asynchronous operations (send, receive, unshard, reduce-grad) return handles with
/// `wait()` -> `wait_result`; a receive handle also has `take()` -> the received value.
/// Receives are posted where the program has them and waited by the compute that consumes
/// them; unshards are waited by the first compute on their stage (or by its RESHARD); sends and
/// reduce-grads are waited, in program order, after the last action.
///
/// Timing: `execute(..., handlers, observer)` calls `observer.on_action(ctx, start, end)` after
/// each action (`action_timeline` records them); a compute's start is taken after its inputs were
/// waited for, so its span is its own work. `io::write_pytorch_trace` writes such a record in
/// PyTorch's profiler form for `calibrate`.
///
/// Every misuse is an `execution_error` naming the rank, step and action: a handler missing for
/// an action the program contains (checked before anything runs), an action for a stage this
/// rank does not hold, a compute whose input was never received or produced, a SEND before the
/// compute that produces it, a duplicate action, compute on a sharded stage, a failed or timed
/// out wait, and data left unconsumed at the end.
///
/// The rooms: the handler contract in execute/handlers.hpp, the error model in
/// execute/error.hpp, the interpreter in execute/detail/rank_runner.hpp; this header is the door.

#include <cstddef>
#include <ranges>
#include <type_traits>

#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/execute/detail/rank_runner.hpp"
#include "ppsched/execute/error.hpp"
#include "ppsched/execute/handlers.hpp"
#include "ppsched/order.hpp"

namespace ppsched {

/// A rank's program: a forward range of actions, slots or optional actions (a row of an
/// `order`).
template <class Row>
concept rank_program = std::ranges::forward_range<Row> &&
    slot_like<std::remove_cvref_t<std::ranges::range_reference_t<Row>>>;

/// A handler set as `execute` takes it: a non-const lvalue or an rvalue of a
/// `pipeline_handlers` type (the handlers keep state).
template <class H>
concept handler_set_argument = pipeline_handlers<std::remove_cvref_t<H>> &&
    (!std::is_const_v<std::remove_reference_t<H>>);

/// Runs rank `rank`'s lowered `program` (idle slots are skipped) by calling `handlers`; see
/// the file comment for the data flow and the error model. `cfg` gives the stage placement and
/// neighbours (`previous_stage`/`next_stage`). Before running anything it checks that every
/// action belongs to this rank and has a handler. Handler exceptions propagate unchanged.
/// Run `validate` on the whole order first: `execute` sees one rank and cannot tell that a peer
/// will never send, so a cross-rank deadlock shows up only as a wait that times out.
/// Returns counts of what ran; throws `execution_error` on misuse or a failed wait, and
/// `config_error` for a malformed `cfg` or a rank out of range.
/// Complexity: O(actions + stages_per_rank * microbatches) besides the handlers.
template <rank_program Row, handler_set_argument H>
execution_stats execute(const Row& program, const config& cfg, int rank, H&& handlers) {
    std::remove_cvref_t<H>& h = handlers;
    return detail::rank_runner<std::remove_cvref_t<H>>(cfg, rank, h).run(program);
}

/// `execute` with a timing hook: `observer.on_action(ctx, start, end)` after each action (see
/// `action_observer`; `action_timeline` records them). Otherwise the same as `execute`.
template <rank_program Row, handler_set_argument H, action_observer O>
execution_stats execute(const Row& program, const config& cfg, int rank, H&& handlers,
                        O& observer) {
    std::remove_cvref_t<H>& h = handlers;
    detail::rank_runner<std::remove_cvref_t<H>> runner(cfg, rank, h);
    runner.observe(&observer, [](void* o, const step_context& c, execution_clock::time_point t0,
                                 execution_clock::time_point t1) {
        static_cast<O*>(o)->on_action(c, t0, t1);
    });
    return runner.run(program);
}

/// `execute(lowered[rank], lowered.cfg(), rank, handlers)`.
template <handler_set_argument H>
execution_stats execute(const order& lowered, int rank, H&& handlers) {
    PPSCHED_EXPECTS(rank >= 0 && static_cast<std::size_t>(rank) < lowered.size(),
                    "ppsched::execute: rank (", rank, ") must be in [0, ", lowered.size(), ")");
    return execute(lowered[static_cast<std::size_t>(rank)], lowered.cfg(), rank, handlers);
}

/// `execute(lowered[rank], lowered.cfg(), rank, handlers, observer)`.
template <handler_set_argument H, action_observer O>
execution_stats execute(const order& lowered, int rank, H&& handlers, O& observer) {
    PPSCHED_EXPECTS(rank >= 0 && static_cast<std::size_t>(rank) < lowered.size(),
                    "ppsched::execute: rank (", rank, ") must be in [0, ", lowered.size(), ")");
    return execute(lowered[static_cast<std::size_t>(rank)], lowered.cfg(), rank, handlers,
                   observer);
}

} // namespace ppsched
