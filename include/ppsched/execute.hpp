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

#include <array>
#include <chrono>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ranges>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/order.hpp"

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

/// Why `execute` stopped.
enum class execution_failure : std::uint8_t {
    missing_handler, ///< the program has an action kind the handlers do not handle
    invalid_action,  ///< stage not on this rank, index out of range, SEND/RECV without a peer
    missing_input,   ///< a compute or SEND whose data was never received or produced
    duplicate,       ///< an action (or a RECV, an UNSHARD) repeated, a backward before its forward
    sharded,         ///< compute on a stage that has UNSHARD in the program but is sharded now
    wait_failed,     ///< a handle's wait reported a failure
    wait_timed_out,  ///< a handle's wait reported a timeout
    leftover,        ///< received or produced data that nothing consumed by the end
};

/// Short identifier of a failure (`"missing_input"`).
[[nodiscard]] constexpr std::string_view to_string_view(execution_failure f) noexcept {
    switch (f) {
    case execution_failure::missing_handler:
        return "missing_handler";
    case execution_failure::invalid_action:
        return "invalid_action";
    case execution_failure::missing_input:
        return "missing_input";
    case execution_failure::duplicate:
        return "duplicate";
    case execution_failure::sharded:
        return "sharded";
    case execution_failure::wait_failed:
        return "wait_failed";
    case execution_failure::wait_timed_out:
        return "wait_timed_out";
    case execution_failure::leftover:
        return "leftover";
    }
    return "?";
}

/// Thrown by `execute`. `what()` reads
/// `ppsched::execute: rank 1, step 4 (1F0): needs 1RECV_F0 earlier ... [missing_input]`.
class execution_error : public std::runtime_error {
  public:
    execution_error(execution_failure reason, int rank, int step, std::optional<action> subject,
                    const std::string& message)
        : std::runtime_error(message), reason_(reason), rank_(rank), step_(step),
          subject_(subject) {}
    /// What went wrong.
    [[nodiscard]] execution_failure reason() const noexcept { return reason_; }
    /// The rank whose program was running.
    [[nodiscard]] int rank() const noexcept { return rank_; }
    /// The step (index in the program) of the action that failed; -1 after the last action.
    [[nodiscard]] int step() const noexcept { return step_; }
    /// The action that failed, if any.
    [[nodiscard]] const std::optional<action>& subject() const noexcept { return subject_; }

  private:
    execution_failure reason_;
    int rank_;
    int step_;
    std::optional<action> subject_;
};

/// Counts of what one `execute` call did.
struct execution_stats {
    std::size_t actions = 0;         ///< non-idle actions run
    std::size_t computes = 0;        ///< compute handler calls (an overlap handler counts once)
    std::size_t sends = 0;           ///< SEND_F + SEND_B
    std::size_t receives = 0;        ///< RECV_F + RECV_B
    std::size_t local_handovers = 0; ///< values passed between two stages of this rank
    std::size_t waits = 0;           ///< handle waits
};

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

namespace detail {

/// Stands in for the handle type of a kind the handlers do not handle (never instantiated at
/// run time: such programs are rejected before they start).
template <class V>
struct absent_handle {
    wait_result wait() { return {}; }
    V take() { return V{}; }
};

template <class H, bool = handles_send<H>>
struct send_handle_of {
    using type = absent_handle<typename H::value_type>;
};
template <class H>
struct send_handle_of<H, true> {
    using type = std::remove_cvref_t<decltype(std::declval<H&>().send(
        std::declval<const step_context&>(), std::declval<typename H::value_type>()))>;
};
template <class H, bool = handles_recv<H>>
struct recv_handle_of {
    using type = absent_handle<typename H::value_type>;
};
template <class H>
struct recv_handle_of<H, true> {
    using type =
        std::remove_cvref_t<decltype(std::declval<H&>().recv(std::declval<const step_context&>()))>;
};
template <class H, bool = handles_unshard<H>>
struct unshard_handle_of {
    using type = absent_handle<typename H::value_type>;
};
template <class H>
struct unshard_handle_of<H, true> {
    using type = std::remove_cvref_t<decltype(std::declval<H&>().unshard(
        std::declval<const step_context&>()))>;
};
template <class H, bool = handles_reduce_grad<H>>
struct reduce_handle_of {
    using type = absent_handle<typename H::value_type>;
};
template <class H>
struct reduce_handle_of<H, true> {
    using type = std::remove_cvref_t<decltype(std::declval<H&>().reduce_grad(
        std::declval<const step_context&>()))>;
};

/// Runs one rank's program: the state is dense tables indexed by (local stage, microbatch,
/// direction), so each action costs O(1) besides its handler.
template <class H>
class rank_runner {
    using value = typename H::value_type;
    using send_handle = typename send_handle_of<H>::type;
    using recv_handle = typename recv_handle_of<H>::type;
    using unshard_handle = typename unshard_handle_of<H>::type;
    using reduce_handle = typename reduce_handle_of<H>::type;

