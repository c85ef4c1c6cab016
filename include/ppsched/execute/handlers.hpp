#pragma once
/// \file execute/handlers.hpp
/// The contract between `execute` and a training runtime: the handles of asynchronous
/// operations (`async_handle`, `receive_handle`, `wait_result`), what a handler is told
/// (`step_context`), one concept per action kind a handler set may handle
/// (`handles_forward<H>`, ...) and the timing hook (`action_observer`, `action_timeline`).
/// A runtime author needs this header and `execute.hpp`'s file comment, not the interpreter.

#include <chrono>
#include <concepts>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"

namespace ppsched {

/// How an asynchronous operation ended.
enum class wait_status : std::uint8_t {
    done,      ///< completed successfully
    failed,    ///< the communication library reported an error (e.g. a peer died)
    timed_out, ///< no completion before the handle's deadline (e.g. a peer hangs)
};

/// What a handle's `wait()` reports. A failure carries a human message (operation, peer,
/// library error text) that `execute` puts into its `execution_error`.
struct wait_result {
    wait_status status = wait_status::done;
    std::string message; ///< empty when `done`

    /// A successful completion.
    [[nodiscard]] static wait_result ok() { return {}; }
    /// The library reported an error.
    [[nodiscard]] static wait_result failure(std::string message) {
        return {wait_status::failed, std::move(message)};
    }
    /// The deadline passed.
    [[nodiscard]] static wait_result timeout(std::string message) {
        return {wait_status::timed_out, std::move(message)};
    }
    /// True when the operation completed.
    [[nodiscard]] explicit operator bool() const noexcept { return status == wait_status::done; }
};

/// A handle on an asynchronous operation: movable, and `h.wait()` blocks until it completes
/// (or fails, or its deadline passes) and says which. `execute` waits each handle exactly once.
/// A handle destroyed without a wait (only when `execute` throws) should release its operation.
template <class T>
concept async_handle = std::movable<T> && requires(T& h) {
    { h.wait() } -> std::same_as<wait_result>;
};

/// A handle on a receive: an `async_handle` whose `h.take()`, called once after a successful
/// `wait()`, yields the received value.
template <class T, class V>
concept receive_handle = async_handle<T> && requires(T& h) {
    { h.take() } -> std::convertible_to<V>;
};

/// What a handler is told about the action it runs.
struct step_context {
    int rank = 0;             ///< the rank whose program runs
    int step = 0;             ///< index of the action in the program (idle slots count)
    action act{};             ///< the action; for a part of an OVERLAP_F_B, that part
    bool first_stage = false; ///< `act`'s stage has no previous stage (F loads the data)
    bool last_stage = false;  ///< `act`'s stage has no next stage (F/B/I compute the loss)
    int peer_stage = -1;      ///< SEND/RECV: the stage at the other end; else -1
    int peer_rank = -1;       ///< SEND/RECV: the rank at the other end; else -1
};

/// The base requirement on a handler set: it names the type of the values it passes between
/// stages (movable, and default-constructible for "no input"). Which action kinds it handles is
/// detected per kind (`handles_forward<H>`, ...); a kind it does not handle is an error only
/// when a program contains it. A handler set assembled at run time may also have
/// `bool provides(action_kind) const` to decline kinds it has members for.
template <class H>
concept pipeline_handlers =
    std::movable<typename H::value_type> && std::default_initializable<typename H::value_type>;

/// `h.forward(ctx, input)` returns the stage's output (F).
template <class H>
concept handles_forward = pipeline_handlers<H> &&
    requires(H& h, const step_context& c, typename H::value_type v) {
    { h.forward(c, std::move(v)) } -> std::convertible_to<typename H::value_type>;
};
/// `h.backward_input(ctx, grad)` returns the gradient w.r.t. the stage input (I).
template <class H>
concept handles_backward_input = pipeline_handlers<H> &&
    requires(H& h, const step_context& c, typename H::value_type v) {
    { h.backward_input(c, std::move(v)) } -> std::convertible_to<typename H::value_type>;
};
/// `h.backward_weight(ctx)` accumulates the weight gradient of one microbatch (W).
template <class H>
concept handles_backward_weight = pipeline_handlers<H> && requires(H& h, const step_context& c) {
    h.backward_weight(c);
};
/// `h.full_backward(ctx, grad)`: I and W in one (B); returns the input gradient.
template <class H>
concept handles_full_backward = pipeline_handlers<H> &&
    requires(H& h, const step_context& c, typename H::value_type v) {
    { h.full_backward(c, std::move(v)) } -> std::convertible_to<typename H::value_type>;
};
/// `h.overlap_f_b(fwd_ctx, input, bwd_ctx, grad)` runs an OVERLAP_F_B and returns the pair
/// (forward output, input gradient). Optional: without it the parts run one after the other
/// (forward first), as PyTorch does when no overlap callback is registered.
template <class H>
concept handles_overlap_f_b = pipeline_handlers<H> &&
    requires(H& h, const step_context& c, typename H::value_type v) {
    {
        h.overlap_f_b(c, std::move(v), c, std::move(v))
        } -> std::convertible_to<std::pair<typename H::value_type, typename H::value_type>>;
};
/// `h.unshard(ctx)` starts gathering a stage's parameters; returns an `async_handle`.
template <class H>
concept handles_unshard = pipeline_handlers<H> && requires(H& h, const step_context& c) {
    { h.unshard(c) } -> async_handle;
};
/// `h.reshard(ctx)` frees a stage's gathered parameters (synchronous).
template <class H>
concept handles_reshard = pipeline_handlers<H> && requires(H& h, const step_context& c) {
    h.reshard(c);
};
/// `h.send(ctx, value)` starts sending `value` to `ctx.peer_rank`; returns an `async_handle`
/// that owns what the send needs until it completes.
template <class H>
concept handles_send = pipeline_handlers<H> &&
    requires(H& h, const step_context& c, typename H::value_type v) {
    { h.send(c, std::move(v)) } -> async_handle;
};
/// `h.recv(ctx)` posts a receive from `ctx.peer_rank`; returns a `receive_handle`.
template <class H>
concept handles_recv = pipeline_handlers<H> && requires(H& h, const step_context& c) {
    { h.recv(c) } -> receive_handle<typename H::value_type>;
};
/// `h.reduce_grad(ctx)` starts reducing a stage's weight gradients over the data-parallel
/// replicas; returns an `async_handle` (waited after the last action).
template <class H>
concept handles_reduce_grad = pipeline_handlers<H> && requires(H& h, const step_context& c) {
    { h.reduce_grad(c) } -> async_handle;
};

/// Whether `h` has the member for actions of kind `k` and, when it has
/// `provides(action_kind)`, that returns true. (For OVERLAP_F_B this is the overlap member
/// alone; `execute` falls back to the members of the pair's two parts without it.)
template <pipeline_handlers H>
[[nodiscard]] bool handles(const H& h, action_kind k) {
    if constexpr (requires {
                      { h.provides(k) } -> std::convertible_to<bool>;
                  }) {
        if (!static_cast<bool>(h.provides(k))) return false;
    }
    switch (k) {
    case action_kind::forward:
        return handles_forward<H>;
    case action_kind::backward_input:
        return handles_backward_input<H>;
    case action_kind::backward_weight:
        return handles_backward_weight<H>;
    case action_kind::full_backward:
        return handles_full_backward<H>;
    case action_kind::overlap_f_b:
        return handles_overlap_f_b<H>;
    case action_kind::unshard:
        return handles_unshard<H>;
    case action_kind::reshard:
        return handles_reshard<H>;
    case action_kind::send_f:
    case action_kind::send_b:
        return handles_send<H>;
    case action_kind::recv_f:
    case action_kind::recv_b:
        return handles_recv<H>;
    case action_kind::reduce_grad:
        return handles_reduce_grad<H>;
    }
    return false;
}

/// The clock of `execute`'s timing hook.
using execution_clock = std::chrono::steady_clock;

/// A timing hook for `execute`: `o.on_action(ctx, start, end)` is called after each action
/// with the times its handler work began and ended. For a compute the start is taken after its
/// inputs were waited for (a wait shows as idle time before the span, not inside it); for the
/// other kinds it is the start of the action.
template <class O>
concept action_observer = requires(O& o, const step_context& c, execution_clock::time_point t) {
    o.on_action(c, t, t);
};

/// An `action_observer` that records every action's start and end: one rank's measured
/// timeline, in the order the actions ran.
struct action_timeline {
    /// One action that ran.
    struct entry {
        action act;                        ///< the action (an OVERLAP_F_B as a whole)
        int step = 0;                      ///< its index in the program
        execution_clock::time_point start; ///< when its handler work began
        execution_clock::time_point end;   ///< when it ended
    };
    std::vector<entry> entries; ///< in the order the actions ran

    /// Records one action.
    void on_action(const step_context& c, execution_clock::time_point start,
                   execution_clock::time_point end) {
        entries.push_back({c.act, c.step, start, end});
    }
};
static_assert(action_observer<action_timeline>);

} // namespace ppsched
