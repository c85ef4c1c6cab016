#pragma once
/// \file io/html_report.hpp
/// An interactive report of one or more simulated schedules as ONE self-contained HTML file:
/// every rank's timeline on a canvas (compute lane, and a thin lane for sends, receives and FSDP
/// actions) with zoom, pan and level-of-detail drawing, a tooltip per action (what it waited
/// for and how long), dependencies and the critical path on a click, each rank's activation
/// memory over time (with a limit line), a sortable summary table, problems (a deadlock's
/// waiting ranks, an invalid action, validation messages) drawn on the picture, and several
/// schedules stacked on one time axis. The page needs no network: its script and style are
/// inline (hand-written, `io/detail/html_report_assets.hpp`) and the data are packed as base64
/// columns. Standard library only; text out, so the caller decides where it goes.

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/config.hpp"
#include "ppsched/cost_model.hpp"
#include "ppsched/error.hpp"
#include "ppsched/io/detail/html_report_assets.hpp"
#include "ppsched/io/detail/json_text.hpp"
#include "ppsched/io/detail/number_text.hpp"
#include "ppsched/io/detail/xml_text.hpp"
#include "ppsched/simulation.hpp"

namespace ppsched::io {

/// A problem to show on a report's picture, e.g. one of `validate`'s violations.
struct report_problem {
    int rank = -1;       ///< the rank it is on (-1: the whole order)
    int step = -1;       ///< the slot index in the rank's row (-1: none)
    std::string message; ///< what is wrong, one line
};

/// One schedule of a report.
struct report_schedule {
    std::string name; ///< what it shows, e.g. `ZBVZeroBubble`
    config cfg;       ///< its configuration
    /// Its simulation, with the timeline (`simulate_options::timeline`). A deadlock or an
    /// invalid action is shown on the picture (the waiting ranks, the failing step).
    simulation sim;
    cost_model costs;   ///< the costs it was simulated with (activation memory per stage)
    bool steps = false; ///< the time axis counts steps of a layout, not cost units
    std::string note;   ///< a line under its heading (the costs, say)
    /// A lower bound on the makespan when the order came from an auto-scheduler (`tune`): the
    /// report then shows the bound and the gap `(makespan - bound) / bound`.
    std::optional<double> lower_bound;
    std::vector<report_problem> problems; ///< more problems to show (e.g. from `validate`)
};

/// How `write_html_report` writes.
struct report_options {
    std::string title; ///< the page title; empty: made from the schedules
    /// Peak memory a rank may hold, parameters + activations (as `rank_summary::peak_memory`):
    /// drawn on the activation charts less each rank's parameters, when given.
    std::optional<double> memory_limit;
};

} // namespace ppsched::io

