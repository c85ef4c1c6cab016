// Runs `tune` on every problem of the auto-scheduler's suite (tests/support/tune_suite.hpp) and
// prints the docs/tuning.md results table: per group of problems, how the tuned order compares
// with the best built-in schedule that fits and with the lower bound.
// usage: tune_suite_table [seconds per problem (default 1)] [ranks...]

#include <ppsched/tune/tune.hpp>

#include "../tests/support/tune_suite.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace {

struct group {
    int problems = 0, no_builtin = 0, faster = 0, optimal = 0;
    double speedup_sum = 0, speedup_max = 0, gap_sum = 0, gap_max = 0, seconds_max = 0;
    double time_to_best_max = 0;
};

} // namespace

int main(int argc, char** argv) {
    const double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
    std::vector<int> ranks;
    for (int i = 2; i < argc; ++i) ranks.push_back(std::atoi(argv[i]));
    if (ranks.empty()) ranks = {2, 4, 8};
    std::map<std::tuple<int, std::string, std::string>, group> groups;
    for (const auto& sp : ppsched_test::tune_suite(ranks)) {
        ppsched::tune_options o;
        o.time_limit = seconds;
        const ppsched::tune_result r = ppsched::tune(sp.problem, o);
        const std::string layout = sp.problem.placement == ppsched::stage_placement::v
                                       ? "v"
                                       : "loop v=" + std::to_string(sp.problem.stages_per_rank);
        const std::string memory = sp.name.substr(sp.name.rfind("memory=") + 7);
        group& g = groups[{sp.problem.ranks, layout, memory}];
        ++g.problems;
        if (r.best_builtin.empty()) {
            ++g.no_builtin;
        } else {
            const double speedup = r.best_builtin_makespan / r.makespan;
            g.speedup_sum += speedup;
            g.speedup_max = std::max(g.speedup_max, speedup);
            if (r.makespan < r.best_builtin_makespan * (1 - 1e-9)) ++g.faster;
        }
        if (r.gap == 0) ++g.optimal;
        g.gap_sum += r.gap;
        g.gap_max = std::max(g.gap_max, r.gap);
        g.seconds_max = std::max(g.seconds_max, r.elapsed);
        g.time_to_best_max = std::max(g.time_to_best_max, r.time_to_best);
    }
    std::printf("| p | placement | memory limit | problems | no built-in fits | faster than best "
                "built-in | mean / max speedup | proven optimal | mean / max gap | max time to "
                "answer (s) |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (const auto& [key, g] : groups) {
        const auto& [p, layout, memory] = key;
        const int with_builtin = g.problems - g.no_builtin;
        std::printf(
            "| %d | %s | %s | %d | %d | %d | %.3f / %.3f | %d | %.1f %% / %.1f %% | %.3f |\n", p,
            layout.c_str(), memory.c_str(), g.problems, g.no_builtin, g.faster,
            with_builtin ? g.speedup_sum / with_builtin : 0.0, g.speedup_max, g.optimal,
            100 * g.gap_sum / g.problems, 100 * g.gap_max, g.time_to_best_max);
    }
    return 0;
}
