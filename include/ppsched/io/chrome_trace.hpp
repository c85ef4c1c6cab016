#pragma once
/// \file io/chrome_trace.hpp
/// A simulated timeline in the Chrome trace event format (JSON; opens in Perfetto's UI and in
/// chrome://tracing): a process per rank with a compute thread and a communication thread, a
/// complete event per action with its simulated start and duration, and flow arrows from each
/// send to its receive. Standard library only; text out.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ppsched/action.hpp"
#include "ppsched/algorithms/detail/action_table.hpp"
#include "ppsched/config.hpp"
#include "ppsched/error.hpp"
#include "ppsched/io/detail/json_text.hpp"
#include "ppsched/io/detail/number_text.hpp"
#include "ppsched/simulation.hpp"

namespace ppsched::io {

/// How `write_chrome_trace` writes.
struct trace_options {
    /// Trace microseconds per simulated time unit (the trace format counts in microseconds);
    /// the default shows one unit as one millisecond.
    double microseconds_per_unit = 1000;
    std::string name; ///< written to `otherData.name` (the schedule, say); may be empty
};

} // namespace ppsched::io

namespace ppsched::detail::trace {

// Appends a number in the shortest form that reads back to the same double.
inline void append_trace_number(std::string& out, double v) {
    // JSON has no inf or nan (docs/design.md, "Bounded resources": every number that reaches
    // an output is finite); the text is built whole, so nothing partial is written.
    PPSCHED_EXPECTS(std::isfinite(v), "ppsched::io::write_chrome_trace: a time is not a finite "
                                      "number (check the costs and microseconds_per_unit)");
    ppsched::detail::text::append_shortest_number(out, v);
}

// The kind as the trace's `args.kind`.
[[nodiscard]] inline std::string_view trace_kind(action_kind k) noexcept {
    switch (k) {
    case action_kind::forward:
        return "forward";
    case action_kind::backward_input:
        return "backward_input";
    case action_kind::backward_weight:
        return "backward_weight";
    case action_kind::full_backward:
        return "full_backward";
    case action_kind::overlap_f_b:
        return "overlap_f_b";
    case action_kind::unshard:
        return "unshard";
    case action_kind::reshard:
        return "reshard";
    case action_kind::send_f:
        return "send_f";
    case action_kind::recv_f:
        return "recv_f";
    case action_kind::send_b:
        return "send_b";
    case action_kind::recv_b:
        return "recv_b";
    default:
        return "reduce_grad";
    }
}

// Where an event sits: compute slices on thread 0 (category "compute"), FSDP and point-to-point
// slices on thread 1 ("fsdp", "p2p"). Chrome's viewer binds a flow event to the slice with the
// same category, process, thread and timestamp, so flows use their slices' category.
[[nodiscard]] inline std::string_view trace_category(action_kind k) noexcept {
    return is_compute(k) ? "compute" : is_p2p(k) ? "p2p" : "fsdp";
}

/// When an action's event starts: a receive is shown when its data arrives (it is an instant:
/// waiting is not work), everything else at its start.
[[nodiscard]] inline double trace_start(const timed_action& t) noexcept {
    return is_recv(t.act.kind()) ? t.end : t.start;
}

/// One flow: an arrow from event `from` to event `to` (timeline indices).
struct trace_flow {
    std::size_t from = 0, to = 0;
    bool forward = true; ///< an activation (forward) or a gradient (backward)
};

/// The flows of a timeline: in a lowered one, each SEND to its RECV; otherwise each compute
/// action to the compute action on another rank that consumes its output (the message that a
/// lowering would make explicit). Linear in the actions plus stages x microbatches.
[[nodiscard]] inline std::vector<trace_flow> trace_flows(const simulation& sim, const config& cfg) {
    const auto S = static_cast<std::size_t>(cfg.num_stages());
    const auto M = static_cast<std::size_t>(cfg.microbatches);
    // (forward?, stage, microbatch) -> producer (a SEND, or a compute action), or npos.
    constexpr std::size_t none = static_cast<std::size_t>(-1);
    // Bounded resources (docs/design.md): a timeline far smaller than its configuration (it
    // cannot come from a valid order) gets no flows rather than a table sized by the config.
    if (!detail::table_affordable(S * M, sim.timeline.size())) return {};
    std::vector<std::size_t> producer(2 * S * M, none);
    auto slot = [S, M](bool fwd, int stage, int mb) {
        return ((fwd ? 0 : S) + static_cast<std::size_t>(stage)) * M + static_cast<std::size_t>(mb);
    };
    auto in_range = [&](const action& p) {
        return p.stage() >= 0 && static_cast<std::size_t>(p.stage()) < S && p.microbatch() >= 0 &&
               static_cast<std::size_t>(p.microbatch()) < M;
    };
    std::vector<trace_flow> flows;
    const auto& tl = sim.timeline;
    if (sim.lowered) {
        for (std::size_t i = 0; i < tl.size(); ++i)
            if (tl[i].ran && is_send(tl[i].act.kind()) && in_range(tl[i].act))
                producer[slot(tl[i].act.kind() == action_kind::send_f, tl[i].act.stage(),
                              tl[i].act.microbatch())] = i;
        for (std::size_t i = 0; i < tl.size(); ++i) {
            const action& a = tl[i].act;
            if (!tl[i].ran || !is_recv(a.kind()) || !in_range(a)) continue;
            const bool fwd = a.kind() == action_kind::recv_f;
            const int from = fwd ? cfg.previous_stage(a.stage()) : cfg.next_stage(a.stage());
            if (from < 0) continue;
            const std::size_t p = producer[slot(fwd, from, a.microbatch())];
            if (p != none) flows.push_back({p, i, fwd});
        }
        return flows;
    }
    // Compute-only: each F, and each I or B, that ran, one part at a time (W passes nothing on).
    const auto for_each_passing_part = [&](auto&& f) {
        for (std::size_t i = 0; i < tl.size(); ++i) {
            if (!tl[i].ran || !is_compute(tl[i].act.kind())) continue;
            ppsched::detail::for_each_part(tl[i].act, [&](const action& p) {
                if (in_range(p) && p.kind() != action_kind::backward_weight) f(i, p);
            });
        }
    };
    for_each_passing_part([&](std::size_t i, const action& p) {
        producer[slot(p.kind() == action_kind::forward, p.stage(), p.microbatch())] = i;
    });
    for_each_passing_part([&](std::size_t i, const action& p) {
        const bool fwd = p.kind() == action_kind::forward;
        const int from = fwd ? cfg.previous_stage(p.stage()) : cfg.next_stage(p.stage());
        if (from < 0) return;
        const std::size_t q = producer[slot(fwd, from, p.microbatch())];
        if (q != none && tl[q].rank != tl[i].rank) flows.push_back({q, i, fwd});
    });
    return flows;
}

/// Writes the events of a trace, separated by commas and newlines.
struct event_writer {
    std::string& out;
    bool first = true;
    /// Starts the next event.
    void begin() {
        if (!first) out += ",\n";
        first = false;
    }
};

/// Appends the trace's `otherData`: generator, name, configuration, makespan and scale.
inline void append_trace_header(std::string& out, const simulation& sim, const config& cfg,
                                const io::trace_options& opts) {
    out += "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"generator\": \"ppsched\"";
    out += ", \"name\": ";
    ppsched::detail::text::append_json_string(out, opts.name);
    out += ", \"ranks\": " + std::to_string(cfg.ranks) +
           ", \"stages_per_rank\": " + std::to_string(cfg.stages_per_rank) +
           ", \"microbatches\": " + std::to_string(cfg.microbatches) + ", \"makespan\": ";
    append_trace_number(out, sim.makespan);
    out += ", \"microseconds_per_unit\": ";
    append_trace_number(out, opts.microseconds_per_unit);
    out += "},\n\"traceEvents\": [\n";
}

/// Appends the metadata naming each rank's process and its compute and comm threads.
inline void append_rank_metadata(event_writer& w, const config& cfg) {
    for (int r = 0; r < cfg.ranks; ++r) {
        const std::string pid = std::to_string(r);
        w.begin();
        w.out += "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " + pid +
                 ", \"args\": {\"name\": \"rank " + pid + "\"}},\n";
        w.out += "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": " + pid +
                 ", \"args\": {\"sort_index\": " + pid + "}},\n";
        w.out += "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + pid +
                 ", \"tid\": 0, \"args\": {\"name\": \"compute\"}},\n";
        w.out += "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + pid +
                 ", \"tid\": 1, \"args\": {\"name\": \"comm\"}}";
    }
}

/// One event to write: a slice (`what` 0, `index` into the timeline) or the start (1) or end
/// (2) of a flow (`index` into the flows), at `ts`.
struct trace_record {
    double ts;
    int what;
    std::size_t index;
};

/// The events in time order; at one time, slices before the flows that bind to them, and flow
/// starts before flow ends, so a viewer that reads in file order meets each flow's start first
/// and finds the slice it binds to already open. O(n log n) for the sort.
[[nodiscard]] inline std::vector<trace_record> trace_records(const simulation& sim,
                                                             const std::vector<trace_flow>& flows) {
    std::vector<trace_record> records;
    records.reserve(sim.timeline.size() + 2 * flows.size());
    for (std::size_t i = 0; i < sim.timeline.size(); ++i)
        if (sim.timeline[i].ran) records.push_back({trace_start(sim.timeline[i]), 0, i});
    for (std::size_t f = 0; f < flows.size(); ++f) {
        records.push_back({trace_start(sim.timeline[flows[f].from]), 1, f});
        records.push_back({trace_start(sim.timeline[flows[f].to]), 2, f});
    }
    std::sort(records.begin(), records.end(), [](const trace_record& x, const trace_record& y) {
        if (x.ts != y.ts) return x.ts < y.ts;
        if (x.what != y.what) return x.what < y.what;
        return x.index < y.index;
    });
    return records;
}

/// Appends the start (or end) of flow number `f`, bound to the slice of `at`.
inline void append_flow_event(event_writer& w, const trace_flow& flow, std::size_t f, bool start,
                              const timed_action& at, double scale) {
    std::string& out = w.out;
    w.begin();
    out += "{\"ph\": \"";
    out += start ? "s" : "f";
    out += "\", \"name\": \"";
    out += flow.forward ? "activation" : "gradient";
    out += "\", \"cat\": \"";
    out += trace_category(at.act.kind());
    out += "\", \"id\": " + std::to_string(f + 1) + ", \"pid\": " + std::to_string(at.rank) +
           ", \"tid\": " + (is_compute(at.act.kind()) ? "0" : "1") + ", \"ts\": ";
    append_trace_number(out, trace_start(at) * scale);
    out += start ? "}" : ", \"bp\": \"e\"}";
}

/// Appends the complete event of an action that ran, with its kind, stage, chunk and
/// microbatch (a RECV: when it was posted).
inline void append_slice_event(event_writer& w, const timed_action& t, const config& cfg,
                               double scale) {
    std::string& out = w.out;
    const action& a = t.act;
    const bool instant = is_p2p(a.kind());
    w.begin();
    out += "{\"ph\": \"X\", \"name\": ";
    ppsched::detail::text::append_json_string(out, to_string(a));
    out += ", \"cat\": \"";
    out += trace_category(a.kind());
    out += "\", \"pid\": " + std::to_string(t.rank) +
           ", \"tid\": " + (is_compute(a.kind()) ? "0" : "1") + ", \"ts\": ";
    append_trace_number(out, trace_start(t) * scale);
    out += ", \"dur\": ";
    append_trace_number(out, instant ? 0.0 : (t.end - t.start) * scale);
    out += ", \"args\": {\"kind\": \"";
    out += trace_kind(a.kind());
    out += "\", \"stage\": " + std::to_string(a.stage()) +
           ", \"chunk\": " + std::to_string(cfg.local_stage_index(a.stage()));
    if (a.kind() == action_kind::overlap_f_b) {
        const action b = a.backward_part();
        out += ", \"microbatch\": " + std::to_string(a.forward_part().microbatch()) +
               ", \"backward\": ";
        ppsched::detail::text::append_json_string(out, to_string(b));
    } else if (a.has_microbatch()) {
        out += ", \"microbatch\": " + std::to_string(a.microbatch());
    }
    if (is_recv(a.kind())) {
        out += ", \"posted\": ";
        append_trace_number(out, t.start * scale);
    }
    out += "}}";
}

} // namespace ppsched::detail::trace