    enum dir : int { fwd = 0, bwd = 1 };
    enum class in_state : std::uint8_t { empty, posted, ready, consumed };
    enum class out_state : std::uint8_t { empty, produced, sent };
    enum class shard_state : std::uint8_t { sharded, pending, unsharded };
    // Per (local stage, microbatch): which computes ran.
    enum : std::uint8_t { did_f = 1, did_i = 2, did_w = 4, did_b = 8 };

    struct input_cell {
        in_state state = in_state::empty;
        int step = -1; // where the RECV was posted, or the producing compute's step
        std::optional<recv_handle> pending;
        std::optional<value> data;
    };
    struct output_cell {
        out_state state = out_state::empty;
        int step = -1;
        std::optional<value> data;
    };
    struct shard_cell {
        bool fsdp = false; // the program has UNSHARD for this stage
        shard_state state = shard_state::sharded;
        int step = -1;
        std::optional<unshard_handle> pending;
        int weight_grads = 0; // W or B done, for the REDUCE_GRAD check
        bool reduced = false;
    };
    template <class Handle>
    struct posted {
        Handle handle;
        int step;
        action act;
    };

  public:
    rank_runner(const config& cfg, int rank, H& h) : cfg_(cfg), rank_(rank), h_(h) {
        check(cfg);
        PPSCHED_EXPECTS(rank >= 0 && rank < cfg.ranks, "ppsched::execute: rank (", rank,
                        ") must be in [0, ", cfg.ranks, ")");
        M_ = static_cast<std::size_t>(cfg.microbatches);
        const auto local = static_cast<std::size_t>(cfg.stages_per_rank);
        inputs_.resize(local * M_ * 2);
        outputs_.resize(local * M_ * 2);
        done_.assign(local * M_, 0);
        shards_.resize(local);
    }

    /// Reports each action's start and end to `notify(observer, ...)` (the timing hook).
    void observe(void* observer,
                 void (*notify)(void*, const step_context&, execution_clock::time_point,
                                execution_clock::time_point)) {
        observer_ = observer;
        notify_ = notify;
    }

    template <class Row>
    execution_stats run(const Row& program) {
        prescan(program);
        int step = 0;
        for (const auto& s : program) {
            if (const action* a = slot_action(s)) {
                ++stats_.actions;
                begin_span();
                run_action(step, *a);
                if (notify_)
                    notify_(observer_, context(step, *a), span_start_, execution_clock::now());
            }
            ++step;
        }
        finish();
        return stats_;
    }

  private:
    /// Marks the start of the current action's own work (again after a compute's input waits).
    void begin_span() {
        if (notify_) span_start_ = execution_clock::now();
    }

    // ---- errors ---------------------------------------------------------------------------
    [[noreturn]] void fail(execution_failure why, int step, std::optional<action> a,
                           const std::string& detail) const {
        std::string msg = "ppsched::execute: rank " + std::to_string(rank_);
        if (step >= 0)
            msg += ", step " + std::to_string(step);
        else
            msg += ", after the last action";
        if (a) msg += " (" + to_string(*a) + ")";
        msg += ": " + detail + " [" + std::string(to_string_view(why)) + "]";
        throw execution_error(why, rank_, step, a, msg);
    }
    [[nodiscard]] static std::string at_step(int step) { return "step " + std::to_string(step); }

