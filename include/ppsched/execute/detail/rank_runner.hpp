#pragma once
/// \file execute/detail/rank_runner.hpp
/// The interpreter behind `execute` (execute.hpp): one class that runs one rank's lowered
/// program by calling the handlers, with dense (local stage, microbatch, direction) tables for
/// the values handed over, the receives posted and the stages unsharded.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/execute/error.hpp"
#include "ppsched/execute/handlers.hpp"
#include "ppsched/order.hpp"

namespace ppsched::detail {

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

} // namespace ppsched::detail
