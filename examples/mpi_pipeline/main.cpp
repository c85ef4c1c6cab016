// mpi_pipeline: runs ppsched's lowered schedules for real, with MPI, and checks that the loss
// and every weight gradient equal a single-process reference bit for bit.
//
//   mpirun -np 2P mpi_pipeline --schedule NAME|all [--config M[,V]]... [options]
//   mpirun -np 2P mpi_pipeline --csv FILE... [options]
//
// The 2P processes form P pipeline ranks x 2 data-parallel replicas (`--replicas 1`: P
// processes, one replica; what measured runs use, see trace_writer.hpp). For every configuration
// and lowering variant each process generates (or reads) the compute order, lowers it,
// validates it (an order that can deadlock never runs), executes its own row with
// `ppsched::execute` and MPI handlers (mpi_handlers.hpp), and compares its results with the
// reference. Exit status: 0 when every run matched (or was rejected as `--expect invalid`
// asks), 1 on a mismatch or an unexpected validation result, 77 when the schedule is not in
// this build's registry; an execution error (a failed or timed-out wait) aborts the job.
//
// Options:
//   --variants LIST   lowerings to run, comma separated (default fsdp,ddp,fsdp1,merge):
//                     fsdp = PyTorch's default (UNSHARD/RESHARD with prefetch 3, REDUCE_GRAD);
//                     ddp = no UNSHARD/RESHARD (replicated parameters); fsdp1 = prefetch 1;
//                     merge = fsdp after fusing adjacent I+W into B
//   --timeout SEC     deadline of every wait (default 30)
//   --mutate KIND     break the lowered order first: drop-send (remove rank 0's first SEND) or
//                     deadlock (move rank 0's first backward, with its RECV_B, before the SEND
//                     its peer needs to produce that gradient)
//   --expect invalid  succeed only when validation rejects every run
//   --no-validate     execute even an invalid order (to show the executor's own errors)
//   --hang W:STEP     world rank W stops responding at step STEP of its program
//   --exit W:STEP     world rank W dies (exits without MPI_Finalize) at step STEP
//   --accumulate reverse  sum each stage's microbatch gradients last to first (to show that
//                     the bitwise comparison notices a different summation order)
//   --replicas R      data-parallel replicas, 1 or 2 (default 2): R x P processes
//   --stage-cost-us L, --iterations N, --trace DIR: measured runs for `ppsched calibrate`
//                     (see trace_writer.hpp)
//   --fault SPEC      exit-rank=R,at=K or silent-rank=R[,at=K] (fault_injection.hpp): then
//                     every surviving process reports its own execution error and exits with
//                     status 4, instead of aborting the job at the first one

#include <mpi.h>

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/execute.hpp>
#include <ppsched/infer_config.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/io/step_table.hpp>
#include <ppsched/registry.hpp>

#include "fault_injection.hpp"
#include "model.hpp"
#include "mpi_handlers.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using namespace mpi_pipeline;

struct options {
    std::string schedule;
    std::vector<std::string> csv_files;
    std::vector<std::pair<int, int>> configs; // (microbatches, stages per rank or 0)
    std::vector<std::string> variants{"fsdp", "ddp", "fsdp1", "merge"};
    std::string mutate;
    bool expect_invalid = false;
    bool validate = true;
    run_settings settings;
    stage_work work;       // --stage-cost-us
    int iterations = 1;    // --iterations
    std::string trace_dir; // --trace
    fault_spec fault;      // --fault
    int replicas = 2;      // --replicas
};

/// With `--fault`, each process that meets an execution error reports it and exits (status 4)
/// rather than aborting the job: every survivor shows what it waited for.
bool survivors_report = false;

/// One run: an order to execute and how to lower it.
struct job {
    std::string name; // for messages
    ppsched::order compute;
    std::string variant;
};

[[noreturn]] void usage_error(const std::string& message) {
    throw std::invalid_argument("mpi_pipeline: " + message);
}

