// execute.hpp: the executor runs every rank's lowered program against fake handlers and an
// in-process communicator (one thread per rank, mailboxes keyed like MPI tags), and the tests
// check the data flow, the order of handler calls and every misuse error.

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/execute.hpp>
#include <ppsched/registry.hpp>

#include <catch2/catch.hpp>

#include "support/order_literal.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

using ppsched::action;
using ppsched::action_kind;
using ppsched::config;
using ppsched::execution_error;
using ppsched::execution_failure;
using ppsched::order;
using ppsched::stage_placement;
using ppsched::step_context;
using ppsched::wait_result;
using ppsched_test::order_of;

namespace {

/// One event a fake handler saw: a compute call, a post (send/recv/unshard/reduce), a wait or
/// a reshard.
struct event {
    enum kind_t { call, post, wait, reshard } kind;
    action act;
    std::string input;  // compute calls: the value received (forward input or gradient)
    std::string input2; // overlap: the backward part's gradient
    int step = -1;      // compute calls: the program step
};

/// The in-process communicator: a mailbox per (destination rank, consuming stage, microbatch,
/// direction), as an MPI tag would encode it. Sends are eager (enqueued when posted).
struct world {
    std::mutex m;
    std::condition_variable cv;
    std::map<std::tuple<int, int, int, int>, std::deque<std::string>> box;
    std::chrono::milliseconds deadline{20000};
};

/// A handle that is complete when posted (a send, an unshard, a reduction); logs its wait.
struct done_handle {
    std::vector<event>* log;
    action act;
    std::optional<wait_result> result = {};
    wait_result wait() {
        log->push_back({event::wait, act, {}, {}});
        return result ? *result : wait_result::ok();
    }
};
static_assert(ppsched::async_handle<done_handle>);

/// A receive: waits (with a deadline) for its mailbox to hold a message.
struct recv_handle {
    world* w;
    std::tuple<int, int, int, int> key;
    std::vector<event>* log;
    action act;
    std::optional<std::string> got = {};
    wait_result wait() {
        std::unique_lock<std::mutex> lock(w->m);
        if (!w->cv.wait_for(lock, w->deadline, [&] { return !w->box[key].empty(); }))
            return wait_result::timeout("no message for " + ppsched::to_string(act));
        got = std::move(w->box[key].front());
        w->box[key].pop_front();
        log->push_back({event::wait, act, {}, {}});
        return wait_result::ok();
    }
    std::string take() { return std::move(*got); }
};
static_assert(ppsched::receive_handle<recv_handle, std::string>);

std::string label(char kind, const action& a) {
    return kind + std::to_string(a.stage()) + "." + std::to_string(a.microbatch());
}

/// Fake handlers. Values are strings that record their history: a forward returns
/// `F<stage>.<mb>(<input>)`, a backward `G<stage>.<mb><<grad>>`, so every consumer can check
/// it got exactly its producer's output. The flags take members away, to test that only the
/// kinds a program contains are needed.
template <bool Comm = true, bool Fsdp = true, bool Split = true, bool Overlap = false>
struct fake_handlers {
    using value_type = std::string;
    world* w = nullptr;
    std::vector<event> log;