    // ---- layout ---------------------------------------------------------------------------
    [[nodiscard]] std::size_t local(int stage) const {
        return static_cast<std::size_t>(cfg_.local_stage_index(stage));
    }
    [[nodiscard]] std::size_t cell(int stage, int mb, dir d) const {
        return (local(stage) * M_ + static_cast<std::size_t>(mb)) * 2 + static_cast<std::size_t>(d);
    }
    [[nodiscard]] std::uint8_t& done(int stage, int mb) {
        return done_[local(stage) * M_ + static_cast<std::size_t>(mb)];
    }
    [[nodiscard]] bool on_this_rank(int stage) const { return cfg_.stage_to_rank(stage) == rank_; }
    /// The stage a value of direction `d` produced by `stage` goes to (-1: none).
    [[nodiscard]] int consumer(int stage, dir d) const {
        return d == fwd ? cfg_.next_stage(stage) : cfg_.previous_stage(stage);
    }
    /// The stage a value of direction `d` consumed by `stage` comes from (-1: none).
    [[nodiscard]] int producer(int stage, dir d) const {
        return d == fwd ? cfg_.previous_stage(stage) : cfg_.next_stage(stage);
    }
    [[nodiscard]] step_context context(int step, const action& a) const {
        step_context c;
        c.rank = rank_;
        c.step = step;
        c.act = a;
        c.first_stage = cfg_.previous_stage(a.stage()) < 0;
        c.last_stage = cfg_.next_stage(a.stage()) < 0;
        return c;
    }
    /// Names the compute of `stage` that produces its direction-`d` output: `2F0`, or
    /// `2B0/2I0` for the backward (B or I, whichever the program has).
    [[nodiscard]] static std::string producer_name(int stage, int mb, dir d) {
        if (d == fwd) return to_string(action::forward(stage, mb));
        return to_string(action::full_backward(stage, mb)) + "/" +
               to_string(action::backward_input(stage, mb));
    }

    /// Names the compute of `stage` that consumes its direction-`d` input.
    [[nodiscard]] static std::string consumer_name(int stage, int mb, dir d) {
        return producer_name(stage, mb, d); // F consumes the activation, B/I the gradient
    }

    // ---- before running: every action belongs here and has a handler ------------------------
    template <class Row>
    void prescan(const Row& program) {
        int step = 0;
        for (const auto& s : program) {
            const action* a = slot_action(s);
            if (a) {
                std::array<action, 2> parts;
                const int n = a->parts(parts);
                for (int k = 0; k < n; ++k)
                    check_placement(step, parts[static_cast<std::size_t>(k)]);
                if (!handles(h_, a->kind())) {
                    bool fallback = false;
                    if (a->is_overlap())
                        fallback = handles(h_, action_kind::forward) &&
                                   handles(h_, a->backward_part().kind());
                    if (!fallback)
                        fail(execution_failure::missing_handler, step, *a,
                             "the handlers have no " + handler_name(a->kind()) +
                                 " for this action (checked before running anything)");
                }
                if (a->kind() == action_kind::unshard) shards_[local(a->stage())].fsdp = true;
            }
            ++step;
        }
    }

    [[nodiscard]] static std::string handler_name(action_kind k) {
        switch (k) {
        case action_kind::forward:
            return "forward(ctx, input) -> value";
        case action_kind::backward_input:
            return "backward_input(ctx, grad) -> value";
        case action_kind::backward_weight:
            return "backward_weight(ctx)";
        case action_kind::full_backward:
            return "full_backward(ctx, grad) -> value";
        case action_kind::overlap_f_b:
            return "overlap_f_b(fwd_ctx, input, bwd_ctx, grad), nor the members of both parts";
        case action_kind::unshard:
            return "unshard(ctx) -> async handle";
        case action_kind::reshard:
            return "reshard(ctx)";
        case action_kind::send_f:
        case action_kind::send_b:
            return "send(ctx, value) -> async handle";
        case action_kind::recv_f:
        case action_kind::recv_b:
            return "recv(ctx) -> receive handle";
        case action_kind::reduce_grad:
            return "reduce_grad(ctx) -> async handle";
        }
        return "?";
    }