std::vector<std::string> split(const std::string& text, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, sep)) out.push_back(item);
    return out;
}

int to_int(const std::string& text, const std::string& what) {
    try {
        std::size_t used = 0;
        const int v = std::stoi(text, &used);
        if (used == text.size()) return v;
    } catch (const std::exception&) {}
    usage_error(what + ": expected an integer, got '" + text + "'");
}

std::pair<int, int> rank_and_step(const std::string& text, const std::string& what) {
    const auto parts = split(text, ':');
    if (parts.size() != 2) usage_error(what + ": expected W:STEP, got '" + text + "'");
    return {to_int(parts[0], what), to_int(parts[1], what)};
}

constexpr const char* usage_text =
    R"(usage: mpirun -n 2P mpi_pipeline (--schedule NAME [--config M[,V]]... | --csv FILE...)
  2P processes = P pipeline ranks x 2 data-parallel replicas (P processes with --replicas 1).
  --schedule NAME       a schedule of ppsched's registry (C++ or PyTorch name), or all
  --config M[,V]        microbatches and stages per rank (repeatable; default 2P, 3P and 4P
                        with the schedule's V; with `all`, those each schedule supports)
  --csv FILE            a compute order in PyTorch's CSV form (repeatable; P rows)
  --variants LIST       lowerings, comma separated: fsdp,ddp,fsdp1,merge (default: all)
  --timeout SEC         deadline of every wait (default 30)
  --mutate KIND         break the lowered order: drop-send | deadlock
  --expect invalid      succeed only when validation rejects every run
  --no-validate         execute even an invalid order
  --hang W:STEP         world rank W stops responding at step STEP
  --exit W:STEP         world rank W exits without MPI_Finalize at step STEP
  --accumulate reverse  sum microbatch gradients last to first (the check must notice)
  --stage-cost-us LIST  per-stage F cost in microseconds of arithmetic (I = F, W = F/2)
  --iterations N        run each order N times
  --replicas R          data-parallel replicas, 1 or 2 (default 2); R x P processes
  --trace DIR           write each pipeline rank's actions to DIR/rank<R>.json (one run only)
  --fault SPEC          exit-rank=R,at=K | silent-rank=R[,at=K]: every survivor reports its
                        execution error and exits with status 4
)";

/// Thrown by `--help`: print the usage and stop.
struct help_requested {};

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--help" || arg == "-h") throw help_requested{};
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage_error(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--schedule")
            o.schedule = value();
        else if (arg == "--csv")
            o.csv_files.push_back(value());
        else if (arg == "--config") {
            const auto parts = split(value(), ',');
            if (parts.empty() || parts.size() > 2) usage_error("--config: expected M or M,V");
            o.configs.emplace_back(to_int(parts[0], "--config"),
                                   parts.size() == 2 ? to_int(parts[1], "--config") : 0);
        } else if (arg == "--variants")
            o.variants = split(value(), ',');
        else if (arg == "--timeout")
            o.settings.timeout_seconds = std::stod(value());
        else if (arg == "--mutate")
            o.mutate = value();
        else if (arg == "--expect") {
            if (value() != "invalid") usage_error("--expect takes 'invalid'");
            o.expect_invalid = true;
        } else if (arg == "--no-validate")
            o.validate = false;
        else if (arg == "--hang") {
            std::tie(o.settings.hang_rank, o.settings.hang_step) = rank_and_step(value(), arg);
        } else if (arg == "--exit") {
            std::tie(o.settings.exit_rank, o.settings.exit_step) = rank_and_step(value(), arg);
        } else if (arg == "--stage-cost-us") {
            for (const auto& v : split(value(), ',')) o.work.forward_us.push_back(std::stod(v));
        } else if (arg == "--iterations") {
            o.iterations = to_int(value(), arg);
            if (o.iterations < 1) usage_error("--iterations must be >= 1");
        } else if (arg == "--replicas") {
            o.replicas = to_int(value(), arg);
            if (o.replicas != 1 && o.replicas != 2) usage_error("--replicas takes 1 or 2");
        } else if (arg == "--trace") {
            o.trace_dir = value();
        } else if (arg == "--fault") {
            o.fault = parse_fault(value());
            survivors_report = true;
        } else if (arg == "--accumulate") {
            if (value() != "reverse") usage_error("--accumulate takes 'reverse'");
            o.settings.reverse_accumulation = true;
        } else
            usage_error("unknown option '" + arg + "'");
    }
    if (o.schedule.empty() == o.csv_files.empty())
        usage_error("give either --schedule NAME or --csv FILE...");
    for (const auto& v : o.variants)
        if (v != "fsdp" && v != "ddp" && v != "fsdp1" && v != "merge")
            usage_error("unknown variant '" + v + "'");
    if (o.mutate != "" && o.mutate != "drop-send" && o.mutate != "deadlock")
        usage_error("--mutate takes drop-send or deadlock");
    if (o.fault && o.replicas != 2)
        usage_error("--fault needs 2 replicas (it names a process's twin in the other one)");
    return o;
}

