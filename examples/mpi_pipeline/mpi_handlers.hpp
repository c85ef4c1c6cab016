#pragma once
// The worked case of docs/executor.md: ppsched's executor driven by MPI. One MPI process is one
// pipeline rank of one data-parallel replica (two replicas, or one with `--replicas 1`). The
// handlers below own the model (its parameters, saved activations and gradients) and every
// buffer MPI reads or writes; the executor only sequences them and hands values between them.
//   - SEND/RECV: MPI_Isend/MPI_Irecv on the replica's pipeline communicator; the tag encodes
//     (consuming stage, microbatch, direction), so no two messages in flight share one.
//   - UNSHARD: MPI_Iallgather of the replicas' parameter shards; RESHARD frees the result.
//   - REDUCE_GRAD: MPI_Iallreduce (sum) of the stage's weight gradients over the replicas.
//   - wait(): MPI_Test polling until a deadline, with MPI_ERRORS_RETURN on the communicators,
//     so a dead peer is a failure and a silent one a timeout, never a hang.

#include <mpi.h>

#include <ppsched/config.hpp>
#include <ppsched/execute/handlers.hpp>
#include <ppsched/order.hpp>

#include "model.hpp"
#include "trace_writer.hpp"

#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace mpi_pipeline {

/// How a run is set up, and the failures it injects on purpose (for the tests).
struct run_settings {
    double timeout_seconds = 30;       ///< deadline of every wait
    int hang_rank = -1;                ///< world rank that stops responding ...
    int hang_step = -1;                ///< ... when its program reaches this step
    int exit_rank = -1;                ///< world rank that dies (exits without MPI_Finalize) ...
    int exit_step = -1;                ///< ... at this step
    bool reverse_accumulation = false; ///< sum microbatch gradients last to first (a test)
    stage_work* work = nullptr;        ///< extra per-stage compute (trace_writer.hpp), or none
};

/// The communicators of one process.
struct process_grid {
    int world_rank = 0;
    int pipeline_rank = 0;             ///< rank in `pipeline` (the executor's rank)
    int replica = 0;                   ///< rank in `replicas` (data-parallel index, 0 or 1)
    int replica_count = 2;             ///< data-parallel replicas (1 or 2)
    MPI_Comm pipeline = MPI_COMM_NULL; ///< the ranks of this replica's pipeline
    MPI_Comm replicas = MPI_COMM_NULL; ///< this pipeline rank in both replicas
};

/// MPI's text for an error code.
inline std::string mpi_error_text(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
        return "MPI error " + std::to_string(code);
    return std::string(text, static_cast<std::size_t>(length));
}

/// How long `poll` sleeps between tests once a wait is long. Measured runs (`measured_waits`)
/// raise it on the processes whose timing is not recorded (replica 1), whose frequent wake-ups
/// would otherwise take the core from the ranks being measured, and lower it on the measured ones.
inline int poll_sleep_us = 50;

/// Measured runs (trace_writer.hpp): processes whose timing is not recorded (replica 1) wake
/// every 2 ms. A measured process (replica 0) with a core of its own (`oversubscribed` false)
/// notices a message within about 10 us instead of 50-120 us (a 50 us sleep plus the kernel's
/// default 50 us timer slack): a delay that varies from message to message is not the constant
/// message time the simulator replays, and the idle core has nothing better to do. When
/// processes share cores, such frequent wake-ups would preempt the computing neighbour, so the
/// usual 50 us stays.
inline void measured_waits(bool measured, bool oversubscribed) {
    if (!measured) {
        poll_sleep_us = 2000;
        return;
    }
    if (oversubscribed) return;
    poll_sleep_us = 10;
#ifdef __linux__
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); // 1 ns: a sleep ends when asked
#endif
}