    std::string forward(const step_context& c, std::string in) {
        log.push_back({event::call, c.act, in, {}, c.step});
        return label('F', c.act) + "(" + in + ")";
    }
    std::string full_backward(const step_context& c, std::string grad) {
        log.push_back({event::call, c.act, grad, {}, c.step});
        return label('G', c.act) + "<" + grad + ">";
    }
    std::string backward_input(const step_context& c, std::string grad) requires Split {
        log.push_back({event::call, c.act, grad, {}, c.step});
        return label('G', c.act) + "<" + grad + ">";
    }
    void backward_weight(const step_context& c) requires Split {
        log.push_back({event::call, c.act, {}, {}, c.step});
    }
    std::pair<std::string, std::string> overlap_f_b(const step_context& f, std::string in,
                                                    const step_context& b,
                                                    std::string grad) requires Overlap {
        log.push_back({event::call, action::overlap(f.act, b.act), in, grad, f.step});
        return {label('F', f.act) + "(" + in + ")", label('G', b.act) + "<" + grad + ">"};
    }
    done_handle unshard(const step_context& c) requires Fsdp {
        log.push_back({event::post, c.act, {}, {}});
        return {&log, c.act};
    }
    void reshard(const step_context& c) requires Fsdp {
        log.push_back({event::reshard, c.act, {}, {}});
    }
    done_handle reduce_grad(const step_context& c) requires Fsdp {
        log.push_back({event::post, c.act, {}, {}});
        return {&log, c.act};
    }
    done_handle send(const step_context& c, std::string v) requires Comm {
        log.push_back({event::post, c.act, {}, {}});
        const int dir = c.act.kind() == action_kind::send_f ? 0 : 1;
        {
            std::lock_guard<std::mutex> lock(w->m);
            w->box[{c.peer_rank, c.peer_stage, c.act.microbatch(), dir}].push_back(std::move(v));
        }
        w->cv.notify_all();
        return {&log, c.act};
    }
    recv_handle recv(const step_context& c) requires Comm {
        log.push_back({event::post, c.act, {}, {}});
        const int dir = c.act.kind() == action_kind::recv_f ? 0 : 1;
        return {w, {c.rank, c.act.stage(), c.act.microbatch(), dir}, &log, c.act};
    }
};

using full_handlers = fake_handlers<>;
static_assert(ppsched::pipeline_handlers<full_handlers>);
static_assert(ppsched::handles_forward<full_handlers> && ppsched::handles_send<full_handlers> &&
              ppsched::handles_recv<full_handlers> && ppsched::handles_unshard<full_handlers>);
static_assert(!ppsched::handles_overlap_f_b<full_handlers>);
static_assert(!ppsched::handles_send<fake_handlers<false>> &&
              !ppsched::handles_unshard<fake_handlers<true, false>> &&
              !ppsched::handles_backward_input<fake_handlers<true, true, false>>);

/// What the forward of `stage` must output for `mb`, derived from the configuration's chain
/// of stages alone.
std::string expected_forward_output(const config& cfg, int stage, int mb) {
    const int prev = cfg.previous_stage(stage);
    const std::string in = prev < 0 ? "" : expected_forward_output(cfg, prev, mb);
    return "F" + std::to_string(stage) + "." + std::to_string(mb) + "(" + in + ")";
}
std::string expected_input_grad(const config& cfg, int stage, int mb) {
    const int next = cfg.next_stage(stage);
    const std::string g = next < 0 ? "" : expected_input_grad(cfg, next, mb);
    return "G" + std::to_string(stage) + "." + std::to_string(mb) + "<" + g + ">";
}

template <class Handlers>
struct run_result {
    std::vector<Handlers> handlers;
    std::vector<ppsched::execution_stats> stats;
    std::vector<std::exception_ptr> errors;
};

/// Runs every rank's program on its own thread against one in-process communicator.
template <class Handlers>
run_result<Handlers> run_all(const order& lowered, world& w) {
    const auto ranks = lowered.size();
    run_result<Handlers> out;
    out.handlers.resize(ranks);
    out.stats.resize(ranks);
    out.errors.resize(ranks);
    std::vector<std::thread> threads;
    for (std::size_t r = 0; r < ranks; ++r) {
        out.handlers[r].w = &w;
        threads.emplace_back([&, r] {
            try {
                out.stats[r] = ppsched::execute(lowered, static_cast<int>(r), out.handlers[r]);
            } catch (...) {
                out.errors[r] = std::current_exception();
            }
        });
    }
    for (auto& t : threads) t.join();
    return out;
}

std::string error_text(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& x) {
        return x.what();
    }
}

/// Whether compute call `c` consumes what `recv` received.
bool consumes(const action& c, const action& recv) {
    std::array<action, 2> parts;
    const int n = c.parts(parts);
    for (int i = 0; i < n; ++i) {
        const action& p = parts[static_cast<std::size_t>(i)];
        if (p.stage() != recv.stage() || p.microbatch() != recv.microbatch()) continue;
        if (recv.kind() == action_kind::recv_f && p.kind() == action_kind::forward) return true;
        if (recv.kind() == action_kind::recv_b &&
            (p.kind() == action_kind::full_backward || p.kind() == action_kind::backward_input))
            return true;
    }
    return false;
}