namespace ppsched::io {

/// The Chrome trace event format (JSON object form) of a timeline for `cfg`:
/// - metadata naming process `r` "rank r", its thread 0 "compute" and thread 1 "comm";
/// - one complete event (`"ph": "X"`) per action that ran: name its PyTorch string (`2F3`),
///   category `compute` (thread 0), `fsdp` or `p2p` (thread 1), `ts` and `dur` its simulated
///   start and duration times `microseconds_per_unit`, and `args` with the kind, stage, stage
///   chunk and microbatch. A SEND is an instant when it is issued; a RECV an instant when its
///   data arrives (`args.posted`: when it was posted), so the communication thread's slices
///   always nest;
/// - one flow (`"ph": "s"` then `"ph": "f"` with `"bp": "e"` and the same `id`) per message: in
///   a lowered timeline from each SEND to its RECV, otherwise from each compute action to its
///   consumer on another rank. Each flow event has the category, process, thread and timestamp
///   of the slice it binds to.
/// Events are in time order (slices first at equal times), so every flow start precedes its end.
/// Complexity: O(n log n) in the actions (the sort), plus stages x microbatches.
[[nodiscard]] inline std::string write_chrome_trace(const simulation& sim, const config& cfg,
                                                    const trace_options& opts = {}) {
    namespace d = ppsched::detail::trace;
    const std::vector<d::trace_flow> flows = d::trace_flows(sim, cfg);
    const double scale = opts.microseconds_per_unit;
    // Times are written in microseconds: a finite makespan can still overflow once scaled
    // (1e306 units x 1000). Refused whole, before anything is written (docs/design.md).
    PPSCHED_EXPECTS(std::isfinite(scale) && std::isfinite(sim.makespan * scale),
                    "ppsched::io::write_chrome_trace: the makespan (", sim.makespan,
                    ") times microseconds_per_unit (", scale,
                    ") is not a finite number of microseconds");
    std::string out;
    d::append_trace_header(out, sim, cfg, opts);
    d::event_writer w{out};
    d::append_rank_metadata(w, cfg);
    for (const d::trace_record& rec : d::trace_records(sim, flows)) {
        if (rec.what == 0) {
            d::append_slice_event(w, sim.timeline[rec.index], cfg, scale);
        } else {
            const d::trace_flow& f = flows[rec.index];
            d::append_flow_event(w, f, rec.index, rec.what == 1,
                                 sim.timeline[rec.what == 1 ? f.from : f.to], scale);
        }
    }
    out += "\n]}\n";
    return out;
}

} // namespace ppsched::io
