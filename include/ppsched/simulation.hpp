#pragma once
/// \file simulation.hpp
/// What a simulation produces, apart from the engines that produce it (`simulate`,
/// `step_timeline`): the timeline of `timed_action`s, each rank's `rank_summary`, the status
/// with its deadlock or problem, and the summary arithmetic both engines share. The pictures,
/// traces and reports include this, not the simulator.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "ppsched/action.hpp"

namespace ppsched {

/// Where an action runs on its rank.
enum class stream : std::uint8_t {
    compute, ///< F, I, W, B, OVERLAP_F_B: one at a time, in the rank's order
    comm,    ///< UNSHARD, RESHARD, REDUCE_GRAD: one at a time, overlapping compute
    p2p,     ///< SEND and RECV: instantaneous marks (a RECV lasts until its data
             ///< arrives)
};

/// Name of a stream (`"compute"`, `"comm"`, `"p2p"`), as the other enums' `to_string_view`.
[[nodiscard]] constexpr std::string_view to_string_view(stream s) noexcept {
    return s == stream::compute ? "compute" : s == stream::comm ? "comm" : "p2p";
}

/// The same name as a NUL-terminated string: kept for code written against the first
/// version (prefer `to_string_view`).
[[nodiscard]] constexpr const char* to_chars(stream s) noexcept {
    return s == stream::compute ? "compute" : s == stream::comm ? "comm" : "p2p";
}

/// The stream an action of kind `k` runs on (the one rule both simulators use).
[[nodiscard]] constexpr stream stream_of(action_kind k) noexcept {
    return is_compute(k) ? stream::compute : is_p2p(k) ? stream::p2p : stream::comm;
}

/// One action of the timeline.
struct timed_action {
    action act;                  ///< the action
    int rank = 0;                ///< its rank
    int slot = 0;                ///< its position in the rank's row (idle slots counted)
    stream on = stream::compute; ///< the stream it runs on
    bool ran = false;            ///< false when a deadlock or an invalid action stopped the
                                 ///< rank first
    double start = 0;            ///< when it starts (for a RECV: when it is posted)
    double end = 0;              ///< when it ends (for a RECV: when its data has arrived)
};

/// What happened on one rank.
struct rank_summary {
    int rank = 0;
    double busy = 0;                ///< time the compute stream works
    double idle = 0;                ///< makespan - busy
    double bubble_fraction = 0;     ///< idle / makespan
    double comm_busy = 0;           ///< time the communication stream works (UNSHARD, REDUCE_GRAD)
    double end = 0;                 ///< when the rank's last action ends
    double peak_activations = 0;    ///< largest activation memory held at once
    double peak_activations_at = 0; ///< when that peak is first reached
    double parameters = 0;          ///< parameter memory of the rank's stages
    double peak_memory = 0;         ///< parameters + peak_activations
};

/// Outcome of a simulation.
enum class simulation_status : std::uint8_t {
    ok,       ///< every action ran
    deadlock, ///< some ranks wait for inputs that never come (see
              ///< `simulation::stuck`)
    invalid,  ///< an action cannot be simulated (see `simulation::problem`)
};

/// A rank that cannot proceed: its next action and the input it waits for.
struct stuck_rank {
    int rank = 0; ///< the waiting rank
    int slot = 0; ///< position of its next action in its row
    action at;    ///< its next action
    /// The action whose result it waits for. A backward dependency is shown as
    /// `B`: an `I` of the same stage and microbatch serves too.
    action waiting_for;
    int waiting_rank = 0; ///< where `waiting_for` should run
};

/// An action the simulator cannot run, and why.
struct simulation_problem {
    int rank = 0;
    int slot = 0;
    action at;
    const char* what = ""; ///< a static message
};

/// The result of a simulation (`simulate`, `step_timeline`): the timeline and its summary.
struct simulation {
    simulation_status status = simulation_status::ok;
    /// Every action, by rank and then in its rank's order (empty with
    /// `simulate_options::timeline` false).
    std::vector<timed_action> timeline;
    /// One summary per rank.
    std::vector<rank_summary> ranks;
    double makespan = 0;           ///< when the last action (compute or communication) ends
    double total_compute = 0;      ///< sum of every rank's busy time
    double ideal = 0;              ///< total_compute / ranks: the makespan with no bubble at all
    double bubble_fraction = 0;    ///< total idle / (ranks * makespan)
    double bubble_ratio = 0;       ///< (makespan - ideal) / ideal
    bool lowered = false;          ///< the order had SEND/RECV actions (dependencies went
                                   ///< through them)
    std::vector<stuck_rank> stuck; ///< with `deadlock`: every rank that could not finish
    simulation_problem problem{};  ///< with `invalid`