/// Runs a lowered order on all ranks and checks the data flow and the handler-call order.
template <class Handlers>
void check_run(const order& lowered, bool overlap_handler) {
    const config& cfg = lowered.cfg();
    INFO(ppsched::io::write_csv(lowered));
    world w;
    auto res = run_all<Handlers>(lowered, w);
    std::size_t sends = 0, receives = 0, handovers = 0;
    for (std::size_t r = 0; r < lowered.size(); ++r) {
        INFO("rank " << r);
        if (res.errors[r]) FAIL(error_text(res.errors[r]));
        sends += res.stats[r].sends;
        receives += res.stats[r].receives;
        handovers += res.stats[r].local_handovers;
        const auto& log = res.handlers[r].log;

        // Compute calls come in program order; an overlap is one call with its own handler.
        std::vector<action> expected_calls;
        std::size_t sends_in_program = 0;
        for (const auto& s : lowered[r]) {
            if (!s) continue;
            if (ppsched::is_send(s->kind())) ++sends_in_program;
            if (!ppsched::is_compute(s->kind())) continue;
            if (s->is_overlap() && !overlap_handler) {
                expected_calls.push_back(s->forward_part());
                expected_calls.push_back(s->backward_part());
            } else {
                expected_calls.push_back(*s);
            }
        }
        std::vector<action> calls;
        for (const auto& e : log) {
            if (e.kind != event::call) continue;
            calls.push_back(e.act);
            // Each input is exactly what its producer output, whether handed over or sent.
            std::array<action, 2> parts;
            const int n = e.act.parts(parts);
            for (int i = 0; i < n; ++i) {
                const action& p = parts[static_cast<std::size_t>(i)];
                const std::string& got = i == 0 ? e.input : e.input2;
                if (p.kind() == action_kind::forward) {
                    const int prev = cfg.previous_stage(p.stage());
                    CHECK(got ==
                          (prev < 0 ? "" : expected_forward_output(cfg, prev, p.microbatch())));
                } else if (p.kind() != action_kind::backward_weight) {
                    const int next = cfg.next_stage(p.stage());
                    CHECK(got == (next < 0 ? "" : expected_input_grad(cfg, next, p.microbatch())));
                }
            }
        }
        CHECK(calls == expected_calls);

        // A receive is waited right before the step that consumes it (an overlap waits both
        // of its inputs first, then calls its handler or its two parts), never where it is
        // posted.
        for (std::size_t i = 0; i < log.size(); ++i) {
            if (log[i].kind != event::wait || !ppsched::is_recv(log[i].act.kind())) continue;
            std::size_t j = i + 1;
            while (j < log.size() && log[j].kind == event::wait) ++j;
            INFO("wait on " << ppsched::to_string(log[i].act));
            REQUIRE(j < log.size());
            REQUIRE(log[j].kind == event::call);
            bool consumed = false;
            for (std::size_t k = j;
                 k < log.size() && log[k].kind == event::call && log[k].step == log[j].step; ++k)
                consumed = consumed || consumes(log[k].act, log[i].act);
            CHECK(consumed);
        }
        // Every send is waited once, after the last compute call.
        std::size_t last_call = 0, send_waits = 0;
        for (std::size_t i = 0; i < log.size(); ++i)
            if (log[i].kind == event::call) last_call = i;
        for (std::size_t i = 0; i < log.size(); ++i) {
            if (log[i].kind != event::wait || !ppsched::is_send(log[i].act.kind())) continue;
            ++send_waits;
            CHECK(i > last_call);
        }
        CHECK(send_waits == sends_in_program);
    }
    // Each stage boundary carries one activation and one gradient per microbatch that runs
    // through it: through the communicator when its two stages live on different ranks, handed
    // over otherwise.
    std::vector<std::size_t> forwards(static_cast<std::size_t>(cfg.num_stages()), 0);
    for (const auto& row : lowered)
        for (const auto& s : row) {
            if (!s || !ppsched::is_compute(s->kind())) continue;
            const action f = s->is_overlap() ? s->forward_part() : *s;
            if (f.kind() == action_kind::forward) ++forwards[static_cast<std::size_t>(f.stage())];
        }
    std::size_t remote = 0, local = 0;
    for (int s = 0; s < cfg.num_stages(); ++s) {
        const int next = cfg.next_stage(s);
        if (next < 0) continue;
        (cfg.stage_to_rank(next) == cfg.stage_to_rank(s) ? local : remote) +=
            2 * forwards[static_cast<std::size_t>(s)];
    }
    CHECK(sends == remote);
    CHECK(receives == remote);
    CHECK(handovers == local);
    for (const auto& [key, q] : w.box) CHECK(q.empty());
}