/// Polls `request` with MPI_Test until it completes, MPI reports an error, or `timeout_seconds`
/// pass. Never blocks inside MPI, so a peer that died or hangs cannot hang this process.
/// `expected_count` >= 0 also checks the size of a received message.
inline ppsched::wait_result poll(MPI_Request& request, double timeout_seconds,
                                 const std::string& what, int expected_count = -1) {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::duration<double>(timeout_seconds);
    for (int spins = 0;; ++spins) {
        int done = 0;
        MPI_Status status;
        const int rc = MPI_Test(&request, &done, &status);
        if (rc != MPI_SUCCESS)
            return ppsched::wait_result::failure(what + ": " + mpi_error_text(rc));
        if (done) {
            if (expected_count >= 0) {
                int count = -1;
                MPI_Get_count(&status, MPI_DOUBLE, &count);
                if (count != expected_count)
                    return ppsched::wait_result::failure(
                        what + ": received " + std::to_string(count) + " values, expected " +
                        std::to_string(expected_count));
            }
            return ppsched::wait_result::ok();
        }
        if (clock::now() > deadline)
            return ppsched::wait_result::timeout(
                what + ": not complete after " + std::to_string(timeout_seconds) +
                " s (the peer process stopped responding or died)");
        // Oversubscribed processes share cores: give the peers the CPU while waiting.
        if (spins < 64)
            std::this_thread::yield();
        else
            std::this_thread::sleep_for(std::chrono::microseconds(poll_sleep_us));
    }
}

/// A handle on one MPI request. The buffer it reads or fills belongs to the handlers (it lives
/// until the run ends), so moving or dropping the handle never frees memory MPI still uses.
class mpi_handle {
  public:
    mpi_handle(std::string what, double timeout_seconds, std::vector<double>* received = nullptr)
        : what_(std::move(what)), timeout_(timeout_seconds), received_(received) {}
    mpi_handle(mpi_handle&& o) noexcept
        : request_(std::exchange(o.request_, MPI_REQUEST_NULL)), what_(std::move(o.what_)),
          timeout_(o.timeout_), received_(o.received_) {}
    mpi_handle& operator=(mpi_handle&& o) noexcept {
        std::swap(request_, o.request_);
        std::swap(what_, o.what_);
        std::swap(timeout_, o.timeout_);
        std::swap(received_, o.received_);
        return *this;
    }
    mpi_handle(const mpi_handle&) = delete;
    mpi_handle& operator=(const mpi_handle&) = delete;
    /// Only reached with an active request when `execute` threw: cancel a pending receive so
    /// it cannot match a later message (the example then aborts the job).
    ~mpi_handle() {
        if (request_ != MPI_REQUEST_NULL && received_ != nullptr) {
            MPI_Cancel(&request_);
            MPI_Request_free(&request_);
        }
    }

    MPI_Request* request() { return &request_; }

    ppsched::wait_result wait() {
        return poll(request_, timeout_, what_, received_ ? activation_size : -1);
    }
    /// The received values (a receive handle, after a successful wait).
    std::vector<double> take() { return std::move(*received_); }

  private:
    MPI_Request request_ = MPI_REQUEST_NULL;
    std::string what_;
    double timeout_;
    std::vector<double>* received_;
};
static_assert(ppsched::receive_handle<mpi_handle, std::vector<double>>);

/// Fails with the MPI error text when an MPI call does not succeed.
inline void check_mpi(int rc, const std::string& what) {
    if (rc != MPI_SUCCESS) throw std::runtime_error(what + ": " + mpi_error_text(rc));
}

/// The state of one stage held by this process.
struct stage_state {
    int stage = -1;
    bool fsdp = false;         ///< the program has UNSHARD for it: parameters start sharded
    std::vector<double> shard; ///< this replica's half of the parameters (FSDP)
    std::vector<double> full;  ///< all parameters while unsharded (always, without FSDP)
    std::vector<saved_activations> saved;                          ///< per microbatch
    std::vector<std::optional<std::vector<double>>> contributions; ///< per microbatch
    std::vector<double> reduce_in, reduce_out;                     ///< REDUCE_GRAD's buffers
    bool reduced = false;
};