    void check_placement(int step, const action& a) const {
        if (a.stage() >= cfg_.num_stages())
            fail(execution_failure::invalid_action, step, a,
                 "stage " + std::to_string(a.stage()) + " is out of range (" +
                     std::to_string(cfg_.num_stages()) + " stages)");
        if (!on_this_rank(a.stage()))
            fail(execution_failure::invalid_action, step, a,
                 "stage " + std::to_string(a.stage()) + " runs on rank " +
                     std::to_string(cfg_.stage_to_rank(a.stage())) + ", not on this rank");
        if (a.has_microbatch() && a.microbatch() >= cfg_.microbatches)
            fail(execution_failure::invalid_action, step, a,
                 "microbatch " + std::to_string(a.microbatch()) + " is out of range (" +
                     std::to_string(cfg_.microbatches) + " microbatches)");
        if (a.has_microbatch() && !cfg_.stage_runs_microbatch(a.stage(), a.microbatch()))
            fail(execution_failure::invalid_action, step, a,
                 "microbatch " + std::to_string(a.microbatch()) + " does not flow through stage " +
                     std::to_string(a.stage()) + " (the other direction's pipeline)");
        if (is_p2p(a.kind())) {
            const dir d =
                (a.kind() == action_kind::send_f || a.kind() == action_kind::recv_f) ? fwd : bwd;
            const int peer = is_send(a.kind()) ? consumer(a.stage(), d) : producer(a.stage(), d);
            if (peer < 0 || on_this_rank(peer))
                fail(execution_failure::invalid_action, step, a,
                     peer < 0 ? std::string("there is no stage at the other end")
                              : "stage " + std::to_string(peer) +
                                    " at the other end is on this rank (handed over locally)");
        }
    }

    // ---- waiting --------------------------------------------------------------------------
    template <class Handle>
    void wait_on(Handle& handle, int step, std::optional<action> a, const std::string& what) {
        ++stats_.waits;
        wait_result r = handle.wait();
        if (r) return;
        const bool timeout = r.status == wait_status::timed_out;
        fail(timeout ? execution_failure::wait_timed_out : execution_failure::wait_failed, step, a,
             "waiting on " + what + (timeout ? " timed out" : " failed") +
                 (r.message.empty() ? std::string() : ": " + r.message));
    }

    // ---- the actions ----------------------------------------------------------------------
    void run_action(int step, const action& a) {
        switch (a.kind()) {
        case action_kind::forward:
        case action_kind::backward_input:
        case action_kind::backward_weight:
        case action_kind::full_backward:
            run_compute(step, a);
            return;
        case action_kind::overlap_f_b:
            run_overlap(step, a);
            return;
        case action_kind::unshard:
            run_unshard(step, a);
            return;
        case action_kind::reshard:
            run_reshard(step, a);
            return;
        case action_kind::send_f:
            run_send(step, a, fwd);
            return;
        case action_kind::send_b:
            run_send(step, a, bwd);
            return;
        case action_kind::recv_f:
            run_recv(step, a, fwd);
            return;
        case action_kind::recv_b:
            run_recv(step, a, bwd);
            return;
        case action_kind::reduce_grad:
            run_reduce_grad(step, a);
            return;
        }
    }

    /// Waits a pending UNSHARD of the stage; fails when the stage must be unsharded but is not.
    void require_unsharded(int step, const action& owner, int stage) {
        shard_cell& c = shards_[local(stage)];
        if (!c.fsdp) return;
        if (c.state == shard_state::pending) {
            wait_on(*c.pending, step, owner,
                    to_string(action::unshard(stage)) + " (posted at " + at_step(c.step) + ")");
            c.pending.reset();
            c.state = shard_state::unsharded;
        }
        if (c.state == shard_state::sharded)
            fail(execution_failure::sharded, step, owner,
                 "stage " + std::to_string(stage) +
                     " is sharded here (no UNSHARD before this compute, or a RESHARD since)");
    }

