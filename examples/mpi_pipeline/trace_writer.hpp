#pragma once
// Measured runs for `ppsched calibrate`: a per-stage compute cost that differs per stage (real
// arithmetic, scaled by stage), and each pipeline rank's executed actions written as a
// PyTorch-style profiler trace (PP:<action> spans, one file per rank).
//   --stage-cost-us LIST  F of stage s costs LIST[s] microseconds of arithmetic (the last entry
//                         repeats); I costs the same as F, W half of it (so B = 1.5 F)
//   --iterations N        run each order N times (one iteration each)
//   --trace DIR           write DIR/rank<R>.json per pipeline rank and DIR/configured_costs.json
// The extra work runs on replica 0 only: replica 1 (when there is one) keeps the data-parallel
// collectives going but mostly sleeps in its waits, so P pipeline ranks need about P cores.
// scripts/calibration_loop.sh runs `--replicas 1`: one process per pipeline rank, nothing else.

#include <ppsched/cost_model.hpp>
#include <ppsched/execute.hpp>
#include <ppsched/io/cost_json.hpp>
#include <ppsched/io/pytorch_trace.hpp>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpi_pipeline {

/// Busy arithmetic of a configured duration per stage and kind.
struct stage_work {
    std::vector<double> forward_us; ///< per stage (the last entry repeats); empty: no work
    double input_factor = 1.0;      ///< I = factor x F
    double weight_factor = 0.5;     ///< W = factor x F
    double iterations_per_us = 0;   ///< measured by `calibrate_loop`

    [[nodiscard]] bool enabled() const { return !forward_us.empty(); }

    /// The configured cost of `kind` on `stage`, in microseconds.
    [[nodiscard]] double cost_us(int stage, ppsched::action_kind kind) const {
        if (forward_us.empty()) return 0;
        const double f =
            forward_us[std::min(static_cast<std::size_t>(stage), forward_us.size() - 1)];
        switch (kind) {
        case ppsched::action_kind::forward:
            return f;
        case ppsched::action_kind::backward_input:
            return input_factor * f;
        case ppsched::action_kind::backward_weight:
            return weight_factor * f;
        default:
            return 0;
        }
    }

    /// A chain of dependent multiply-adds: its time per iteration is the FMA latency, stable
    /// and not vectorizable.
    static double spin(long long n) {
        volatile double seed = 1.0;
        double x = seed;
        for (long long i = 0; i < n; ++i) x = x * 1.0000001 + 1e-9;
        return x;
    }

    /// Measures iterations per microsecond of this thread's CPU time (the fastest of a few
    /// rounds): CPU time, not wall time, so that processes sharing cores at start-up do not
    /// under-count the machine's speed.
    void calibrate_loop() {
        auto cpu_us = [] {
            timespec t{};
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
            return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
        };
        const long long n = 4'000'000;
        double best = 1e30;
        for (int round = 0; round < 5; ++round) {
            const double t0 = cpu_us();
            sink_ += spin(n);
            best = std::min(best, cpu_us() - t0);
        }
        iterations_per_us = static_cast<double>(n) / best;
    }

    /// Runs the work of one action (a handler calls it).
    void run(int stage, ppsched::action_kind kind) {
        const double us = cost_us(stage, kind);
        if (us > 0) sink_ += spin(static_cast<long long>(us * iterations_per_us));
    }

    /// The configured costs as a cost file (milliseconds, as `ppsched calibrate` writes them).
    [[nodiscard]] std::string configured_costs(int stages) const {
        ppsched::cost_model c;
        for (int s = 0; s < stages; ++s) {
            ppsched::stage_costs sc;
            sc.forward = cost_us(s, ppsched::action_kind::forward) / 1000;
            sc.backward_input = cost_us(s, ppsched::action_kind::backward_input) / 1000;
            sc.backward_weight = cost_us(s, ppsched::action_kind::backward_weight) / 1000;
            c.per_stage.push_back(sc);
        }
        return ppsched::io::write_cost_json(c);
    }

  private:
    double sink_ = 0; // keeps the arithmetic from being optimized away
};

/// Appends one iteration's recorded actions (steady-clock microseconds: the clock all
/// processes of a machine share).
inline void append_spans(const ppsched::action_timeline& t,
                         std::vector<ppsched::io::measured_action>& out) {
    auto us = [](ppsched::execution_clock::time_point p) {
        return std::chrono::duration<double, std::micro>(p.time_since_epoch()).count();
    };
    for (const auto& e : t.entries) out.push_back({e.act, us(e.start), us(e.end)});
}

/// Writes `text` to `path`, or throws.
inline void write_text_file(const std::string& path, const std::string& text) {
    std::ofstream f(path, std::ios::binary);
    f << text;
    if (!f) throw std::runtime_error("cannot write " + path);
}

} // namespace mpi_pipeline