    /// True when every action ran.
    [[nodiscard]] constexpr explicit operator bool() const noexcept {
        return status == simulation_status::ok;
    }
};

namespace detail {

// std::isfinite, usable in constant expressions (<cmath> is not constexpr in C++20).
[[nodiscard]] constexpr bool is_finite(double x) noexcept {
    return x >= -std::numeric_limits<double>::max() && x <= std::numeric_limits<double>::max();
}

/// The summary arithmetic of every simulator, in one place: from each rank's `busy`,
/// `parameters` and `peak_activations` and from `out.makespan`, sets each rank's `idle`,
/// `bubble_fraction` and `peak_memory`, and the totals (`total_compute`, `ideal`,
/// `bubble_fraction`, `bubble_ratio`).
constexpr void summarize_ranks(simulation& out) {
    for (rank_summary& sum : out.ranks) {
        sum.idle = out.makespan - sum.busy;
        sum.bubble_fraction = out.makespan > 0 ? sum.idle / out.makespan : 0;
        sum.peak_memory = sum.parameters + sum.peak_activations;
        out.total_compute += sum.busy;
    }
    if (out.ranks.empty()) return;
    const auto ranks = static_cast<double>(out.ranks.size());
    out.ideal = out.total_compute / ranks;
    // Finite times whose sum overflows (found by fuzzing: a 1e307 message time) must not turn
    // the summary into nan: average without the sum, and use the equivalent
    // 1 - ideal / makespan for the fraction (the usual formulas keep their bits).
    if (!is_finite(out.total_compute)) {
        out.ideal = 0;
        for (const rank_summary& sum : out.ranks) out.ideal += sum.busy / ranks;
    }
    const double span = out.makespan * ranks;
    out.bubble_fraction = span <= 0         ? 0
                          : is_finite(span) ? (span - out.total_compute) / span
                                            : 1 - out.ideal / out.makespan;
    out.bubble_ratio = out.ideal > 0 ? (out.makespan - out.ideal) / out.ideal : 0;
}

} // namespace detail

/// A one-line human description of a failed simulation (empty when it
/// succeeded), e.g. `deadlock: rank 0 waits at slot 3 (0F1) for 1B1 on rank 1;
/// ...`.
[[nodiscard]] inline std::string describe_problem(const simulation& sim) {
    std::string out;
    if (sim.status == simulation_status::invalid) {
        out = "invalid: rank " + std::to_string(sim.problem.rank) + " slot " +
              std::to_string(sim.problem.slot) + " (" + to_string(sim.problem.at) +
              "): " + sim.problem.what;
    } else if (sim.status == simulation_status::deadlock) {
        out = "deadlock:";
        bool first = true;
        for (const stuck_rank& s : sim.stuck) {
            out += first ? " " : "; ";
            first = false;
            std::string waited = to_string(s.waiting_for);
            if (s.waiting_for.kind() == action_kind::full_backward)
                waited += " (or " +
                          to_string(action::backward_input(s.waiting_for.stage(),
                                                           s.waiting_for.microbatch())) +
                          ")";
            out += "rank " + std::to_string(s.rank) + " waits at slot " + std::to_string(s.slot) +
                   " (" + to_string(s.at) + ") for " + waited + " on rank " +
                   std::to_string(s.waiting_rank);
        }
    }
    return out;
}

} // namespace ppsched