namespace ppsched::detail::html {

/// The shortest text that reads back to the same double (JSON and JavaScript read it exactly).
using ppsched::detail::text::shortest_number;

/// Appends `s` as a JSON string literal that is also safe inside an HTML `<script>`: `<`, `>`
/// and `&` are escaped, so no text can close the element.
inline void append_json_string(std::string& out, std::string_view s) {
    ppsched::detail::text::append_json_string(out, s, true);
}

/// Appends the base64 encoding of `bytes`.
inline void append_base64(std::string& out, std::span<const std::uint8_t> bytes) {
    constexpr char table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    out.reserve(out.size() + (bytes.size() + 2) / 3 * 4);
    std::size_t i = 0;
    for (; i + 3 <= bytes.size(); i += 3) {
        const std::uint32_t v = (std::uint32_t{bytes[i]} << 16) |
                                (std::uint32_t{bytes[i + 1]} << 8) | std::uint32_t{bytes[i + 2]};
        out += table[(v >> 18) & 63];
        out += table[(v >> 12) & 63];
        out += table[(v >> 6) & 63];
        out += table[v & 63];
    }
    const std::size_t rest = bytes.size() - i;
    if (rest > 0) {
        std::uint32_t v = std::uint32_t{bytes[i]} << 16;
        if (rest == 2) v |= std::uint32_t{bytes[i + 1]} << 8;
        out += table[(v >> 18) & 63];
        out += table[(v >> 12) & 63];
        out += rest == 2 ? table[(v >> 6) & 63] : '=';
        out += '=';
    }
}

/// A column of unsigned integers, packed little-endian in the narrowest of 1, 2 or 4 bytes that
/// holds its largest value: the page reads it as a `Uint8Array`, `Uint16Array` or
/// `Uint32Array`. Appends `["u8", "base64..."]`.
inline void append_column(std::string& out, std::span<const std::uint32_t> values) {
    std::uint32_t top = 0;
    for (const std::uint32_t v : values) top = std::max(top, v);
    const std::size_t width = top < 0x100 ? 1 : top < 0x10000 ? 2 : 4;
    std::vector<std::uint8_t> bytes(values.size() * width);
    for (std::size_t i = 0; i < values.size(); ++i)
        for (std::size_t b = 0; b < width; ++b)
            bytes[i * width + b] = static_cast<std::uint8_t>(values[i] >> (8 * b));
    out += width == 1 ? "[\"u8\",\"" : width == 2 ? "[\"u16\",\"" : "[\"u32\",\"";
    append_base64(out, bytes);
    out += "\"]";
}

/// Appends doubles as base64 of their little-endian IEEE-754 bytes (a `Float64Array`).
inline void append_doubles(std::string& out, std::span<const double> values) {
    std::vector<std::uint8_t> bytes(values.size() * 8);
    for (std::size_t i = 0; i < values.size(); ++i) {
        const auto bits = std::bit_cast<std::uint64_t>(values[i]);
        for (std::size_t b = 0; b < 8; ++b)
            bytes[i * 8 + b] = static_cast<std::uint8_t>(bits >> (8 * b));
    }
    out += '"';
    append_base64(out, bytes);
    out += '"';
}

template <class T, class F>
void append_array(std::string& out, const std::vector<T>& items, F&& each) {
    out += '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += ',';
        each(items[i]);
    }
    out += ']';
}

/// A name for a problem message: `0F1` and friends.
[[nodiscard]] inline std::string name_of(const action& a) { return to_string(a); }

/// The actions of a schedule as columns (see `append_schedule`), with the table of distinct
/// times the columns `t0` and `t1` index.
struct action_columns {
    std::vector<double> times;                                // distinct starts and ends, sorted
    std::vector<std::uint32_t> kind, stage, mb, slot, t0, t1; // per action
    std::vector<std::uint32_t> kind2, stage2, mb2;            // the backward part of OVERLAP_F_B
    bool overlap = false;                                     // some action is an OVERLAP_F_B
    std::vector<std::uint32_t> rank_start;                    // rank r's actions from here
};

/// The columns of the actions of `sim` that ran (all of them, one unit per slot, `by_step`).
[[nodiscard]] inline action_columns columns_of(const simulation& sim, const config& cfg,
                                               bool by_step) {
    auto start_of = [by_step](const timed_action& t) { return by_step ? t.slot : t.start; };
    auto end_of = [by_step](const timed_action& t) { return by_step ? t.slot + 1.0 : t.end; };
    std::vector<const timed_action*> ran;
    ran.reserve(sim.timeline.size());
    for (const timed_action& t : sim.timeline)
        if ((t.ran || by_step) && t.rank >= 0 && t.rank < cfg.ranks) ran.push_back(&t);
    action_columns c;
    c.times.reserve(ran.size() * 2);
    for (const timed_action* t : ran) {
        c.times.push_back(start_of(*t));
        c.times.push_back(end_of(*t));
    }
    std::sort(c.times.begin(), c.times.end());
    c.times.erase(std::unique(c.times.begin(), c.times.end()), c.times.end());
    auto time_index = [&c](double v) {
        return static_cast<std::uint32_t>(std::lower_bound(c.times.begin(), c.times.end(), v) -
                                          c.times.begin());
    };
    const std::size_t n = ran.size();
    for (auto* col : {&c.kind, &c.stage, &c.mb, &c.slot, &c.t0, &c.t1}) col->assign(n, 0);
    c.rank_start.assign(static_cast<std::size_t>(cfg.ranks) + 1, 0);
    for (std::size_t i = 0; i < n; ++i) {
        const timed_action& t = *ran[i];
        const action a = t.act.is_overlap() ? t.act.forward_part() : t.act;
        c.kind[i] = static_cast<std::uint32_t>(t.act.kind());
        c.stage[i] = static_cast<std::uint32_t>(a.stage());
        c.mb[i] = a.has_microbatch() ? static_cast<std::uint32_t>(a.microbatch()) : 0;
        c.slot[i] = static_cast<std::uint32_t>(t.slot);
        c.t0[i] = time_index(start_of(t));
        c.t1[i] = time_index(end_of(t));
        ++c.rank_start[static_cast<std::size_t>(t.rank) + 1];
        c.overlap |= t.act.is_overlap();
    }
    if (c.overlap) {
        for (auto* col : {&c.kind2, &c.stage2, &c.mb2}) col->assign(n, 0);
        for (std::size_t i = 0; i < n; ++i) {
            if (!ran[i]->act.is_overlap()) continue;
            const action b = ran[i]->act.backward_part();
            c.kind2[i] = static_cast<std::uint32_t>(b.kind());
            c.stage2[i] = static_cast<std::uint32_t>(b.stage());
            c.mb2[i] = static_cast<std::uint32_t>(b.microbatch());
        }
    }
    for (std::size_t r = 1; r < c.rank_start.size(); ++r) c.rank_start[r] += c.rank_start[r - 1];
    return c;
}