ppsched::lower_options lowering(const std::string& variant) {
    if (variant == "ddp") return {.unshard_reshard = false};
    if (variant == "fsdp1") return {.prefetch = 1};
    if (variant == "merge") return {.merge_bw = true};
    return {};
}

// ---- breaking an order on purpose ----------------------------------------------------------

std::ptrdiff_t position(const ppsched::rank_slots& row, const ppsched::action& a) {
    for (std::size_t i = 0; i < row.size(); ++i)
        if (row[i] && *row[i] == a) return static_cast<std::ptrdiff_t>(i);
    return -1;
}

/// Removes the first SEND of the lowest rank that has one: its peer then waits forever.
void drop_first_send(ppsched::order& o) {
    for (auto& row : o)
        for (std::size_t i = 0; i < row.size(); ++i)
            if (row[i] && ppsched::is_send(row[i]->kind())) {
                row.erase(row.begin() + static_cast<std::ptrdiff_t>(i));
                return;
            }
}

/// Rank 0 waits for the gradient of its first sent microbatch before sending the activation
/// the peer needs to produce it: a wait-for cycle between the two ranks.
void make_deadlock(ppsched::order& o) {
    auto& row = o[0];
    for (std::size_t i = 0; i < row.size(); ++i) {
        if (!row[i] || row[i]->kind() != ppsched::action_kind::send_f) continue;
        const int s = row[i]->stage(), mb = row[i]->microbatch();
        const auto recv = position(row, ppsched::action::recv_b(s, mb));
        auto back = position(row, ppsched::action::full_backward(s, mb));
        if (back < 0) back = position(row, ppsched::action::backward_input(s, mb));
        if (recv < 0 || back < 0) continue;
        const ppsched::slot r = row[static_cast<std::size_t>(recv)];
        const ppsched::slot b = row[static_cast<std::size_t>(back)];
        row.erase(row.begin() + std::max(recv, back));
        row.erase(row.begin() + std::min(recv, back));
        row.insert(row.begin() + static_cast<std::ptrdiff_t>(i), {r, b});
        return;
    }
    throw std::runtime_error("--mutate deadlock: no SEND_F with its backward on rank 0");
}

// ---- the single-process reference ----------------------------------------------------------

struct reference_result {
    std::vector<std::vector<double>> gradients; // per stage, averaged over the replicas
    std::vector<std::vector<double>> losses;    // [replica][microbatch]
    double loss = 0;                            // the iteration's loss
};