template <class F>
execution_error error_of(F&& f) {
    try {
        f();
    } catch (const execution_error& e) {
        return e;
    }
    FAIL("no execution_error was thrown");
    throw std::logic_error("unreachable");
}

} // namespace

TEST_CASE("execute hands each output to its consumer for every built-in schedule", "[execute]") {
    const auto& reg = ppsched::builtin_schedules();
    std::size_t runs = 0;
    for (const auto& e : reg.entries()) {
        for (const int ranks : {1, 2, 4}) {
            for (const int mb : {ranks, 2 * ranks + 2}) {
                config cfg{.ranks = ranks,
                           .stages_per_rank = e.default_stages_per_rank,
                           .microbatches = mb,
                           .placement = e.placement};
                try {
                    e.check(cfg, {});
                } catch (const ppsched::config_error&) {
                    continue;
                }
                INFO(e.name << " ranks " << ranks << " microbatches " << mb);
                const order compute = reg.generate(e.name, cfg);
                const order lowered = ppsched::lower(compute);
                REQUIRE(ppsched::validate(lowered));
                check_run<full_handlers>(lowered, false);
                check_run<fake_handlers<true, true, true, true>>(lowered, true);
                // Without FSDP and reduction the handlers need no unshard/reshard/reduce_grad.
                const order plain =
                    ppsched::lower(compute, ppsched::lower_options{.unshard_reshard = false,
                                                                   .reduce_grad = false});
                check_run<fake_handlers<true, false>>(plain, false);
                ++runs;
            }
        }
    }
    CHECK(runs >= 20);
}

TEST_CASE("stages on one rank hand over locally and need no communication handlers", "[execute]") {
    const config cfg{.ranks = 1, .stages_per_rank = 3, .microbatches = 2};
    const order o = order_of(cfg, {"0F0,1F0,2F0,0F1,2B0,1F1,1B0,2F1,0B0,2B1,1B1,0B1"});
    fake_handlers<false, false, false> h; // forward and full_backward only
    const auto stats = ppsched::execute(o, 0, h);
    CHECK(stats.local_handovers == 8);
    CHECK(stats.sends == 0);
    CHECK(stats.computes == 12);
    REQUIRE(h.log.size() == 12);
    CHECK(h.log[1].act == action::forward(1, 0));
    CHECK(h.log[1].input == "F0.0()");
    CHECK(h.log[2].input == "F1.0(F0.0())");
    CHECK(h.log[4].act == action::full_backward(2, 0));
    CHECK(h.log[4].input.empty()); // the last stage starts from its loss
    CHECK(h.log[6].input == "G2.0<>");
}

TEST_CASE("an UNSHARD is waited by the first compute on its stage and a RESHARD follows it",
          "[execute]") {
    const config cfg{.ranks = 1, .stages_per_rank = 1, .microbatches = 1};
    const order o = order_of(cfg, {"0UNSHARD,0F0,0B0,0REDUCE_GRAD,0RESHARD"});
    full_handlers h;
    ppsched::execute(o, 0, h);
    REQUIRE(h.log.size() == 7);
    CHECK(h.log[0].kind == event::post);
    CHECK(h.log[1].kind == event::wait);
    CHECK(h.log[1].act == action::unshard(0));
    CHECK(h.log[2].act == action::forward(0, 0));
    CHECK(h.log[3].act == action::full_backward(0, 0));
    CHECK(h.log[4].act == action::reduce_grad(0)); // posted
    CHECK(h.log[5].kind == event::reshard);
    CHECK(h.log[6].kind == event::wait); // the reduction, after the last action
    CHECK(h.log[6].act == action::reduce_grad(0));
}

