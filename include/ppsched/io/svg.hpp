#pragma once
/// \file io/svg.hpp
/// Pictures of pipeline schedules: a self-contained SVG Gantt chart of a simulated timeline (one
/// row per rank, a box per action at its start and end, coloured by kind, a shade per stage chunk,
/// a legend, a title with the makespan and the bubble, hover text per box), and several
/// timelines stacked on one shared time axis to compare schedules. Standard library only; text
/// out, so the caller decides where it goes.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/algorithms/memory_timeline.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/io/chart.hpp"
#include "ppsched/io/detail/chart_colors.hpp"
#include "ppsched/io/detail/xml_text.hpp"
#include "ppsched/simulation.hpp"

namespace ppsched::io {

/// How `write_svg` draws.
struct svg_options {
    /// The first title line; empty: made from the chart (`name: P ranks, V stages per rank, M
    /// microbatches`), or for a stacked chart `N schedules on one time axis`.
    std::string title;
    std::string subtitle; ///< stacked charts: a line under the title (single charts: `note`)
    /// Pixels per time unit; 0 chooses one from the makespan (wide boxes for small schedules,
    /// at least about 3 px per unit for large ones).
    double px_per_unit = 0;
    bool labels = true; ///< microbatch numbers in the boxes wide enough to hold them
    /// Per chart (in order), each rank's activation memory over time (`memory_timeline(sim,
    /// costs)`): a chart with curves gets a memory chart (a line per rank) under its timeline.
    std::vector<memory_curves> memory;
    /// Activation memory a rank may hold: a dashed line on the memory charts.
    std::optional<double> memory_limit;
};

} // namespace ppsched::io