/// Appends the schedule's name, configuration, status and summary numbers.
inline void append_schedule_summary(std::string& out, const io::report_schedule& s, bool by_step,
                                    double extent) {
    const simulation& sim = s.sim;
    const config& cfg = s.cfg;
    out += "{\"name\":";
    append_json_string(out, s.name.empty() ? std::string("pipeline") : s.name);
    out += ",\"note\":";
    append_json_string(out, s.note);
    out += ",\"ranks\":" + std::to_string(cfg.ranks) +
           ",\"stagesPerRank\":" + std::to_string(cfg.stages_per_rank) +
           ",\"microbatches\":" + std::to_string(cfg.microbatches) + ",\"placement\":";
    append_json_string(out, to_string_view(cfg.placement));
    out += std::string(",\"steps\":") + (s.steps || by_step ? "true" : "false") +
           ",\"extent\":" + shortest_number(extent) +
           ",\"lowered\":" + (sim.lowered ? "true" : "false") + ",\"status\":\"" +
           // An order that runs but fails validation (a dropped action) is not "ok".
           (sim.status == simulation_status::ok ? (s.problems.empty() ? "ok" : "fails validation")
            : sim.status == simulation_status::deadlock ? "deadlock"
                                                        : "invalid") +
           "\"";
    out += ",\"makespan\":" + shortest_number(sim.makespan) +
           ",\"ideal\":" + shortest_number(sim.ideal) +
           ",\"totalCompute\":" + shortest_number(sim.total_compute) +
           ",\"bubbleFraction\":" + shortest_number(sim.bubble_fraction) +
           ",\"bubbleRatio\":" + shortest_number(sim.bubble_ratio) + ",\"lowerBound\":" +
           (s.lower_bound ? shortest_number(*s.lower_bound) : std::string("null")) +
           ",\"message\":" + shortest_number(s.costs.message_time()) +
           ",\"freesByI\":" + shortest_number(s.costs.input_grad_frees);
}