    /// Checks the compute-order rules the handlers rely on and records the compute.
    void mark_compute(int step, const action& owner, const action& p) {
        std::uint8_t& d = done(p.stage(), p.microbatch());
        auto dup = [&](const char* why) {
            fail(execution_failure::duplicate, step, owner, to_string(p) + " " + why);
        };
        switch (p.kind()) {
        case action_kind::forward:
            if (d & did_f) dup("runs a second time");
            d |= did_f;
            break;
        case action_kind::backward_input:
        case action_kind::full_backward:
            if (!(d & did_f)) dup("runs before the forward of its stage and microbatch");
            if (d & (did_i | did_b)) dup("runs a second time (or after another backward)");
            d |= p.kind() == action_kind::full_backward ? did_b : did_i;
            break;
        case action_kind::backward_weight:
            if (!(d & did_i)) dup("runs before the I of its stage and microbatch");
            if (d & did_w) dup("runs a second time");
            d |= did_w;
            break;
        default:
            break;
        }
        if (p.kind() == action_kind::full_backward || p.kind() == action_kind::backward_weight)
            ++shards_[local(p.stage())].weight_grads;
    }

    /// The input a compute part consumes in direction `d`: nothing at the pipeline's ends,
    /// a local hand-over, or the value of a posted receive (waited now).
    value take_input(int step, const action& owner, const action& p, dir d) {
        const int from = producer(p.stage(), d);
        if (from < 0) return value{};
        input_cell& c = inputs_[cell(p.stage(), p.microbatch(), d)];
        const action recv = d == fwd ? action::recv_f(p.stage(), p.microbatch())
                                     : action::recv_b(p.stage(), p.microbatch());
        switch (c.state) {
        case in_state::ready:
            break;
        case in_state::posted:
            if constexpr (handles_recv<H>) {
                wait_on(*c.pending, step, owner,
                        to_string(recv) + " (posted at " + at_step(c.step) + ")");
                c.data.emplace(c.pending->take());
                c.pending.reset();
            }
            break;
        case in_state::consumed:
            fail(execution_failure::duplicate, step, owner,
                 "the input of " + to_string(p) + " was consumed already");
        case in_state::empty:
            if (on_this_rank(from))
                fail(execution_failure::missing_input, step, owner,
                     to_string(p) + " needs the output of " +
                         producer_name(from, p.microbatch(), d) +
                         ", which has not run on this rank yet");
            fail(execution_failure::missing_input, step, owner,
                 to_string(p) + " needs " + to_string(recv) +
                     " earlier in the program; no such receive was posted");
        }
        c.state = in_state::consumed;
        value v = std::move(*c.data);
        c.data.reset();
        return v;
    }

    /// Routes a compute part's output in direction `d`: dropped at the pipeline's ends, handed
    /// over to a stage of this rank, or kept for the SEND of the same stage and microbatch.
    void put_output(int step, const action& owner, const action& p, dir d, value v) {
        const int to = consumer(p.stage(), d);
        if (to < 0) return;
        if (on_this_rank(to)) {
            input_cell& c = inputs_[cell(to, p.microbatch(), d)];
            if (c.state != in_state::empty)
                fail(execution_failure::duplicate, step, owner,
                     "stage " + std::to_string(to) + " already has its " +
                         (d == fwd ? "input" : "gradient") + " for microbatch " +
                         std::to_string(p.microbatch()));
            c.state = in_state::ready;
            c.step = step;
            c.data.emplace(std::move(v));
            ++stats_.local_handovers;
            return;
        }
        output_cell& c = outputs_[cell(p.stage(), p.microbatch(), d)];
        c.state = out_state::produced; // a second production is caught by mark_compute
        c.step = step;
        c.data.emplace(std::move(v));
    }

    void run_compute(int step, const action& a) {
        require_unsharded(step, a, a.stage());
        mark_compute(step, a, a);
        const step_context ctx = context(step, a);
        ++stats_.computes;
        switch (a.kind()) {
        case action_kind::forward:
            if constexpr (handles_forward<H>) {
                value in = take_input(step, a, a, fwd);
                begin_span();
                put_output(step, a, a, fwd, value(h_.forward(ctx, std::move(in))));
            }
            return;
        case action_kind::backward_input:
            if constexpr (handles_backward_input<H>) {
                value g = take_input(step, a, a, bwd);
                begin_span();
                put_output(step, a, a, bwd, value(h_.backward_input(ctx, std::move(g))));
            }
            return;
        case action_kind::full_backward:
            if constexpr (handles_full_backward<H>) {
                value g = take_input(step, a, a, bwd);
                begin_span();
                put_output(step, a, a, bwd, value(h_.full_backward(ctx, std::move(g))));
            }
            return;
        case action_kind::backward_weight:
            if constexpr (handles_backward_weight<H>) h_.backward_weight(ctx);
            return;
        default:
            return;
        }
    }

