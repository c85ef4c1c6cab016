#pragma once
/// \file io/chart.hpp
/// What a picture shows, apart from how it is drawn: a `chart` (a named, simulated timeline of
/// a configuration), its title line (`chart_title`) and its summary line (`chart_stats`). The
/// SVG writer (io/svg.hpp) draws charts; the tool names its outputs and messages with the same
/// title.

#include <string>

#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/io/detail/number_text.hpp"
#include "ppsched/simulation.hpp"

namespace ppsched::io {

/// One timeline to draw.
struct chart {
    std::string name; ///< what it shows, e.g. the schedule's name (`ZBVZeroBubble`)
    config cfg;       ///< its configuration: ranks, stage chunks (the shades), the title
    /// The timeline: `simulate(...)`, or `step_timeline(...)` of a step layout. Actions that did
    /// not run (`timed_action::ran` false) are not drawn.
    simulation sim;
    bool steps = false; ///< the time axis counts steps of a layout, not cost units
    std::string note;   ///< an optional line under the title (the costs, say)
};

/// The first line of a single chart: `name: P ranks, V stages per rank, M microbatches`.
[[nodiscard]] inline std::string chart_title(const chart& c) {
    const config& cfg = c.cfg;
    std::string s = c.name.empty() ? std::string("pipeline") : c.name;
    s += ": " + ppsched::detail::counted(cfg.ranks, "rank", "ranks") + ", " +
         ppsched::detail::counted(cfg.stages_per_rank, "stage", "stages") + " per rank, " +
         ppsched::detail::counted(cfg.microbatches, "microbatch", "microbatches");
    if (cfg.placement != stage_placement::loop) {
        s += ", ";
        s += to_string_view(cfg.placement) == "v" ? "V" : to_string_view(cfg.placement);
        s += " placement";
    }
    if (c.sim.lowered) s += ", lowered";
    if (c.steps) s += ", step layout";
    return s;
}

/// `makespan 52 · ideal 48 · bubble ratio 0.0833 · idle 7.69 %` (ratios to 3 digits).
[[nodiscard]] inline std::string chart_stats(const chart& c) {
    const simulation& sim = c.sim;
    return "makespan " + ppsched::detail::text::general_number(sim.makespan) +
           (c.steps ? " steps" : "") + " \u00b7 ideal " +
           ppsched::detail::text::general_number(sim.ideal) + " \u00b7 bubble ratio " +
           ppsched::detail::text::general_number(sim.bubble_ratio, 3) + " \u00b7 idle " +
           ppsched::detail::text::general_number(100 * sim.bubble_fraction, 3) + " %";
}

} // namespace ppsched::io