TEST_CASE("overlapped actions fall back to their parts without an overlap handler", "[execute]") {
    const config cfg{.ranks = 1, .stages_per_rank = 2, .microbatches = 2};
    const order ok = order_of(cfg, {"0F0,1F0,0F1,1B0,(1F1;0B0)OVERLAP_F_B,1B1,0B1"});
    fake_handlers<false, false, false> parts;
    const auto s1 = ppsched::execute(ok, 0, parts);
    CHECK(s1.computes == 8);
    CHECK(parts.log[4].act == action::forward(1, 1));
    CHECK(parts.log[5].act == action::full_backward(0, 0));
    CHECK(parts.log[5].input == "G1.0<>");
    fake_handlers<false, false, false, true> fused;
    const auto s2 = ppsched::execute(ok, 0, fused);
    CHECK(s2.computes == 7);
    CHECK(fused.log[4].act.is_overlap());
    CHECK(fused.log[4].input == "F0.1()");
    CHECK(fused.log[4].input2 == "G1.0<>");
}

TEST_CASE("a missing handler is an error before anything runs", "[execute][errors]") {
    const config cfg{.ranks = 1, .stages_per_rank = 1, .microbatches = 1};
    const order o = order_of(cfg, {"0F0,0I0,0W0,0UNSHARD,0RESHARD"});
    fake_handlers<false, false, true> no_fsdp;
    const auto e = error_of([&] { ppsched::execute(o, 0, no_fsdp); });
    CHECK(e.reason() == execution_failure::missing_handler);
    CHECK(e.rank() == 0);
    CHECK(e.step() == 3);
    CHECK(e.subject() == action::unshard(0));
    CHECK_THAT(e.what(), Catch::Contains("unshard(ctx)") && Catch::Contains("rank 0, step 3"));
    CHECK(no_fsdp.log.empty());

    fake_handlers<false, false, false> no_split;
    const auto e2 = error_of([&] { ppsched::execute(o, 0, no_split); });
    CHECK(e2.step() == 1);
    CHECK_THAT(e2.what(), Catch::Contains("backward_input"));

    // A handler set built at run time declines kinds through provides().
    struct declining : fake_handlers<false, false, true> {
        bool provides(action_kind k) const { return k != action_kind::backward_weight; }
    } dyn;
    const auto e3 = error_of([&] { ppsched::execute(order_of(cfg, {"0F0,0I0,0W0"}), 0, dyn); });
    CHECK(e3.reason() == execution_failure::missing_handler);
    CHECK(e3.step() == 2);
    CHECK(dyn.log.empty());
}

TEST_CASE("a compute whose receive was never posted is an error", "[execute][errors]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 2};
    const order lowered = ppsched::lower(ppsched::builtin_schedules().generate("gpipe", cfg));
    order broken = lowered;
    auto& row = broken[1];
    for (std::size_t i = 0; i < row.size(); ++i)
        if (row[i] && *row[i] == action::recv_f(1, 1)) {
            row.erase(row.begin() + static_cast<std::ptrdiff_t>(i));
            break;
        }
    world w;
    w.deadline = std::chrono::milliseconds(300); // rank 0 then waits in vain for rank 1
    auto res = run_all<full_handlers>(broken, w);
    REQUIRE(res.errors[1]);
    try {
        std::rethrow_exception(res.errors[1]);
    } catch (const execution_error& e) {
        CHECK(e.reason() == execution_failure::missing_input);
        CHECK(e.subject() == action::forward(1, 1));
        CHECK_THAT(e.what(), Catch::Contains("1RECV_F1") && Catch::Contains("rank 1"));
    }
}