/// Appends per stage its rank, neighbours, chunk and activation memory (the page recomputes
/// dependencies and memory from these instead of carrying them per action), then each rank's
/// summary.
inline void append_stages_and_ranks(std::string& out, const io::report_schedule& s) {
    const config& cfg = s.cfg;
    const int stages = cfg.num_stages();
    std::vector<int> idx(static_cast<std::size_t>(stages));
    for (int i = 0; i < stages; ++i) idx[static_cast<std::size_t>(i)] = i;
    auto stage_ints = [&](const char* key, auto f) {
        out += std::string(",\"") + key + "\":";
        append_array(out, idx, [&](int st) { out += std::to_string(f(st)); });
    };
    stage_ints("stageRank", [&](int st) { return cfg.stage_to_rank(st); });
    stage_ints("stagePrev", [&](int st) { return cfg.previous_stage(st); });
    stage_ints("stageNext", [&](int st) { return cfg.next_stage(st); });
    stage_ints("stageChunk", [&](int st) { return cfg.local_stage_index(st); });
    out += ",\"stageActivation\":";
    append_array(out, idx, [&](int st) { out += shortest_number(s.costs.at(st).activation); });
    out += ",\"rankSummary\":";
    append_array(out, s.sim.ranks, [&](const rank_summary& r) {
        out += "{\"rank\":" + std::to_string(r.rank) + ",\"busy\":" + shortest_number(r.busy) +
               ",\"idle\":" + shortest_number(r.idle) +
               ",\"bubble_fraction\":" + shortest_number(r.bubble_fraction) +
               ",\"comm_busy\":" + shortest_number(r.comm_busy) +
               ",\"end\":" + shortest_number(r.end) +
               ",\"peak_activations\":" + shortest_number(r.peak_activations) +
               ",\"peak_activations_at\":" + shortest_number(r.peak_activations_at) +
               ",\"peak_memory\":" + shortest_number(r.peak_memory) + "}";
    });
}

/// Appends the problems: the simulation's own (the waiting ranks of a deadlock, an invalid
/// action), then the caller's, each where to draw it.
inline void append_problems(std::string& out, const io::report_schedule& s, bool by_step) {
    const simulation& sim = s.sim;
    std::vector<io::report_problem> problems;
    for (const stuck_rank& st : sim.stuck)
        problems.push_back({st.rank, st.slot,
                            "deadlock: rank " + std::to_string(st.rank) + " waits at step " +
                                std::to_string(st.slot) + " (" + name_of(st.at) + ") for " +
                                name_of(st.waiting_for) + " on rank " +
                                std::to_string(st.waiting_rank)});
    if (sim.status == simulation_status::invalid)
        problems.push_back({sim.problem.rank, sim.problem.slot,
                            "cannot run: rank " + std::to_string(sim.problem.rank) + " step " +
                                std::to_string(sim.problem.slot) + " (" + name_of(sim.problem.at) +
                                "): " + sim.problem.what});
    problems.insert(problems.end(), s.problems.begin(), s.problems.end());
    out += ",\"problems\":";
    append_array(out, problems, [&](const io::report_problem& p) {
        // Where to draw it: the end of the rank's last action that ran (a stuck rank stops
        // there).
        double at = 0;
        if (p.rank >= 0 && static_cast<std::size_t>(p.rank) < sim.ranks.size())
            at = sim.ranks[static_cast<std::size_t>(p.rank)].end;
        if (by_step && p.step >= 0) at = p.step + 1.0; // just after the failing step's box
        out += "{\"rank\":" + std::to_string(p.rank) + ",\"step\":" + std::to_string(p.step) +
               ",\"time\":" + shortest_number(at) + ",\"message\":";
        append_json_string(out, p.message);
        out += '}';
    });
}

/// Appends the action columns: their count, each rank's first, the times, then one packed
/// column per field (`append_column`), the overlap's backward parts only when there are any.
inline void append_action_columns(std::string& out, const action_columns& c) {
    out += ",\"count\":" + std::to_string(c.kind.size()) + ",\"rankStart\":";
    append_array(out, c.rank_start, [&](std::uint32_t v) { out += std::to_string(v); });
    out += ",\"times\":";
    append_doubles(out, c.times);
    const std::pair<const char*, const std::vector<std::uint32_t>*> columns[] = {
        {"kind", &c.kind},   {"stage", &c.stage},   {"mb", &c.mb},
        {"slot", &c.slot},   {"t0", &c.t0},         {"t1", &c.t1},
        {"kind2", &c.kind2}, {"stage2", &c.stage2}, {"mb2", &c.mb2}};
    out += ",\"cols\":{";
    for (std::size_t i = 0; i < (c.overlap ? 9u : 6u); ++i) {
        if (i) out += ',';
        out += '"';
        out += columns[i].first;
        out += "\":";
        append_column(out, *columns[i].second);
    }
    out += '}';
}