    void run_overlap(int step, const action& a) {
        const action f = a.forward_part(), b = a.backward_part();
        require_unsharded(step, a, f.stage());
        require_unsharded(step, a, b.stage());
        mark_compute(step, a, f);
        mark_compute(step, a, b);
        // Both inputs are waited before the pair starts, as the pair runs as one unit.
        value in = take_input(step, a, f, fwd);
        value g = take_input(step, a, b, bwd);
        const step_context fc = context(step, f), bc = context(step, b);
        begin_span();
        if constexpr (handles_overlap_f_b<H>) {
            if (handles(h_, action_kind::overlap_f_b)) {
                ++stats_.computes;
                std::pair<value, value> out = h_.overlap_f_b(fc, std::move(in), bc, std::move(g));
                put_output(step, a, f, fwd, std::move(out.first));
                put_output(step, a, b, bwd, std::move(out.second));
                return;
            }
        }
        stats_.computes += 2;
        if constexpr (handles_forward<H>)
            put_output(step, a, f, fwd, value(h_.forward(fc, std::move(in))));
        if (b.kind() == action_kind::full_backward) {
            if constexpr (handles_full_backward<H>)
                put_output(step, a, b, bwd, value(h_.full_backward(bc, std::move(g))));
        } else {
            if constexpr (handles_backward_input<H>)
                put_output(step, a, b, bwd, value(h_.backward_input(bc, std::move(g))));
        }
    }

    void run_send(int step, const action& a, dir d) {
        output_cell& c = outputs_[cell(a.stage(), a.microbatch(), d)];
        if (c.state == out_state::empty)
            fail(execution_failure::missing_input, step, a,
                 "nothing to send: " + producer_name(a.stage(), a.microbatch(), d) +
                     " has not run yet");
        if (c.state == out_state::sent)
            fail(execution_failure::duplicate, step, a, "sent already at " + at_step(c.step));
        if constexpr (handles_send<H>) {
            step_context ctx = context(step, a);
            ctx.peer_stage = consumer(a.stage(), d);
            ctx.peer_rank = cfg_.stage_to_rank(ctx.peer_stage);
            value v = std::move(*c.data);
            c.data.reset();
            c.state = out_state::sent;
            c.step = step;
            sends_.push_back({send_handle(h_.send(ctx, std::move(v))), step, a});
            ++stats_.sends;
        }
    }

    void run_recv(int step, const action& a, dir d) {
        input_cell& c = inputs_[cell(a.stage(), a.microbatch(), d)];
        if (c.state != in_state::empty)
            fail(execution_failure::duplicate, step, a,
                 c.state == in_state::consumed ? std::string("the data was consumed already")
                                               : "posted already at " + at_step(c.step));
        if constexpr (handles_recv<H>) {
            step_context ctx = context(step, a);
            ctx.peer_stage = producer(a.stage(), d);
            ctx.peer_rank = cfg_.stage_to_rank(ctx.peer_stage);
            c.pending.emplace(h_.recv(ctx));
            c.state = in_state::posted;
            c.step = step;
            ++stats_.receives;
        }
    }

    void run_unshard(int step, const action& a) {
        shard_cell& c = shards_[local(a.stage())];
        if (c.state != shard_state::sharded)
            fail(execution_failure::duplicate, step, a,
                 "stage " + std::to_string(a.stage()) + " is unsharded already (since " +
                     at_step(c.step) + ")");
        if constexpr (handles_unshard<H>) {
            c.pending.emplace(h_.unshard(context(step, a)));
            c.state = shard_state::pending;
            c.step = step;
        }
    }