TEST_CASE("a wait that fails or times out becomes an error naming the action",
          "[execute][errors]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    const order lowered = ppsched::lower(ppsched::builtin_schedules().generate("gpipe", cfg));
    SECTION("a peer that never sends: the receive's deadline passes") {
        world w;
        w.deadline = std::chrono::milliseconds(50);
        full_handlers h;
        h.w = &w;
        const auto e = error_of([&] { ppsched::execute(lowered, 1, h); });
        CHECK(e.reason() == execution_failure::wait_timed_out);
        CHECK(e.subject() == action::forward(1, 0));
        CHECK_THAT(e.what(), Catch::Contains("1RECV_F0") && Catch::Contains("timed out") &&
                                 Catch::Contains("no message"));
    }
    SECTION("a send the library reports as failed") {
        struct failing_send : full_handlers {
            done_handle send(const step_context& c, std::string v) {
                done_handle d = full_handlers::send(c, std::move(v));
                d.result = wait_result::failure("peer rank 1 is gone");
                return d;
            }
        };
        world w;
        failing_send h;
        h.w = &w;
        const auto e = error_of([&] {
            ppsched::execute(order_of(cfg, {"0F0,0SEND_F0", ""}), 0, h);
        });
        CHECK(e.reason() == execution_failure::wait_failed);
        CHECK(e.step() == -1);
        CHECK(e.subject() == action::send_f(0, 0));
        CHECK_THAT(e.what(), Catch::Contains("peer rank 1 is gone"));
    }
}