/// The handler set: models `ppsched::pipeline_handlers` with every action kind.
class mpi_handlers {
  public:
    using value_type = std::vector<double>;

    /// Sets up the stages `grid.pipeline_rank` holds; a stage whose program has UNSHARD starts
    /// with only its shard.
    mpi_handlers(const ppsched::config& cfg, const ppsched::rank_slots& program,
                 const process_grid& grid, const run_settings& settings)
        : cfg_(cfg), grid_(grid), settings_(settings) {
        check_mpi(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub_, &has_tag_ub_),
                  "MPI_Comm_get_attr(MPI_TAG_UB)");
        stages_.resize(static_cast<std::size_t>(cfg.stages_per_rank));
        for (int local = 0; local < cfg.stages_per_rank; ++local) {
            stage_state& st = stages_[static_cast<std::size_t>(local)];
            st.stage = cfg.rank_to_stage(grid.pipeline_rank, local);
            st.saved.resize(static_cast<std::size_t>(cfg.microbatches));
            st.contributions.resize(static_cast<std::size_t>(cfg.microbatches));
        }
        for (const auto& s : program)
            if (s && s->kind() == ppsched::action_kind::unshard) state(s->stage()).fsdp = true;
        for (auto& st : stages_) {
            std::vector<double> p = initial_parameters(st.stage);
            if (!st.fsdp) {
                st.full = std::move(p);
                continue;
            }
            const auto part = p.size() / static_cast<std::size_t>(grid.replica_count);
            const auto begin = p.begin() + static_cast<std::ptrdiff_t>(
                                               part * static_cast<std::size_t>(grid.replica));
            st.shard.assign(begin, begin + static_cast<std::ptrdiff_t>(part));
        }
        losses_.assign(static_cast<std::size_t>(cfg.microbatches), std::nullopt);
    }

    // ---- compute --------------------------------------------------------------------------
    value_type forward(const ppsched::step_context& c, value_type input) {
        inject_failure(c);
        extra_work(c);
        stage_state& st = state(c.act.stage());
        const int mb = c.act.microbatch();
        if (c.first_stage) input = input_of(grid_.replica, mb);
        value_type y = stage_forward(params(st), std::move(input), st.saved[idx(mb)]);
        if (c.last_stage) losses_[idx(mb)] = microbatch_loss(y, target_of(grid_.replica, mb));
        return y;
    }
    value_type backward_input(const ppsched::step_context& c, value_type grad) {
        inject_failure(c);
        extra_work(c, ppsched::action_kind::backward_input);
        stage_state& st = state(c.act.stage());
        const int mb = c.act.microbatch();
        if (c.last_stage) grad = last_stage_gradient(st, mb);
        return stage_backward_input(params(st), std::move(grad), st.saved[idx(mb)]);
    }
    void backward_weight(const ppsched::step_context& c) {
        inject_failure(c);
        extra_work(c, ppsched::action_kind::backward_weight);
        stage_state& st = state(c.act.stage());
        const int mb = c.act.microbatch();
        st.contributions[idx(mb)] = stage_backward_weight(st.saved[idx(mb)]);
        st.saved[idx(mb)] = {}; // the microbatch's activations are no longer needed
    }
    value_type full_backward(const ppsched::step_context& c, value_type grad) {
        value_type gx = backward_input(c, std::move(grad));
        backward_weight(c);
        return gx;
    }
    /// A real runtime overlaps the two halves (one's communication under the other's
    /// compute); this model is too small to gain from it, so it runs them in turn.
    std::pair<value_type, value_type> overlap_f_b(const ppsched::step_context& f, value_type input,
                                                  const ppsched::step_context& b, value_type grad) {
        value_type y = forward(f, std::move(input));
        value_type gx = b.act.kind() == ppsched::action_kind::full_backward
                            ? full_backward(b, std::move(grad))
                            : backward_input(b, std::move(grad));
        return {std::move(y), std::move(gx)};
    }

    // ---- FSDP and data parallelism ----------------------------------------------------------
    mpi_handle unshard(const ppsched::step_context& c) {
        inject_failure(c);
        stage_state& st = state(c.act.stage());
        st.full.assign(static_cast<std::size_t>(stage_params), 0.0);
        mpi_handle h(where(c) + "MPI_Iallgather of stage " + std::to_string(st.stage) +
                         "'s parameter shards",
                     settings_.timeout_seconds);
        const int part = stage_params / grid_.replica_count;
        check_mpi(MPI_Iallgather(st.shard.data(), part, MPI_DOUBLE, st.full.data(), part,
                                 MPI_DOUBLE, grid_.replicas, h.request()),
                  "MPI_Iallgather");
        return h;
    }
    void reshard(const ppsched::step_context& c) {
        inject_failure(c);
        stage_state& st = state(c.act.stage());
        st.full.clear();
        st.full.shrink_to_fit();
    }
    mpi_handle reduce_grad(const ppsched::step_context& c) {
        inject_failure(c);
        stage_state& st = state(c.act.stage());
        st.reduce_in = sum_in_microbatch_order(st.contributions);
        if (settings_.reverse_accumulation)
            st.reduce_in =
                sum_in_microbatch_order({st.contributions.rbegin(), st.contributions.rend()});
        st.reduce_out.assign(st.reduce_in.size(), 0.0);
        st.reduced = true;
        mpi_handle h(where(c) + "MPI_Iallreduce of stage " + std::to_string(st.stage) +
                         "'s gradients",
                     settings_.timeout_seconds);
        check_mpi(MPI_Iallreduce(st.reduce_in.data(), st.reduce_out.data(), stage_params,
                                 MPI_DOUBLE, MPI_SUM, grid_.replicas, h.request()),
                  "MPI_Iallreduce");
        return h;
    }

    // ---- point to point ---------------------------------------------------------------------
    mpi_handle send(const ppsched::step_context& c, value_type v) {
        inject_failure(c);
        const bool fwd = c.act.kind() == ppsched::action_kind::send_f;
        std::vector<double>& buffer = buffers_.emplace_back(std::move(v));
        mpi_handle h(where(c) + "MPI_Isend to pipeline rank " + std::to_string(c.peer_rank),
                     settings_.timeout_seconds);
        check_mpi(MPI_Isend(buffer.data(), static_cast<int>(buffer.size()), MPI_DOUBLE, c.peer_rank,
                            tag(c.peer_stage, c.act.microbatch(), fwd), grid_.pipeline,
                            h.request()),
                  "MPI_Isend");
        // Measured runs (trace_writer.hpp): MPI over TCP moves a message only inside MPI calls,
        // so without this it would wait for this rank's next call, after its next compute.
        // Completing the (small, eager) send now puts it on the wire, as the simulator assumes.
        if (settings_.work) {
            const auto r = poll(*h.request(), settings_.timeout_seconds, "MPI_Isend");
            if (!r) throw std::runtime_error(r.message);
        }
        return h;
    }
    mpi_handle recv(const ppsched::step_context& c) {
        inject_failure(c);
        const bool fwd = c.act.kind() == ppsched::action_kind::recv_f;
        std::vector<double>& buffer =
            buffers_.emplace_back(static_cast<std::size_t>(activation_size));
        mpi_handle h(where(c) + "MPI_Irecv from pipeline rank " + std::to_string(c.peer_rank),
                     settings_.timeout_seconds, &buffer);
        check_mpi(MPI_Irecv(buffer.data(), activation_size, MPI_DOUBLE, c.peer_rank,
                            tag(c.act.stage(), c.act.microbatch(), fwd), grid_.pipeline,
                            h.request()),
                  "MPI_Irecv");
        return h;
    }

    // ---- results ------------------------------------------------------------------------
    [[nodiscard]] const std::vector<stage_state>& stages() const { return stages_; }
    /// The loss of each microbatch whose last stage is here.
    [[nodiscard]] const std::vector<std::optional<double>>& losses() const { return losses_; }

  private:
    static std::size_t idx(int i) { return static_cast<std::size_t>(i); }

    stage_state& state(int stage) { return stages_[idx(cfg_.local_stage_index(stage))]; }

    /// The parameters a compute uses; the executor guarantees an FSDP stage is unsharded.
    static const double* params(const stage_state& st) {
        if (st.full.size() != static_cast<std::size_t>(stage_params))
            throw std::logic_error("stage " + std::to_string(st.stage) + " computes while sharded");
        return st.full.data();
    }

    value_type last_stage_gradient(const stage_state& st, int mb) const {
        const auto& outputs = st.saved[idx(mb)].outputs;
        if (outputs.empty()) throw std::logic_error("backward before forward");
        return loss_gradient(outputs.back(), target_of(grid_.replica, mb), cfg_.microbatches);
    }

    /// The tag of the message consumed by `stage` for microbatch `mb`, in one direction: unique
    /// among the messages between two processes of one run.
    int tag(int consumer_stage, int mb, bool forward) const {
        const long long t = (static_cast<long long>(consumer_stage) * cfg_.microbatches + mb) * 2 +
                            (forward ? 0 : 1);
        if (has_tag_ub_ && t > *tag_ub_)
            throw std::runtime_error("tag " + std::to_string(t) + " exceeds MPI_TAG_UB");
        return static_cast<int>(t);
    }

    std::string where(const ppsched::step_context& c) const {
        return "world rank " + std::to_string(grid_.world_rank) + " " + ppsched::to_string(c.act) +
               ": ";
    }

    /// The configured per-stage work (replica 0 only; see trace_writer.hpp).
    void extra_work(const ppsched::step_context& c,
                    ppsched::action_kind kind = ppsched::action_kind::forward) const {
        if (settings_.work && grid_.replica == 0) settings_.work->run(c.act.stage(), kind);
    }

    /// The failures the tests inject: a process that stops responding, or one that dies.
    void inject_failure(const ppsched::step_context& c) const {
        if (grid_.world_rank == settings_.exit_rank && c.step >= settings_.exit_step) {
            std::fprintf(stderr, "[world rank %d] injected failure: exiting at step %d\n",
                         grid_.world_rank, c.step);
            std::fflush(stderr);
            std::_Exit(3);
        }
        if (grid_.world_rank == settings_.hang_rank && c.step >= settings_.hang_step) {
            std::fprintf(stderr, "[world rank %d] injected failure: hanging at step %d\n",
                         grid_.world_rank, c.step);
            std::fflush(stderr);
            std::this_thread::sleep_for(
                std::chrono::duration<double>(3 * settings_.timeout_seconds + 10));
        }
    }

    ppsched::config cfg_;
    process_grid grid_;
    run_settings settings_;
    int* tag_ub_ = nullptr;
    int has_tag_ub_ = 0;
    std::vector<stage_state> stages_;
    std::vector<std::optional<double>> losses_;
    std::deque<std::vector<double>> buffers_; // stable addresses for MPI
};

static_assert(ppsched::pipeline_handlers<mpi_handlers>);
static_assert(ppsched::handles_forward<mpi_handlers> &&
              ppsched::handles_backward_input<mpi_handlers> &&
              ppsched::handles_backward_weight<mpi_handlers> &&
              ppsched::handles_full_backward<mpi_handlers> &&
              ppsched::handles_overlap_f_b<mpi_handlers> &&
              ppsched::handles_unshard<mpi_handlers> && ppsched::handles_reshard<mpi_handlers> &&
              ppsched::handles_send<mpi_handlers> && ppsched::handles_recv<mpi_handlers> &&
              ppsched::handles_reduce_grad<mpi_handlers>);

} // namespace mpi_pipeline