namespace ppsched::detail::svg {

using io::chart;
using io::chart_stats;
using io::chart_title;
using io::svg_options;

using ppsched::detail::text::append_xml_escaped;
using ppsched::detail::text::general_number;
using ppsched::detail::text::xml_escape;

/// A coordinate: at most two decimals, no trailing zeros (`12.5`, `3`).
[[nodiscard]] inline std::string svg_number(double v) {
    std::array<char, 64> buf{};
    const auto res =
        std::to_chars(buf.data(), buf.data() + buf.size(), v, std::chars_format::fixed, 2);
    std::string s(buf.data(), res.ptr);
    if (s.find('.') != std::string::npos) {
        while (s.back() == '0') s.pop_back();
        if (s.back() == '.') s.pop_back();
    }
    return s == "-0" ? "0" : s;
}

/// Estimated width of `text` in DejaVu Sans at `px`: its digits are 0.64 em wide, so a label
/// of digits never overflows its box; capitals and words need about 0.62 em.
[[nodiscard]] inline double text_width(std::string_view text, double px,
                                       double em = 0.64) noexcept {
    return static_cast<double>(text.size()) * px * em;
}

/// The hover text of an action: what it is, its stage and chunk, microbatch, start and end.
[[nodiscard]] inline std::string hover_text(const timed_action& t, const config& cfg) {
    std::string s = to_string(t.act);
    auto part = [&](const action& p) {
        s += " stage " + std::to_string(p.stage()) + " (chunk " +
             std::to_string(cfg.local_stage_index(p.stage())) + ")";
        if (p.has_microbatch()) s += ", microbatch " + std::to_string(p.microbatch());
    };
    if (t.act.kind() == action_kind::overlap_f_b) {
        s += ": forward of";
        part(t.act.forward_part());
        s += " with ";
        s += code(t.act.backward_part().kind());
        s += " of";
        part(t.act.backward_part());
    } else {
        s += ':';
        part(t.act);
    }
    s += "; rank " + std::to_string(t.rank) + ", start " + general_number(t.start) + ", end " +
         general_number(t.end);
    return s;
}

/// The label in a box: the microbatch, or both for an overlapped pair (`5|2`).
[[nodiscard]] inline std::string box_label(const action& a) {
    if (a.kind() == action_kind::overlap_f_b)
        return std::to_string(a.forward_part().microbatch()) + "|" +
               std::to_string(a.backward_part().microbatch());
    return a.has_microbatch() ? std::to_string(a.microbatch()) : std::string{};
}

/// Tick spacing: the smallest 1, 2 or 5 times a power of ten that is at least `min`.
[[nodiscard]] inline double nice_step(double min) noexcept {
    if (!(min > 0.001)) return 0.001;
    if (!std::isfinite(min)) return std::numeric_limits<double>::max();
    // The decade at or below `min`, then 1, 2, 5 or 10 of it: any magnitude a double holds.
    double p = std::pow(10.0, std::floor(std::log10(min)));
    for (const double m : {1.0, 2.0, 5.0})
        if (m * p >= min) return m * p;
    return 10 * p;
}

/// At most this many time ticks are drawn, whatever the scale (bounded resources).
inline constexpr std::size_t max_svg_ticks = 2000;

/// Layout constants (pixels).
struct svg_layout {
    double left = 68;        // rank labels
    double right = 84;       // peak memory column
    double lane = 20;        // compute lane height
    double comm = 10;        // communication lane height (when the chart has one)
    double gap = 5;          // between ranks
    double heading = 24;     // a stacked panel's heading
    double panel_gap = 12;   // between stacked panels
    double px_per_unit = 24; // horizontal scale
};

[[nodiscard]] inline bool has_comm_lane(const simulation& sim) {
    return std::any_of(sim.timeline.begin(), sim.timeline.end(),
                       [](const timed_action& t) { return t.ran && t.on != stream::compute; });
}

/// Appends the activation-memory chart of `c` (a step line per rank, the limit dashed) with its
/// top at `y`; returns its bottom.
inline double memory_chart(std::string& out, const chart& c, const memory_curves& memory,
                           const svg_options& opts, const svg_layout& L, double y, double plot) {
    constexpr double height = 80;
    double peak = 0;
    for (const auto& curve : memory)
        for (const memory_point& p : curve) peak = std::max(peak, p.activations);
    const double top_value = std::max({peak, opts.memory_limit.value_or(0.0), 1e-12}) * 1.08;
    const double x0 = L.left, u = L.px_per_unit, bottom = y + height;
    auto vy = [&](double v) { return bottom - v / top_value * height; };
    out += "<text class=\"ph\" x=\"" + svg_number(x0) + "\" y=\"" + svg_number(y - 5) +
           "\">activation memory per rank (peak " + general_number(peak) + ")</text>\n";
    out += "<rect x=\"" + svg_number(x0) + "\" y=\"" + svg_number(y) + "\" width=\"" +
           svg_number(plot) + "\" height=\"" + svg_number(height) +
           "\" fill=\"none\" stroke=\"#ccc\"/>\n";
    // The peak's label on the axis, unless it would sit on the 0's (a peak far under the limit).
    if (vy(peak) + 4 <= bottom - 11)
        out += "<text class=\"rk\" x=\"" + svg_number(x0 - 8) + "\" y=\"" +
               svg_number(vy(peak) + 4) + "\">" + general_number(peak) + "</text>";
    out += "<text class=\"rk\" x=\"" + svg_number(x0 - 8) + "\" y=\"" + svg_number(bottom) +
           "\">0</text>\n";
    const int ranks = static_cast<int>(memory.size());
    for (int r = 0; r < ranks; ++r) {
        const auto& curve = memory[static_cast<std::size_t>(r)];
        // A step line: level until the next change, then straight up or down.
        // Appended piece by piece: `"H" + svg_number(...)` trips g++ 12's -Wrestrict at -O3.
        std::string d = "M";
        d += svg_number(x0);
        d += ' ';
        d += svg_number(vy(0));
        for (const memory_point& p : curve) {
            d += 'H';
            d += svg_number(x0 + p.time * u);
            d += 'V';
            d += svg_number(vy(p.activations));
        }
        if (static_cast<std::size_t>(r) < c.sim.ranks.size()) {
            d += 'H';
            d += svg_number(x0 + c.sim.ranks[static_cast<std::size_t>(r)].end * u);
        }
        out += "<path class=\"mem\" d=\"" + d + "\" stroke=\"" + hex(rank_color(r, ranks)) +
               "\"><title>rank " + std::to_string(r) + ": peak " +
               general_number(r < static_cast<int>(c.sim.ranks.size())
                                  ? c.sim.ranks[static_cast<std::size_t>(r)].peak_activations
                                  : 0) +
               "</title></path>\n";
    }
    if (opts.memory_limit) {
        const double ly = vy(*opts.memory_limit);
        out += "<line class=\"lim\" x1=\"" + svg_number(x0) + "\" y1=\"" + svg_number(ly) +
               "\" x2=\"" + svg_number(x0 + plot) + "\" y2=\"" + svg_number(ly) +
               "\"/><text class=\"lm\" x=\"" + svg_number(x0 + plot - 4) + "\" y=\"" +
               svg_number(ly - y < 14 ? ly + 12 : ly - 3) + "\">limit " +
               general_number(*opts.memory_limit) + "</text>\n";
    }
    // The ranks' colours, as a small key under the chart.
    const double ky = bottom + 14;
    out += "<text class=\"pk\" x=\"" + svg_number(x0) + "\" y=\"" + svg_number(ky + 4) +
           "\">rank 0</text>";
    for (int r = 0; r < ranks; ++r)
        out += "<rect x=\"" + svg_number(x0 + 46 + 80.0 * r / ranks) + "\" y=\"" +
               svg_number(ky - 2) + "\" width=\"" + svg_number(80.0 / ranks + 0.3) +
               "\" height=\"6\" fill=\"" + hex(rank_color(r, ranks)) + "\"/>";
    if (ranks > 1) // (one rank: its name is already on the left)
        out += "<text class=\"pk\" x=\"" + svg_number(x0 + 132) + "\" y=\"" + svg_number(ky + 4) +
               "\">rank " + std::to_string(ranks - 1) + "</text>";
    out += "\n";
    return ky + 12;
}

/// What a set of charts spans: the longest makespan, the most ranks and stage chunks, and the
/// legend slots of the kinds drawn. Every number drawn must be finite (docs/design.md,
/// "Bounded resources"): cost_model::check rejects what would overflow; this catches a
/// simulation made some other way.
struct chart_extent {
    double span = 0;
    int max_ranks = 1, max_chunks = 1;
    std::array<bool, 10> kinds_used{};
};

[[nodiscard]] inline chart_extent measure_charts(std::span<const chart> charts) {
    chart_extent e;
    const auto finite = [](double v) {
        PPSCHED_EXPECTS(std::isfinite(v),
                        "ppsched::io::write_svg: a time is not a finite number; check the costs");
    };
    for (const chart& c : charts) {
        finite(c.sim.makespan);
        e.span = std::max(e.span, c.sim.makespan);
        e.max_ranks = std::max(e.max_ranks, c.cfg.ranks);
        e.max_chunks = std::max(e.max_chunks, c.cfg.stages_per_rank);
        for (const timed_action& t : c.sim.timeline) {
            if (!t.ran) continue;
            e.kinds_used[static_cast<std::size_t>(legend_slot(t.act.kind()))] = true;
            finite(t.start);
            finite(t.end);
        }
    }
    if (e.span <= 0) e.span = 1;
    return e;
}

/// The layout for `e`: narrower lanes for many ranks, and the horizontal scale. Wide boxes (24
/// px per unit) while the chart stays under 1400 px; beyond that shrink to 1400 px, but not
/// below 3 px per unit unless the chart would pass 6000 px.
[[nodiscard]] inline svg_layout layout_for(const chart_extent& e, const svg_options& opts) {
    svg_layout L;
    if (e.max_ranks > 16) L.lane = 14;
    if (opts.px_per_unit > 0)
        L.px_per_unit = opts.px_per_unit;
    else if (e.span * 24 > 1400)
        L.px_per_unit = std::max(1400 / e.span, std::min(3.0, 6000 / e.span));
    return L;
}

/// The picture's parts, in drawing order (later ones on top).
struct svg_layers {
    std::string head;   // title, subtitles, legend
    std::string bg;     // the idle lanes
    std::string grid;   // tick lines and makespan marks
    std::string boxes;  // one per action
    std::string labels; // microbatch numbers in the boxes
    std::string body;   // rank labels, peak memory, panel headings, memory charts
};

/// Appends the title and subtitle lines to `head`, from `y`; returns the last line's y.
inline double draw_title_block(std::string& head, const std::string& title,
                               const std::vector<std::string>& sub, double y) {
    head += "<text class=\"t1\" x=\"12\" y=\"" + svg_number(y) + "\">";
    append_xml_escaped(head, title);
    head += "</text>\n";
    for (const auto& s : sub) {
        y += 19;
        head += "<text class=\"t2\" x=\"12\" y=\"" + svg_number(y) + "\">";
        append_xml_escaped(head, s);
        head += "</text>\n";
    }
    return y;
}

/// Appends the legend, flowed left to right and wrapped at `width`, from `y`; returns the y
/// below it.
inline double draw_legend(std::string& head, const chart_extent& e, double width, double y) {
    double lx = 12;
    auto legend_item = [&](const std::vector<std::string>& fills, std::string_view label,
                           bool tick) {
        const double w = 14.0 * static_cast<double>(fills.size()) + 6 + text_width(label, 12, 0.62);
        if (lx + w > width - 12 && lx > 12) {
            lx = 12;
            y += 18;
        }
        for (const auto& f : fills) {
            if (tick)
                head += "<rect x=\"" + svg_number(lx + 5) + "\" y=\"" + svg_number(y) +
                        "\" width=\"2\" height=\"12\" fill=\"" + f + "\"/>";
            else
                head += "<rect x=\"" + svg_number(lx) + "\" y=\"" + svg_number(y) +
                        "\" width=\"12\" height=\"12\" fill=\"" + f + "\"/>";
            lx += 14;
        }
        head += "<text class=\"lg\" x=\"" + svg_number(lx + 2) + "\" y=\"" + svg_number(y + 10.5) +
                "\">";
        append_xml_escaped(head, label);
        head += "</text>\n";
        lx += 6 + text_width(label, 12, 0.62) + 14;
    };
    for (int k = 0; k < 10; ++k) {
        if (!e.kinds_used[static_cast<std::size_t>(k)]) continue;
        const auto kind = k < 5    ? static_cast<action_kind>(k)
                          : k == 5 ? action_kind::send_f
                          : k == 6 ? action_kind::recv_f
                          : k == 7 ? action_kind::unshard
                          : k == 8 ? action_kind::reshard
                                   : action_kind::reduce_grad;
        legend_item({hex(kind_color(kind))}, kind_name(kind), k == 5);
    }
    if (e.max_chunks > 1) {
        std::vector<std::string> fills;
        const int shown = std::min(e.max_chunks, 8);
        for (int c = 0; c < shown; ++c)
            fills.push_back(
                hex(chunk_color(action_kind::forward,
                                c * (e.max_chunks - 1) / std::max(shown - 1, 1), e.max_chunks)));
        legend_item(fills, "stage chunk 0 \u2192 " + std::to_string(e.max_chunks - 1) + " (shade)",
                    false);
    }
    legend_item({"#ececec"}, "idle", false);
    return y + 12 + 14;
}

/// The times of the axis ticks: a tick at least every 60 px, and never more than
/// max_svg_ticks of them. The count is computed, not looped on (a time scale near 1e300 adds
/// nothing to t += step).
[[nodiscard]] inline std::vector<double> time_ticks(double span, double u) {
    std::vector<double> ticks;
    double step = nice_step(60 / u);
    if (span / step > static_cast<double>(max_svg_ticks))
        step = nice_step(span / static_cast<double>(max_svg_ticks));
    const auto tick_count = static_cast<std::size_t>(std::floor(span / step + 1e-9)) + 1;
    for (std::size_t i = 0; i < tick_count && i <= max_svg_ticks; ++i)
        ticks.push_back(static_cast<double>(i) * step);
    return ticks;
}

/// Appends the boxes (and labels) of the actions of `c` that ran, its ranks' rows starting at
/// `y`, `row` apart. Receives first: a receive's bar spans its wait, and the sends drawn after
/// stay on top.
inline void draw_actions(svg_layers& out, const chart& c, const svg_options& opts,
                         const svg_layout& L, double y, double row) {
    const double x0 = L.left, u = L.px_per_unit;
    const int chunks = std::max(c.cfg.stages_per_rank, 1);
    for (const int pass : {0, 1}) {
        for (const timed_action& t : c.sim.timeline) {
            if (!t.ran || t.rank < 0 || t.rank >= c.cfg.ranks) continue;
            if ((pass == 0) != is_recv(t.act.kind())) continue;
            const double ry = y + t.rank * row;
            const bool compute = t.on == stream::compute;
            double x = x0 + t.start * u, w = (t.end - t.start) * u;
            double by = ry, bh = L.lane;
            if (!compute) {
                // The thin lane: sends and receives on its upper half, FSDP on the lower.
                bh = L.comm / 2;
                by = ry + L.lane + 1 + (t.on == stream::p2p ? 0 : bh);
            }
            if (w < 1) {
                x -= (is_send(t.act.kind()) ? 1 : (1 - w) / 2);
                w = is_send(t.act.kind()) ? 2 : 1;
            }
            const int chunk = std::clamp(c.cfg.local_stage_index(t.act.stage()), 0, chunks - 1);
            const rgb fill =
                compute ? chunk_color(t.act.kind(), chunk, chunks) : kind_color(t.act.kind());
            out.boxes += "<rect class=\"act\" x=\"" + svg_number(x) + "\" y=\"" + svg_number(by) +
                         "\" width=\"" + svg_number(w) + "\" height=\"" + svg_number(bh) +
                         "\" fill=\"" + hex(fill) + "\"><title>";
            append_xml_escaped(out.boxes, hover_text(t, c.cfg));
            out.boxes += "</title></rect>\n";
            if (!compute || !opts.labels || L.lane < 12) continue;
            const std::string label = box_label(t.act);
            if (label.empty() || text_width(label, 11) + 3 > w) continue;
            out.labels += std::string("<text class=\"") + (is_dark(fill) ? "mb w" : "mb") +
                          "\" x=\"" + svg_number(x + w / 2) + "\" y=\"" +
                          svg_number(ry + L.lane / 2 + 4) + "\">" + label + "</text>\n";
        }
    }
}

/// A stacked panel's heading: the schedule, its stages per rank and its numbers.
[[nodiscard]] inline std::string panel_heading(const chart& c) {
    return c.name + (c.name.empty() ? "" : " ") + "(V=" + std::to_string(c.cfg.stages_per_rank) +
           (c.sim.lowered ? ", lowered" : "") + "): " + chart_stats(c);
}

/// Appends the panel of chart `c` (number `index`) with its top at `y`: its heading when
/// stacked, each rank's label, idle lanes and peak memory, the actions, the makespan mark and
/// its memory chart. Returns the y below it.
inline double draw_panel(svg_layers& out, const chart& c, std::size_t index,
                         const svg_options& opts, const svg_layout& L, double plot, bool stacked,
                         double y) {
    const simulation& sim = c.sim;
    const double x0 = L.left, u = L.px_per_unit;
    const bool comm = has_comm_lane(sim);
    const double row = L.lane + (comm ? L.comm + 1 : 0) + L.gap;
    if (stacked) {
        out.body += "<text class=\"ph\" x=\"12\" y=\"" + svg_number(y + 15) + "\">";
        append_xml_escaped(out.body, panel_heading(c));
        out.body += "</text>\n";
        // The heading on a line of its own, above the "peak mem." column's label.
        y += L.heading + 10;
    }
    out.body += "<text class=\"pk\" x=\"" + svg_number(x0 + plot + 8) + "\" y=\"" +
                svg_number(y - 3) + "\">peak mem.</text>\n";
    const double panel_top = y;
    for (int r = 0; r < c.cfg.ranks; ++r) {
        const double ry = y + r * row;
        out.body += "<text class=\"rk\" x=\"" + svg_number(x0 - 8) + "\" y=\"" +
                    svg_number(ry + L.lane / 2 + 4) + "\">rank " + std::to_string(r) + "</text>\n";
        out.bg += "<rect x=\"" + svg_number(x0) + "\" y=\"" + svg_number(ry) + "\" width=\"" +
                  svg_number(sim.makespan * u) + "\" height=\"" + svg_number(L.lane) +
                  "\" fill=\"#ececec\"/>\n";
        if (comm)
            out.bg += "<rect x=\"" + svg_number(x0) + "\" y=\"" + svg_number(ry + L.lane + 1) +
                      "\" width=\"" + svg_number(sim.makespan * u) + "\" height=\"" +
                      svg_number(L.comm) + "\" fill=\"#f5f5f5\"/>\n";
        if (static_cast<std::size_t>(r) < sim.ranks.size())
            out.body += "<text class=\"pk\" x=\"" + svg_number(x0 + plot + 8) + "\" y=\"" +
                        svg_number(ry + L.lane / 2 + 4) + "\">" +
                        general_number(sim.ranks[static_cast<std::size_t>(r)].peak_memory) +
                        "</text>\n";
    }
    const double panel_bottom = y + c.cfg.ranks * row - L.gap;
    draw_actions(out, c, opts, L, y, row);
    // The makespan, dashed, so stacked panels compare at a glance.
    out.grid += "<line class=\"ms\" x1=\"" + svg_number(x0 + sim.makespan * u) + "\" y1=\"" +
                svg_number(panel_top - 4) + "\" x2=\"" + svg_number(x0 + sim.makespan * u) +
                "\" y2=\"" + svg_number(panel_bottom + 4) + "\"/>\n";
    y = panel_bottom + (stacked ? L.panel_gap : 0);
    if (index < opts.memory.size() && !opts.memory[index].empty())
        y = memory_chart(out.body, c, opts.memory[index], opts, L, y + (stacked ? 12 : 24), plot);
    return y;
}

/// The time axis along `bottom`: its line, a tick and a time per tick, and its name.
[[nodiscard]] inline std::string draw_axis(std::span<const chart> charts,
                                           const std::vector<double>& ticks, const svg_layout& L,
                                           double plot, double bottom) {
    const double x0 = L.left, u = L.px_per_unit;
    std::string axis = "<line class=\"ax\" x1=\"" + svg_number(x0) + "\" y1=\"" +
                       svg_number(bottom) + "\" x2=\"" + svg_number(x0 + plot) + "\" y2=\"" +
                       svg_number(bottom) + "\"/>\n";
    for (const double t : ticks)
        axis += "<line class=\"ax\" x1=\"" + svg_number(x0 + t * u) + "\" y1=\"" +
                svg_number(bottom) + "\" x2=\"" + svg_number(x0 + t * u) + "\" y2=\"" +
                svg_number(bottom + 4) + "\"/><text class=\"tk\" x=\"" + svg_number(x0 + t * u) +
                "\" y=\"" + svg_number(bottom + 16) + "\">" + general_number(t) + "</text>\n";
    const bool all_steps = !charts.empty() && std::all_of(charts.begin(), charts.end(),
                                                          [](const chart& c) { return c.steps; });
    axis += "<text class=\"rk\" x=\"" + svg_number(x0 - 8) + "\" y=\"" + svg_number(bottom + 16) +
            "\">" + (all_steps ? "step" : "time") + "</text>\n";
    return axis;
}

/// The SVG document: its size, title and style sheet around the layers and the axis.
[[nodiscard]] inline std::string svg_document(double width, double height, const std::string& title,
                                              const svg_options& opts, double u,
                                              const svg_layers& layers, const std::string& axis) {
    std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                      svg_number(width) + "\" height=\"" + svg_number(height) +
                      "\" viewBox=\"0 0 " + svg_number(width) + " " + svg_number(height) +
                      "\">\n<title>";
    append_xml_escaped(out, title);
    out += "</title>\n<style>\n"
           "text{font-family:'DejaVu Sans',Verdana,Arial,sans-serif;fill:#222}\n"
           ".t1{font-size:16px;font-weight:bold}.t2{font-size:12px;fill:#444}"
           ".ph{font-size:13px;font-weight:bold}.lg{font-size:12px}"
           ".rk{font-size:12px;text-anchor:end;fill:#333}.pk{font-size:11px;fill:#555}"
           ".tk{font-size:11px;fill:#555;text-anchor:middle}"
           ".mb{font-size:11px;text-anchor:middle;fill:#222}.mb.w{fill:#fff}\n"
           ".gr{stroke:#d6d6d6;stroke-width:1}.ax{stroke:#555;stroke-width:1}"
           ".ms{stroke:#b03a2e;stroke-width:1.5;stroke-dasharray:4 3}\n";
    if (std::any_of(opts.memory.begin(), opts.memory.end(),
                    [](const memory_curves& m) { return !m.empty(); }))
        out += ".mem{fill:none;stroke-width:1.5}.lim{stroke:#c0392b;stroke-width:1.5;"
               "stroke-dasharray:6 4}.lm{font-size:11px;fill:#c0392b;text-anchor:end}\n";
    // Thin white outlines separate neighbouring boxes; on narrow boxes they would hide them.
    out += u >= 6 ? ".act{stroke:#fff;stroke-width:0.6}\n" : ".act{stroke:none}\n";
    out += "</style>\n<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
    out += layers.head;
    out += layers.bg;
    out += layers.grid;
    out += layers.boxes;
    out += layers.labels;
    out += layers.body;
    out += axis;
    out += "</svg>\n";
    return out;
}

/// Writes the chart(s): `stacked` adds a heading per panel and a common title.
[[nodiscard]] inline std::string write_svg_charts(std::span<const chart> charts,
                                                  const svg_options& opts, bool stacked) {
    const chart_extent e = measure_charts(charts);
    const svg_layout L = layout_for(e, opts);
    const double plot = e.span * L.px_per_unit;

    std::string title = !opts.title.empty() ? opts.title
                        : stacked ? std::to_string(charts.size()) + " schedules on one time axis"
                        : charts.empty() ? std::string("pipeline")
                                         : chart_title(charts[0]);
    // A title as long as a book would set the picture's width: cut to 200 bytes (whole UTF-8
    // characters) and marked.
    if (title.size() > 200) {
        std::size_t cut = 200;
        while (cut > 0 && (static_cast<unsigned char>(title[cut]) & 0xC0) == 0x80) --cut;
        title = title.substr(0, cut) + "\xE2\x80\xA6"; // U+2026
    }
    std::vector<std::string> sub;
    if (!stacked && !charts.empty()) {
        sub.push_back(chart_stats(charts[0]));
        if (!charts[0].note.empty()) sub.push_back(charts[0].note);
    } else if (!opts.subtitle.empty()) {
        sub.push_back(opts.subtitle);
    }
    double width = L.left + plot + L.right;
    width = std::max(width, 24 + text_width(title, 16) * 1.05);
    for (const auto& s : sub) width = std::max(width, 24 + text_width(s, 12));
    if (stacked) // each panel's heading, bold
        for (const chart& c : charts)
            width = std::max(width, 24 + text_width(panel_heading(c), 13) * 1.05);
    width = std::max(width, 480.0);

    svg_layers layers;
    double y = draw_title_block(layers.head, title, sub, 26);
    y = draw_legend(layers.head, e, width, y + 14);

    const std::vector<double> ticks = time_ticks(e.span, L.px_per_unit);
    const double top = y;
    for (std::size_t i = 0; i < charts.size(); ++i)
        y = draw_panel(layers, charts[i], i, opts, L, plot, stacked, y);
    const double bottom = y + 4;
    for (const double t : ticks)
        layers.grid += "<line class=\"gr\" x1=\"" + svg_number(L.left + t * L.px_per_unit) +
                       "\" y1=\"" + svg_number(top - 4) + "\" x2=\"" +
                       svg_number(L.left + t * L.px_per_unit) + "\" y2=\"" + svg_number(bottom) +
                       "\"/>\n";
    const std::string axis = draw_axis(charts, ticks, L, plot, bottom);
    return svg_document(width, bottom + 28, title, opts, L.px_per_unit, layers, axis);
}

} // namespace ppsched::detail::svg