/// The first stage microbatch `mb` enters (where the order runs its forward on a stage with
/// no previous stage): the stages then follow `cfg.next_stage`.
std::vector<int> entry_stages(const ppsched::order& compute) {
    const ppsched::config& cfg = compute.cfg();
    std::vector<int> entry(static_cast<std::size_t>(cfg.microbatches), -1);
    for (const auto& row : compute)
        for (const auto& s : row) {
            if (!s) continue;
            const ppsched::action f = s->is_overlap() ? s->forward_part() : *s;
            if (f.kind() == ppsched::action_kind::forward && cfg.previous_stage(f.stage()) < 0)
                entry[static_cast<std::size_t>(f.microbatch())] = f.stage();
        }
    for (std::size_t mb = 0; mb < entry.size(); ++mb)
        if (entry[mb] < 0)
            throw std::runtime_error("microbatch " + std::to_string(mb) +
                                     " never enters a pipeline");
    return entry;
}

/// The same arithmetic as the distributed run, in one process: per replica and microbatch a
/// forward through the stages, the loss, then the input and weight backwards in reverse.
reference_result reference(const ppsched::order& compute, int replicas) {
    const ppsched::config& cfg = compute.cfg();
    const auto stages = static_cast<std::size_t>(cfg.num_stages());
    const auto mbs = static_cast<std::size_t>(cfg.microbatches);
    const std::vector<int> entry = entry_stages(compute);
    std::vector<std::vector<double>> params(stages);
    for (std::size_t s = 0; s < stages; ++s) params[s] = initial_parameters(static_cast<int>(s));

    reference_result out;
    std::vector<std::vector<std::vector<double>>> per_replica(static_cast<std::size_t>(replicas));
    for (int replica = 0; replica < replicas; ++replica) {
        std::vector<std::vector<std::optional<std::vector<double>>>> contributions(
            stages, std::vector<std::optional<std::vector<double>>>(mbs));
        std::vector<double> losses(mbs);
        for (std::size_t mb = 0; mb < mbs; ++mb) {
            std::vector<int> chain;
            for (int s = entry[mb]; s >= 0; s = cfg.next_stage(s)) chain.push_back(s);
            std::vector<saved_activations> saved(chain.size());
            std::vector<double> x = input_of(replica, static_cast<int>(mb));
            for (std::size_t k = 0; k < chain.size(); ++k)
                x = stage_forward(params[static_cast<std::size_t>(chain[k])].data(), std::move(x),
                                  saved[k]);
            const std::vector<double> t = target_of(replica, static_cast<int>(mb));
            losses[mb] = microbatch_loss(x, t);
            std::vector<double> g = loss_gradient(x, t, cfg.microbatches);
            for (std::size_t k = chain.size(); k-- > 0;) {
                const auto s = static_cast<std::size_t>(chain[k]);
                g = stage_backward_input(params[s].data(), std::move(g), saved[k]);
                contributions[s][mb] = stage_backward_weight(saved[k]);
            }
        }
        for (std::size_t s = 0; s < stages; ++s)
            per_replica[static_cast<std::size_t>(replica)].push_back(
                sum_in_microbatch_order(contributions[s]));
        out.losses.push_back(std::move(losses));
    }
    for (std::size_t s = 0; s < stages; ++s) {
        std::vector<double> g(static_cast<std::size_t>(stage_params));
        for (std::size_t k = 0; k < g.size(); ++k)
            g[k] = replicas == 1 ? per_replica[0][s][k]
                                 : average_of_two(per_replica[0][s][k], per_replica[1][s][k]);
        out.gradients.push_back(std::move(g));
    }
    out.loss = replicas == 1
                   ? replica_loss(out.losses[0])
                   : average_of_two(replica_loss(out.losses[0]), replica_loss(out.losses[1]));
    return out;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// ---- the distributed run -----------------------------------------------------------------------

/// A collective on all processes, waited with the deadline (a dead peer must not hang us).
void all_sum(std::vector<double>& values, MPI_Comm comm, const run_settings& settings,
             const char* what) {
    std::vector<double> in = values;
    MPI_Request req;
    check_mpi(MPI_Iallreduce(in.data(), values.data(), static_cast<int>(values.size()), MPI_DOUBLE,
                             MPI_SUM, comm, &req),
              what);
    const auto r = poll(req, settings.timeout_seconds, what);
    if (!r) throw std::runtime_error(r.message);
}

/// `ppsched::execute` of this process's row, through the fault injector when `--fault` asks.
ppsched::execution_stats execute_run(const ppsched::order& lowered, const process_grid& grid,
                                     mpi_handlers& handlers, const fault_spec& fault,
                                     ppsched::action_timeline& timeline) {
    if (!fault) return ppsched::execute(lowered, grid.pipeline_rank, handlers, timeline);
    const int ranks = lowered.cfg().ranks;
    const auto world_of = [&grid, ranks](int pipeline_rank) {
        return grid.replica * ranks + pipeline_rank;
    };
    fault_injecting_handlers faulty(handlers, fault, grid.world_rank, world_of,
                                    (1 - grid.replica) * ranks + grid.pipeline_rank);
    return ppsched::execute(lowered, grid.pipeline_rank, faulty, timeline);
}

struct run_outcome {
    bool ran = false;
    bool passed = false;
    std::string line;
};

// The mismatches found against the reference: how many, and the first one in words.
struct mismatch_log {
    double count = 0;
    std::string first;
    void add(const std::string& what) {
        if (first.empty()) first = what;
        count += 1;
    }
};

// With --validate: validates the lowered order first (every process validates the same
// order, so all of them agree without talking). An outcome when the run stops there.
std::optional<run_outcome> validate_first(const ppsched::order& lowered, const options& opt,
                                          const std::string& title,
                                          const process_grid& world_grid) {
    if (!opt.validate) return std::nullopt;
    run_outcome out;
    const ppsched::validation_report report = ppsched::validate(lowered);
    if (!report) {
        out.passed = opt.expect_invalid;
        std::string first = ppsched::describe(report[0]);
        out.line = std::string(opt.expect_invalid ? "ok   " : "FAIL ") + title +
                   ": rejected by validation before running (" + std::to_string(report.size()) +
                   " violations): " + first;
        if (!opt.expect_invalid && world_grid.world_rank == 0)
            std::fprintf(stderr, "%s\n", ppsched::format_report(lowered, report).c_str());
        return out;
    }
    if (opt.expect_invalid) {
        out.line = "FAIL " + title + ": validation accepted an order expected to be invalid";
        return out;
    }
    return std::nullopt;
}

// Compares this process's stages with the reference: reduced, resharded, gradients bitwise.
void check_stages(const mpi_handlers& handlers, const reference_result& ref, int replicas,
                  mismatch_log& log) {
    for (const stage_state& st : handlers.stages()) {
        if (!st.reduced) {
            log.add("stage " + std::to_string(st.stage) + " was never reduced");
            continue;
        }
        if (st.fsdp && !st.full.empty())
            log.add("stage " + std::to_string(st.stage) + " is still unsharded at the end");
        const auto& want = ref.gradients[static_cast<std::size_t>(st.stage)];
        for (std::size_t k = 0; k < want.size(); ++k)
            if (!same_bits(average_from_sum(st.reduce_out[k], replicas), want[k])) {
                char text[160];
                std::snprintf(text, sizeof text, "stage %d gradient %zu: %.17g != reference %.17g",
                              st.stage, k, average_from_sum(st.reduce_out[k], replicas), want[k]);
                log.add(text);
                break;
            }
    }
}

// Gathers the losses from wherever they were computed and compares them with the reference;
// returns the iteration's loss.
double check_losses(const mpi_handlers& handlers, const reference_result& ref,
                    const ppsched::config& cfg, const process_grid& grid, const options& opt,
                    mismatch_log& log) {
    const auto mbs = static_cast<std::size_t>(cfg.microbatches);
    const auto replicas = static_cast<std::size_t>(grid.replica_count);
    std::vector<double> losses(replicas * mbs, 0.0);
    for (std::size_t mb = 0; mb < mbs; ++mb)
        if (handlers.losses()[mb])
            losses[static_cast<std::size_t>(grid.replica) * mbs + mb] = *handlers.losses()[mb];
    all_sum(losses, MPI_COMM_WORLD, opt.settings, "gathering the losses");
    std::vector<std::vector<double>> by_replica(replicas);
    for (std::size_t r = 0; r < replicas; ++r) {
        by_replica[r].assign(losses.begin() + static_cast<std::ptrdiff_t>(r * mbs),
                             losses.begin() + static_cast<std::ptrdiff_t>((r + 1) * mbs));
        for (std::size_t mb = 0; mb < mbs; ++mb)
            if (!same_bits(by_replica[r][mb], ref.losses[r][mb]))
                log.add("loss of replica " + std::to_string(r) + " microbatch " +
                        std::to_string(mb) + " differs");
    }
    const double loss =
        replicas == 1 ? replica_loss(by_replica[0])
                      : average_of_two(replica_loss(by_replica[0]), replica_loss(by_replica[1]));
    if (!same_bits(loss, ref.loss)) log.add("the iteration's loss differs");
    return loss;
}

run_outcome run(const job& j, const options& opt, const process_grid& world_grid) {
    const ppsched::config& cfg = j.compute.cfg();
    ppsched::order lowered = ppsched::lower(j.compute, lowering(j.variant));
    if (opt.mutate == "drop-send") drop_first_send(lowered);
    if (opt.mutate == "deadlock") make_deadlock(lowered);
    const std::string title = j.name + " [" + j.variant + "]";

    if (auto stopped = validate_first(lowered, opt, title, world_grid)) return *stopped;
    run_outcome out;

    const reference_result ref = reference(j.compute, world_grid.replica_count);
    // Fresh communicators per run, so no message of one run can match a receive of the next.
    process_grid grid = world_grid;
    check_mpi(MPI_Comm_dup(world_grid.pipeline, &grid.pipeline), "MPI_Comm_dup");
    check_mpi(MPI_Comm_dup(world_grid.replicas, &grid.replicas), "MPI_Comm_dup");
    const auto& program = lowered[static_cast<std::size_t>(grid.pipeline_rank)];
    // --iterations: fresh handlers per iteration, the last one's results are checked below.
    std::optional<mpi_handlers> holder;
    ppsched::execution_stats stats;
    std::vector<ppsched::io::measured_action> spans;
    const bool timed = !opt.trace_dir.empty() || opt.iterations > 1;
    const auto t0 = std::chrono::steady_clock::now();
    for (int it = 0; it < opt.iterations; ++it) {
        holder.emplace(cfg, program, grid, opt.settings);
        if (timed) { // a barrier that sleeps while it waits (MPI_Barrier spins on a core)
            MPI_Request req;
            check_mpi(MPI_Ibarrier(MPI_COMM_WORLD, &req), "MPI_Ibarrier");
            if (const auto r = poll(req, opt.settings.timeout_seconds, "MPI_Ibarrier"); !r)
                throw std::runtime_error(r.message);
        }
        ppsched::action_timeline timeline;
        stats = execute_run(lowered, grid, *holder, opt.fault, timeline);
        append_spans(timeline, spans);
    }
    mpi_handlers& handlers = *holder;
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.ran = true;
    if (!opt.trace_dir.empty() && grid.replica == 0) {
        write_text_file(opt.trace_dir + "/rank" + std::to_string(grid.pipeline_rank) + ".json",
                        ppsched::io::write_pytorch_trace(spans, grid.pipeline_rank, cfg.ranks));
        if (grid.pipeline_rank == 0)
            write_text_file(opt.trace_dir + "/configured_costs.json",
                            opt.work.configured_costs(cfg.num_stages()));
    }

    // Compare this process's stages, then the losses gathered from wherever they were computed.
    mismatch_log log;
    check_stages(handlers, ref, grid.replica_count, log);
    const double loss = check_losses(handlers, ref, cfg, grid, opt, log);

    std::vector<double> totals{log.count, ms, static_cast<double>(stats.actions),
                               static_cast<double>(stats.local_handovers)};
    all_sum(totals, MPI_COMM_WORLD, opt.settings, "counting mismatches");
    if (log.count > 0)
        std::fprintf(stderr, "[world rank %d] %s: %s\n", grid.world_rank, title.c_str(),
                     log.first.c_str());
    MPI_Comm_free(&grid.pipeline);
    MPI_Comm_free(&grid.replicas);

    out.passed = totals[0] == 0;
    char text[400];
    std::snprintf(text, sizeof text,
                  "%s %s: loss %.12f %s reference; %d stage gradients x %d values %s; "
                  "%.0f actions, %.0f local hand-overs over %d processes; rank 0 ran in %.2f ms",
                  out.passed ? "ok  " : "FAIL", title.c_str(), loss, out.passed ? "==" : "vs",
                  cfg.num_stages(), stage_params, out.passed ? "bitwise equal" : "DIFFER",
                  totals[2], totals[3], grid.replica_count * cfg.ranks, ms);
    out.line = text;
    return out;
}

/// The orders to run: a schedule at the given configurations, or CSV files.
std::vector<job> jobs_of(const options& opt, int pipeline_ranks, bool grid_rank0) {
    const std::string per_rank = opt.replicas == 1 ? "that many" : "2 x that many";
    std::vector<ppsched::order> orders;
    std::vector<std::string> names;
    const auto& reg = ppsched::builtin_schedules();
    // `--schedule all`: every entry of the registry, at the configurations it supports.
    std::vector<const ppsched::schedule_entry*> entries;
    if (opt.schedule == "all")
        for (const auto& e : reg.entries()) entries.push_back(&e);
    else if (!opt.schedule.empty())
        entries.push_back(&reg.at(opt.schedule));
    for (const ppsched::schedule_entry* e : entries) {
        auto configs = opt.configs;
        if (configs.empty())
            for (const int m : {2, 3, 4}) configs.emplace_back(m * pipeline_ranks, 0);
        int supported = 0;
        for (const auto& [m, v] : configs) {
            const ppsched::config cfg{.ranks = pipeline_ranks,
                                      .stages_per_rank = v > 0 ? v : e->default_stages_per_rank,
                                      .microbatches = m,
                                      .placement = e->placement};
            if (opt.schedule == "all") {
                try {
                    e->check(cfg, {});
                } catch (const ppsched::config_error&) {
                    continue; // a sweep runs what each schedule supports
                }
            }
            ++supported;
            orders.push_back(reg.generate(e->name, cfg));
            names.push_back(e->name + " ranks=" + std::to_string(cfg.ranks) +
                            " mb=" + std::to_string(cfg.microbatches) +
                            " spr=" + std::to_string(cfg.stages_per_rank) + " " +
                            std::string(ppsched::to_string_view(orders.back().cfg().placement)));
        }
        if (supported == 0 && grid_rank0)
            std::printf("skip %s: none of the configurations is supported (%s)\n", e->name.c_str(),
                        e->constraints.c_str());
    }
    for (const auto& file : opt.csv_files) {
        ppsched::order o = ppsched::io::read_csv_file(file);
        if (o.cfg().ranks != pipeline_ranks)
            usage_error(file + " has " + std::to_string(o.cfg().ranks) + " ranks; run it with " +
                        per_rank + " processes");
        names.push_back(std::filesystem::path(file).filename().string() + " (" +
                        std::string(ppsched::to_string_view(o.cfg().placement)) + ")");
        orders.push_back(std::move(o));
    }
    std::vector<job> out;
    for (std::size_t i = 0; i < orders.size(); ++i)
        for (const auto& v : opt.variants) out.push_back({names[i], orders[i], v});
    if (!opt.trace_dir.empty() && out.size() != 1)
        usage_error("--trace writes one run: give one schedule, one --config and one --variants (" +
                    std::to_string(out.size()) + " runs)");
    return out;
}

int main_body(int argc, char** argv, process_grid& grid, int world_size) {
    options opt = parse(argc, argv);
    if (opt.work.enabled()) {
        opt.work.calibrate_loop();
        opt.settings.work = &opt.work;
    }
    if (world_size % opt.replicas != 0)
        usage_error("run with an even number of processes (2 replicas)");
    const int pipeline_ranks = world_size / opt.replicas;
    grid.replica_count = opt.replicas;
    if (!opt.schedule.empty() && opt.schedule != "all" &&
        ppsched::builtin_schedules().find(opt.schedule) == nullptr) {
        if (grid.world_rank == 0)
            std::printf("mpi_pipeline: schedule '%s' is not in this build's registry: skipped\n",
                        opt.schedule.c_str());
        return 77;
    }
    grid.replica = grid.world_rank / pipeline_ranks;
    grid.pipeline_rank = grid.world_rank % pipeline_ranks;
    check_mpi(MPI_Comm_split(MPI_COMM_WORLD, grid.replica, grid.pipeline_rank, &grid.pipeline),
              "MPI_Comm_split");
    check_mpi(MPI_Comm_split(MPI_COMM_WORLD, grid.pipeline_rank, grid.replica, &grid.replicas),
              "MPI_Comm_split");
    if (opt.work.enabled()) // see poll_sleep_us
        measured_waits(grid.replica == 0,
                       static_cast<unsigned>(world_size) > std::thread::hardware_concurrency());

    const auto t0 = std::chrono::steady_clock::now();
    int passed = 0, failed = 0;
    for (const job& j : jobs_of(opt, pipeline_ranks, grid.world_rank == 0)) {
        const run_outcome r = run(j, opt, grid);
        (r.passed ? passed : failed) += 1;
        if (grid.world_rank == 0) std::printf("%s\n", r.line.c_str());
        std::fflush(stdout);
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (grid.world_rank == 0)
        std::printf("mpi_pipeline: %d runs passed, %d failed (%d processes = %d pipeline ranks x "
                    "%d replica%s, %.2f s)\n",
                    passed, failed, world_size, pipeline_ranks, opt.replicas,
                    opt.replicas == 1 ? "" : "s", seconds);
    MPI_Comm_free(&grid.pipeline);
    MPI_Comm_free(&grid.replicas);
    return failed == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    // Errors come back as codes (turned into failed waits), instead of aborting inside MPI.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    process_grid grid;
    int world_size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &grid.world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    int status = 0;
    try {
        status = main_body(argc, argv, grid, world_size);
    } catch (const ppsched::execution_error& e) {
        // A failed or timed-out wait, or a broken program: this process cannot go on, and its
        // peers would wait for it, so end the whole job now.
        std::fprintf(stderr, "[world rank %d] execution error: %s\n", grid.world_rank, e.what());
        std::fflush(stderr);
        // Under --fault a peer may be dead: no MPI_Finalize (it could wait for it), no abort
        // (the other survivors report their own errors).
        if (survivors_report) std::_Exit(4);
        MPI_Abort(MPI_COMM_WORLD, 2);
    } catch (const help_requested&) {
        if (grid.world_rank == 0) std::printf("%s", usage_text);
    } catch (const std::invalid_argument& e) {
        if (grid.world_rank == 0) std::fprintf(stderr, "%s\n%s", e.what(), usage_text);
        status = 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "[world rank %d] error: %s\n", grid.world_rank, e.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Finalize();
    return status;
}