TEST_CASE("execute rejects misuse with the rank, step and action", "[execute][errors]") {
    const config one{.ranks = 1, .stages_per_rank = 1, .microbatches = 2};
    const config two{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    const config dual{
        .ranks = 2, .stages_per_rank = 2, .microbatches = 4, .placement = stage_placement::dual};
    struct bad_case {
        const char* what;
        config cfg;
        const char* row;
        int rank;
        execution_failure reason;
        int step;
        const char* message;
    };
    const bad_case cases[] = {
        {"compute on a sharded stage", one, "0F0,0UNSHARD,0B0,0RESHARD", 0,
         execution_failure::sharded, 0, "sharded"},
        {"compute after RESHARD", one, "0UNSHARD,0F0,0RESHARD,0B0", 0, execution_failure::sharded,
         3, "sharded"},
        {"UNSHARD twice", one, "0UNSHARD,0UNSHARD", 0, execution_failure::duplicate, 1,
         "unsharded already"},
        {"a forward twice", one, "0F0,0F0", 0, execution_failure::duplicate, 1, "second time"},
        {"a backward before its forward", one, "0B0", 0, execution_failure::duplicate, 0,
         "before the forward"},
        {"W before I", one, "0F0,0W0", 0, execution_failure::duplicate, 1, "before the I"},
        {"REDUCE_GRAD before the last backward", one, "0F0,0B0,0REDUCE_GRAD", 0,
         execution_failure::missing_input, 2, "1 of 2"},
        {"a stage of another rank", two, "1F0", 0, execution_failure::invalid_action, 0,
         "runs on rank 1"},
        {"a microbatch out of range", one, "0F5", 0, execution_failure::invalid_action, 0,
         "out of range"},
        {"a microbatch of the other direction", dual, "0F3", 0, execution_failure::invalid_action,
         0, "does not flow through stage 0"},
        {"a SEND to a stage of this rank", one, "0F0,0SEND_F0", 0,
         execution_failure::invalid_action, 1, "no stage at the other end"},
        {"a SEND before its compute", two, "0SEND_F0,0F0", 0, execution_failure::missing_input, 0,
         "nothing to send: 0F0"},
        {"a RECV posted twice", two, "1RECV_F0,1RECV_F0", 1, execution_failure::duplicate, 1,
         "posted already"},
        {"a local input that was never produced",
         config{.ranks = 1, .stages_per_rank = 2, .microbatches = 1}, "1F0", 0,
         execution_failure::missing_input, 0, "needs the output of 0F0"},
        {"a produced output never sent", two, "0F0", 0, execution_failure::leftover, -1,
         "never sent"},
    };
    for (const auto& c : cases) {
        INFO(c.what);
        std::vector<std::string_view> rows(static_cast<std::size_t>(c.cfg.ranks), "");
        rows[static_cast<std::size_t>(c.rank)] = c.row;
        std::vector<ppsched::rank_slots> slots;
        for (auto r : rows) slots.push_back(order_of(config{}, {r})[0]);
        const order o(c.cfg, slots);
        world w;
        w.deadline = std::chrono::milliseconds(10);
        full_handlers h;
        h.w = &w;
        const auto e = error_of([&] { ppsched::execute(o, c.rank, h); });
        CHECK(e.reason() == c.reason);
        CHECK(e.rank() == c.rank);
        CHECK(e.step() == c.step);
        CHECK_THAT(e.what(), Catch::Contains(c.message));
        CHECK_THAT(e.what(), Catch::Contains(std::string(ppsched::to_string_view(c.reason))));
    }
}

TEST_CASE("a received value that nothing consumes is an error at the end", "[execute][errors]") {
    const config two{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    world w;
    w.box[{1, 1, 0, 0}].push_back("F0.0()");
    full_handlers h;
    h.w = &w;
    const auto e = error_of([&] { ppsched::execute(order_of(two, {"", "1RECV_F0"}), 1, h); });
    CHECK(e.reason() == execution_failure::leftover);
    CHECK_THAT(e.what(), Catch::Contains("1RECV_F0 posted at step 0 was never consumed"));
}

TEST_CASE("handler exceptions propagate unchanged", "[execute][errors]") {
    struct throwing : fake_handlers<false, false, false> {
        std::string forward(const step_context&, std::string) {
            throw std::runtime_error("out of memory on the device");
        }
    } h;
    const config cfg{.ranks = 1, .stages_per_rank = 1, .microbatches = 1};
    CHECK_THROWS_WITH(ppsched::execute(order_of(cfg, {"0F0"}), 0, h),
                      "out of memory on the device");
}

TEST_CASE("execute checks its rank and configuration", "[execute][errors]") {
    const config cfg{.ranks = 2, .stages_per_rank = 1, .microbatches = 1};
    full_handlers h;
    CHECK_THROWS_AS(ppsched::execute(order_of(cfg, {"0F0", "1F0"}), 2, h), ppsched::config_error);
    CHECK_THROWS_AS(ppsched::execute(std::vector<action>{}, config{.ranks = 0}, 0, h),
                    ppsched::config_error);
}

TEST_CASE("lowered orders receive from each peer in the order it sends", "[execute][lower]") {
    // What a transport without tags (NCCL, which matches a pair's messages in issue order)
    // needs from the program: the executor posts SENDs and RECVs where they stand.
    const auto& reg = ppsched::builtin_schedules();
    std::size_t pairs = 0;
    for (const auto& e : reg.entries()) {
        for (const int ranks : {2, 4}) {
            const config cfg{.ranks = ranks,
                             .stages_per_rank = e.default_stages_per_rank,
                             .microbatches = 2 * ranks + 2,
                             .placement = e.placement};
            try {
                e.check(cfg, {});
            } catch (const ppsched::config_error&) {
                continue;
            }
            INFO(e.name << " ranks " << ranks);
            const order lowered = ppsched::lower(reg.generate(e.name, cfg));
            const auto n = static_cast<std::size_t>(ranks);
            // The messages from rank a to rank b, named by (consuming stage, microbatch, dir).
            std::vector<std::vector<std::vector<std::tuple<int, int, int>>>> sent(
                n, std::vector<std::vector<std::tuple<int, int, int>>>(n)),
                received = sent;
            for (std::size_t r = 0; r < n; ++r) {
                for (const auto& s : lowered[r]) {
                    if (!s || !ppsched::is_p2p(s->kind())) continue;
                    const bool fwd =
                        s->kind() == action_kind::send_f || s->kind() == action_kind::recv_f;
                    if (ppsched::is_send(s->kind())) {
                        const int to_stage =
                            fwd ? cfg.next_stage(s->stage()) : cfg.previous_stage(s->stage());
                        const auto to = static_cast<std::size_t>(cfg.stage_to_rank(to_stage));
                        sent[r][to].emplace_back(to_stage, s->microbatch(), fwd);
                    } else {
                        const int from_stage =
                            fwd ? cfg.previous_stage(s->stage()) : cfg.next_stage(s->stage());
                        const auto from = static_cast<std::size_t>(cfg.stage_to_rank(from_stage));
                        received[from][r].emplace_back(s->stage(), s->microbatch(), fwd);
                    }
                }
            }
            for (std::size_t a = 0; a < n; ++a)
                for (std::size_t b = 0; b < n; ++b) {
                    CHECK(sent[a][b] == received[a][b]);
                    if (!sent[a][b].empty()) ++pairs;
                }
        }
    }
    CHECK(pairs > 20);
}

namespace {
struct no_value_type {};
struct values_only {
    using value_type = int;
};
struct wrong_signatures {
    using value_type = int;
    void forward(int) {}                                 // not (ctx, value) -> value
    int send(const step_context&, int) { return 0; }     // not an async handle
    done_handle recv(const step_context&) { return {}; } // no take(): not a receive handle
};
} // namespace

TEST_CASE("handler sets are recognised by their value type, each kind by its member",
          "[execute][concepts]") {
    STATIC_REQUIRE(!ppsched::pipeline_handlers<no_value_type>);
    STATIC_REQUIRE(ppsched::pipeline_handlers<values_only>);
    STATIC_REQUIRE(!ppsched::handles_forward<values_only>);
    STATIC_REQUIRE(!ppsched::handles_forward<wrong_signatures>);
    STATIC_REQUIRE(!ppsched::handles_send<wrong_signatures>);
    STATIC_REQUIRE(!ppsched::handles_recv<wrong_signatures>);
    STATIC_REQUIRE(ppsched::handles_overlap_f_b<fake_handlers<true, true, true, true>>);
    STATIC_REQUIRE(ppsched::handles_reduce_grad<full_handlers>);
    STATIC_REQUIRE(!ppsched::handles_reduce_grad<fake_handlers<true, false>>);
    values_only v;
    CHECK_FALSE(ppsched::handles(v, action_kind::forward));
    full_handlers f;
    CHECK(ppsched::handles(f, action_kind::recv_b));
    CHECK_FALSE(ppsched::handles(f, action_kind::overlap_f_b));
}

namespace {
/// Rank 0's forwards take 20 ms, so rank 1's forwards wait for their input.
struct slow_forward_handlers : full_handlers {
    std::string forward(const step_context& c, std::string in) {
        if (c.rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return full_handlers::forward(c, std::move(in));
    }
};
} // namespace

TEST_CASE("the timing hook records every action, a compute's span after its input wait",
          "[execute][timing]") {
    const order lowered =
        ppsched::lower(ppsched::generate<ppsched::one_f_one_b>({.ranks = 2, .microbatches = 2}));
    world w;
    std::vector<slow_forward_handlers> h(2);
    std::vector<ppsched::action_timeline> timing(2);
    std::vector<std::exception_ptr> errors(2);
    std::vector<std::thread> threads;
    for (std::size_t r = 0; r < 2; ++r) {
        h[r].w = &w;
        threads.emplace_back([&, r] {
            try {
                (void)ppsched::execute(lowered, static_cast<int>(r), h[r], timing[r]);
            } catch (...) {
                errors[r] = std::current_exception();
            }
        });
    }
    for (auto& t : threads) t.join();
    for (auto& e : errors)
        if (e) std::rethrow_exception(e);
    using ms = std::chrono::duration<double, std::milli>;
    for (std::size_t r = 0; r < 2; ++r) {
        // Every action of the program, in program order, each ending after it starts.
        std::vector<action> want;
        for (const auto& s : lowered[r])
            if (s) want.push_back(*s);
        REQUIRE(timing[r].entries.size() == want.size());
        for (std::size_t i = 0; i < want.size(); ++i) {
            CHECK(timing[r].entries[i].act == want[i]);
            CHECK(timing[r].entries[i].start <= timing[r].entries[i].end);
            if (i > 0) CHECK(timing[r].entries[i - 1].end <= timing[r].entries[i].start);
        }
    }
    auto find = [&](std::size_t r, const action& a) {
        for (const auto& e : timing[r].entries)
            if (e.act == a) return e;
        FAIL("no " << ppsched::to_string(a) << " on rank " << r);
        return timing[r].entries.front();
    };
    // Rank 1's first forward waited about 20 ms for rank 0's; its span starts after the send
    // was posted, so it is much shorter than the wait.
    const auto send = find(0, action::send_f(0, 0));
    const auto f = find(1, action::forward(1, 0));
    CHECK(f.start >= send.start);
    CHECK(ms(f.end - f.start).count() < 15);
    // Rank 0's forward spans hold its 20 ms of work.
    CHECK(ms(find(0, action::forward(0, 0)).end - find(0, action::forward(0, 0)).start).count() >=
          19);
}