namespace ppsched::io {

/// A self-contained SVG Gantt chart of one timeline: one row per rank, each action a box from its
/// start to its end (`<rect class="act">`, one per action that ran), coloured by kind (F, I, W,
/// B, OVERLAP_F_B) with a lighter shade for each later stage chunk on the rank, labelled with its
/// microbatch when the box is wide enough, with a `<title>` hover text (action, stage, chunk,
/// microbatch, rank, start, end). Idle time is the grey lane behind the boxes. With
/// communication or FSDP actions (a lowered order) each rank gets a thin lane under its compute
/// lane: sends and receives (a receive spans from when it is posted to when its data arrives)
/// on its upper half, UNSHARD, RESHARD and REDUCE_GRAD on its lower half. The title gives the
/// configuration, makespan, ideal time, bubble ratio and idle share; a column on the right gives
/// each rank's peak memory; a dashed line marks the makespan. All text is XML-escaped.
/// Complexity: linear in the actions.
[[nodiscard]] inline std::string write_svg(const chart& c, const svg_options& opts = {}) {
    return ppsched::detail::svg::write_svg_charts(std::span<const chart>(&c, 1), opts, false);
}

/// Several timelines stacked on one shared time axis (the same pixels per unit), each with a
/// heading (name, stages per rank, makespan, bubble), so their makespans compare at a glance:
/// `ppsched compare --output`. Otherwise drawn as the single chart is.
[[nodiscard]] inline std::string write_svg(std::span<const chart> charts,
                                           const svg_options& opts = {}) {
    return ppsched::detail::svg::write_svg_charts(charts, opts, true);
}

} // namespace ppsched::io