/// One schedule as a JSON object (see the script's `loadSchedule` for the reader).
/// Actions are columns in timeline order (by rank, then the rank's order): kind, stage,
/// microbatch, slot, and start and end as indices into a table of the distinct times, which
/// keeps a large order small (a few thousand distinct times for 10^6 actions under simple
/// costs). Complexity: O(actions log actions) (the time table is sorted).
inline void append_schedule(std::string& out, const io::report_schedule& s) {
    // An order the simulator refused runs no action; it is then drawn one unit per step (its
    // slot), so that the failing step shows where it is in the rank's row.
    const bool by_step = s.sim.status == simulation_status::invalid;
    const action_columns c = columns_of(s.sim, s.cfg, by_step);
    append_schedule_summary(out, s, by_step, c.times.empty() ? 0.0 : c.times.back());
    append_stages_and_ranks(out, s);
    append_problems(out, s, by_step);
    append_action_columns(out, c);
    out += '}';
}

/// Appends `text` with the HTML special characters escaped (as XML escapes them, which HTML
/// reads the same).
inline void append_html_escaped(std::string& out, std::string_view text) {
    ppsched::detail::text::append_xml_escaped(out, text);
}

} // namespace ppsched::detail::html

namespace ppsched::io {

/// Writes an interactive HTML report of `schedules` (stacked on one shared time axis, in the
/// given order). The page has: a timeline per schedule (one row per rank: compute lane and,
/// for lowered orders, a thin lane of sends, receives and FSDP actions) drawn on a canvas with
/// wheel zoom, drag pan and level-of-detail (boxes narrower than a pixel merge); a tooltip per
/// action (action, stage, microbatch, step, start, end, what it waited for and how long); a
/// click highlights the action's dependencies and its critical path (the chain of actions that
/// decided its start), and a button shows the critical path of the whole step; each rank's
/// activation memory over time (with `opts.memory_limit` drawn); a sortable summary table
/// (makespan, ideal, bubble, bound and gap, and busy, idle, bubble and peak memory per rank);
/// problems in red (a deadlock's waiting ranks, an invalid action, `report_schedule::problems`).
/// Self-contained: no network at view time, opens from `file://`. The page exposes
/// `window.ppsched` (its data and a few queries) for tests. Complexity: O(actions log actions);
/// the file takes about 14 bytes per action (base64 of 1-4 byte columns; 10.6 MB for 787k).
[[nodiscard]] inline std::string write_html_report(std::span<const report_schedule> schedules,
                                                   const report_options& opts = {}) {
    namespace h = ppsched::detail::html;
    std::string title = opts.title;
    if (title.empty()) {
        if (schedules.size() == 1) {
            const config& c = schedules[0].cfg;
            using ppsched::detail::counted;
            title = (schedules[0].name.empty() ? std::string("pipeline") : schedules[0].name) +
                    ": " + counted(c.ranks, "rank", "ranks") + ", " +
                    counted(c.stages_per_rank, "stage", "stages") + " per rank, " +
                    counted(c.microbatches, "microbatch", "microbatches");
        } else {
            title = std::to_string(schedules.size()) + " schedules on one time axis";
        }
    }
    std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                      "<title>";
    h::append_html_escaped(out, title);
    out += "</title>\n<style>\n";
    out += h::style;
    out += "</style>\n</head>\n<body>\n<header><h1 id=\"title\">";
    h::append_html_escaped(out, title);
    out += "</h1></header>\n";
    out += h::body;
    out += "<script id=\"ppsched-data\" type=\"application/json\">{\"title\":";
    h::append_json_string(out, title);
    out += ",\"memoryLimit\":";
    out += opts.memory_limit ? h::shortest_number(*opts.memory_limit) : std::string("null");
    out += ",\"schedules\":[";
    for (std::size_t i = 0; i < schedules.size(); ++i) {
        if (i) out += ",\n";
        h::append_schedule(out, schedules[i]);
    }
    out += "]}</script>\n<script>\n";
    out += h::script_model;
    out += h::script_view;
    out += "</script>\n</body>\n</html>\n";
    return out;
}

/// One schedule's report (see the span overload).
[[nodiscard]] inline std::string write_html_report(const report_schedule& schedule,
                                                   const report_options& opts = {}) {
    return write_html_report(std::span<const report_schedule>(&schedule, 1), opts);
}

} // namespace ppsched::io