    void run_reshard(int step, const action& a) {
        shard_cell& c = shards_[local(a.stage())];
        if (c.state == shard_state::sharded)
            fail(execution_failure::duplicate, step, a,
                 "stage " + std::to_string(a.stage()) + " is not unsharded");
        if (c.state == shard_state::pending) {
            wait_on(*c.pending, step, a,
                    to_string(action::unshard(a.stage())) + " (posted at " + at_step(c.step) + ")");
            c.pending.reset();
        }
        if constexpr (handles_reshard<H>) h_.reshard(context(step, a));
        c.state = shard_state::sharded;
        c.step = step;
    }

    void run_reduce_grad(int step, const action& a) {
        shard_cell& c = shards_[local(a.stage())];
        if (c.reduced) fail(execution_failure::duplicate, step, a, "the stage was reduced already");
        const int expected = cfg_.microbatch_count(a.stage());
        if (c.weight_grads < expected)
            fail(execution_failure::missing_input, step, a,
                 "only " + std::to_string(c.weight_grads) + " of " + std::to_string(expected) +
                     " weight gradients (W or B) of the stage have run");
        c.reduced = true;
        if constexpr (handles_reduce_grad<H>) {
            reduces_.push_back({reduce_handle(h_.reduce_grad(context(step, a))), step, a});
        }
    }

    // ---- after the last action ------------------------------------------------------------
    void finish() {
        for (int s = 0; s < cfg_.num_stages(); ++s) {
            if (!on_this_rank(s)) continue;
            for (int mb = 0; mb < cfg_.microbatches; ++mb) {
                for (const dir d : {fwd, bwd}) {
                    const input_cell& in = inputs_[cell(s, mb, d)];
                    if (in.state == in_state::posted || in.state == in_state::ready) {
                        fail(execution_failure::leftover, -1, std::nullopt,
                             (in.state == in_state::posted
                                  ? to_string(d == fwd ? action::recv_f(s, mb)
                                                       : action::recv_b(s, mb)) +
                                        " posted at " + at_step(in.step)
                                  : std::string("a value handed over at ") + at_step(in.step)) +
                                 " was never consumed by " + consumer_name(s, mb, d));
                    }
                    const output_cell& out = outputs_[cell(s, mb, d)];
                    if (out.state == out_state::produced)
                        fail(execution_failure::leftover, -1, std::nullopt,
                             "the output of " + producer_name(s, mb, d) + " (" + at_step(out.step) +
                                 ") was never sent (no " +
                                 to_string(d == fwd ? action::send_f(s, mb)
                                                    : action::send_b(s, mb)) +
                                 ")");
                }
            }
        }
        // Sends first (in program order), then reductions, then UNSHARDs no compute waited on.
        for (auto& p : sends_)
            wait_on(p.handle, -1, p.act, to_string(p.act) + " (posted at " + at_step(p.step) + ")");
        for (auto& p : reduces_)
            wait_on(p.handle, -1, p.act, to_string(p.act) + " (posted at " + at_step(p.step) + ")");
        for (std::size_t l = 0; l < shards_.size(); ++l) {
            shard_cell& c = shards_[l];
            if (c.state != shard_state::pending) continue;
            const int stage = cfg_.rank_to_stage(rank_, static_cast<int>(l));
            wait_on(*c.pending, -1, action::unshard(stage),
                    to_string(action::unshard(stage)) + " (posted at " + at_step(c.step) + ")");
            c.pending.reset();
            c.state = shard_state::unsharded;
        }
        sends_.clear();
        reduces_.clear();
    }

    config cfg_;
    int rank_;
    H& h_;
    void* observer_ = nullptr;
    void (*notify_)(void*, const step_context&, execution_clock::time_point,
                    execution_clock::time_point) = nullptr;
    execution_clock::time_point span_start_{};
    std::size_t M_ = 0;
    std::vector<input_cell> inputs_;
    std::vector<output_cell> outputs_;
    std::vector<std::uint8_t> done_;
    std::vector<shard_cell> shards_;
    std::vector<posted<send_handle>> sends_;
    std::vector<posted<reduce_handle>> reduces_;
    execution_stats stats_;
};

} // namespace detail

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
