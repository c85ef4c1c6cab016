// `ppsched tune --ranks P --microbatches M [--stages-per-rank V] [--placement loop|v]
// [--costs F.json] [--memory-limit X] [--backward split|fused] [--time-limit S] [--seed N]
// [--output order.csv] [--picture FILE.svg] [--format text|json]`: the auto-scheduler. Finds a
// fast order for the model's (possibly uneven) costs within the memory limit, proves a lower
// bound on every order's makespan, and shows the best built-in schedule beside it.

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/simulate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/memory_limit.hpp>
#include <ppsched/io/svg.hpp>
#include <ppsched/registry.hpp>
#include <ppsched/tune/tune.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "cost_options.hpp"
#include "order_source.hpp"
#include "output_file.hpp"

namespace ppsched::cli {

namespace {

constexpr std::array<option, 17> tune_own_options{{
    {"--ranks", "P", "pipeline ranks (required)"},
    {"--microbatches", "M", "microbatches per step (required)"},
    {"--stages-per-rank", "V", "model chunks per rank (default 1 with loop, 2 with v)"},
    {"--placement", "P", "where stages live: loop (stage s on rank s % P, default) or v"},
    {"--memory-limit", "X",
     "peak memory a rank may hold, in the units simulate reports (parameters + activations)"},
    {"--backward", "MODE",
     "split (default: the runtime runs I and W apart, as the zero-bubble schedules) or fused "
     "(only B)"},
    {"--time-limit", "S",
     "seconds the search may take (default 10; the bound and the start points come first, "
     "seconds on orders of millions of actions)"},
    {"--max-evaluations", "N",
     "stop after timing N orders (the built-in schedules are timed first whatever N; "
     "default: no limit)"},
    {"--exact-nodes", "N",
     "partial orders the exact phase may visit to find a faster order or prove there is none, "
     "and the rank relaxation after it to raise the bound (default: 50000000 / the problem's "
     "compute actions; 0: skip both)"},
    {"--beam-width", "N",
     "the widest beam search over partial orders, ranked by the bound, after the first local "
     "searches (default 4096; 0: none; each runs early only while cheap for the problem, the "
     "wider ones last and only where the answer is not proven within 1 % of the optimum)"},
    {"--threads", "N",
     "threads the beam searches and the tabu search's steps may use (default 0: every hardware "
     "thread); the result is the same for any count"},
    {"--seed", "N", "seed of the search's random choices (default 1)"},
    {"--output", "FILE", "write the order as PyTorch's CSV (compute_only format) to FILE"},
    {"--picture", "FILE",
     "draw the tuned order above the best built-in schedule (SVG), and 1F1B too on a loop of one "
     "stage per rank where it is not the best"},
    {"--max-boxes", "N",
     "with --picture: draw at most N actions in all (default 1000000); more is an error, "
     "before the search where the tuned order alone is more"},
    {"--format", "FORMAT", "text (default), json, or none (only the exit status)"},
    {"--quiet", "", "no progress line on stderr"},
}};

constexpr auto tune_options_list = with_cost_options(tune_own_options);

constexpr command_help tune_help{
    .name = "tune",
    .arguments = "",
    .summary = "Find the fastest order for a model's costs and memory budget: start from every\n"
               "built-in schedule that fits and from greedy orders, improve by a search along the\n"
               "critical path, then by an exact branch and bound that proves the order optimal\n"
               "when it finishes; and prove a lower bound on the makespan of every valid order.",
    .options = tune_options_list,
    .details =
        "Costs are per stage: a --costs file with per-stage arrays must have one entry per\n"
        "stage (ranks x stages per rank). The result is a compute-only order; write it with\n"
        "--output and load it in torchtitan with pipeline_parallel_schedule_csv (see\n"
        "docs/tuning.md), or lower it with 'ppsched lower'. gap = (makespan - bound) / bound;\n"
        "gap 0 proves the order optimal (null in JSON when the bound is 0 and the makespan is\n"
        "not: nothing is proven). The search is deterministic for a seed unless the\n"
        "time limit cuts it short. JSON output: {makespan, lowered_makespan (the order\n"
        "lowered, as PyTorch runs it, where messages take time; else null), lower_bound, gap,\n"
        "optimal, bubble_fraction, peak_memory: [per rank], memory_limit, best_builtin:\n"
        "{name, makespan} | null, start: {name, makespan}, evaluations, exact_nodes,\n"
        "beam_nodes, seconds, time_to_best, stopped, bound: {one_machine, one_machine_rank,\n"
        "memory, memory_rank, memory_ramp, memory_ramp_rank, rank_relaxation,\n"
        "rank_relaxation_rank, search, exact_complete, least_memory}, candidates: [{name,\n"
        "applies, fits, makespan, peak_memory, why_not}]}.\n"
        "Exit status 2 for a problem no order can meet (a memory limit below the least any\n"
        "order needs, which the message gives), malformed costs or bad usage.",
};

tune_problem read_problem(const args& a) {
    if (!a.has("--ranks")) throw usage_error("missing option --ranks P");
    if (!a.has("--microbatches")) throw usage_error("missing option --microbatches M");
    tune_problem p;
    p.ranks = static_cast<int>(a.integer("--ranks", 1, max_stage + 1, 1));
    p.microbatches = static_cast<int>(a.integer("--microbatches", 1, 1 << 24, 1));
    if (auto text = a.value("--placement")) {
        if (!parse_placement(*text, p.placement) || p.placement == stage_placement::dual)
            throw usage_error("--placement must be loop or v, got '" + *text + "'");
    }
    p.stages_per_rank = static_cast<int>(a.integer("--stages-per-rank", 1, max_stage + 1,
                                                   p.placement == stage_placement::v ? 2 : 1));
    if (auto text = a.value("--backward")) {
        if (!parse_backward_mode(*text, p.backward))
            throw usage_error("--backward must be split or fused, got '" + *text + "'");
    }
    p.costs = read_cost_options(a);
    // Said here, with the file's name (tune itself would say it too, without the file).
    const auto stages =
        static_cast<std::size_t>(p.ranks) * static_cast<std::size_t>(p.stages_per_rank);
    if (!p.costs.per_stage.empty() && p.costs.per_stage.size() != stages)
        throw usage_error(per_stage_source(a) + " gives " +
                          std::to_string(p.costs.per_stage.size()) +
                          " per-stage entries but the problem has " + std::to_string(stages) +
                          " stages (" + counted(p.ranks, "rank", "ranks") + " x " +
                          counted(p.stages_per_rank, "stage", "stages") +
                          " per rank): give one entry per stage, or --stages-per-rank to match");
    if (auto text = a.value("--memory-limit"))
        p.memory_limit = parse_positive(*text, "--memory-limit");
    return p;
}

std::string percent(double fraction) {
    std::array<char, 64> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), 100 * fraction,
                                   std::chars_format::fixed, 1);
    return std::string(buf.data(), res.ptr) + " %";
}

// Three decimals under a second: small problems answer within milliseconds.
std::string seconds(double s) {
    std::array<char, 64> buf{};
    const auto res = std::to_chars(buf.data(), buf.data() + buf.size(), s, std::chars_format::fixed,
                                   s < 1 ? 3 : 2);
    return {buf.data(), res.ptr};
}

std::string text_report(const tune_problem& p, const tune_result& r, const simulation& sim,
                        const std::optional<double>& lowered,
                        const std::optional<std::string>& csv_path,
                        const std::optional<std::string>& picture_path) {
    std::string out = "tune: " + counted(p.ranks, "rank", "ranks") + ", " +
                      counted(p.stages_per_rank, "stage", "stages") + " per rank (" +
                      std::string(to_string_view(p.placement)) + "), " +
                      counted(p.microbatches, "microbatch", "microbatches") + ", " +
                      std::string(to_string_view(p.backward)) + " backward" +
                      (p.memory_limit ? ", memory limit " + json_number(*p.memory_limit) : "") +
                      "\n";
    auto row = [&](const std::string& label, const std::string& value, const std::string& note) {
        append_labelled_row(out, label, value, note);
    };
    row("makespan", format_number(r.makespan), "");
    row("lower bound", format_number(r.bound.value),
        r.gap == 0 ? "proven optimal (gap 0)"
        : !std::isfinite(r.gap)
            ? "gap unbounded: a bound of 0 proves nothing"
            : "gap " + percent(r.gap) + ": no valid order is faster than the bound");
    row("bubble", percent(sim.bubble_fraction), "idle / (ranks x makespan)");
    if (lowered)
        row("lowered", format_number(*lowered),
            "as PyTorch runs it ('ppsched lower': receives wait in each rank's order); the "
            "makespan and bound above are the compute-only order's");
    // Past the time limit the remaining built-ins are not tried (huge problems): say so.
    long long untried = 0;
    for (const tune_candidate& c : r.candidates)
        if (!c.tried) ++untried;
    const std::string untried_note =
        untried == 0
            ? ""
            : " (" + std::to_string(untried) + " not tried: the time limit was spent before them)";
    if (r.best_builtin.empty()) {
        const long long tried = static_cast<long long>(r.candidates.size()) - untried;
        const std::string applies =
            p.memory_limit ? "applies and fits the memory limit" : "applies";
        row("best built-in", "none",
            untried == 0 ? "no built-in schedule " + applies
            : tried == 0 ? "none was tried: the time limit was spent before the " +
                               std::to_string(untried) + " of this placement"
                         : "none of those tried " + applies + untried_note);
    } else {
        const double gain = (r.best_builtin_makespan - r.makespan) / r.best_builtin_makespan;
        row("best built-in", format_number(r.best_builtin_makespan),
            r.best_builtin +
                (gain > 0 ? ": tuned is " + percent(gain) + " faster" : ": as fast as tuned") +
                untried_note);
    }
    row("started from", format_number(r.start_makespan), r.start);
    row("searched", std::to_string(r.evaluations) + " orders",
        "and " + std::to_string(r.exact_nodes) + " exact-search and " +
            std::to_string(r.beam_nodes) + " beam nodes in " + seconds(r.elapsed) +
            " s (answer found at " + seconds(r.time_to_best) +
            " s), stopped: " + std::string(to_string_view(r.stopped)));
    out += "\n";
    const std::array<std::string, 4> head{"rank", "busy", "idle", "peak memory"};
    std::vector<std::array<std::string, 4>> rows{head};
    for (const rank_summary& rs : sim.ranks)
        rows.push_back({std::to_string(rs.rank), format_number(rs.busy), format_number(rs.idle),
                        format_number(rs.peak_memory)});
    append_aligned_table(out, rows);
    // Without a limit the search minimises time only: say where memory went up for nothing
    // the user asked for (an order as fast may need far less).
    if (!p.memory_limit && !r.best_builtin.empty()) {
        double peak = 0, builtin_peak = 0;
        for (const rank_summary& rs : sim.ranks) peak = std::max(peak, rs.peak_memory);
        for (const tune_candidate& c : r.candidates)
            if (c.name == r.best_builtin) builtin_peak = c.peak_memory;
        if (!fits_memory_limit(peak, builtin_peak)) // (not for a last-bit difference)
            out += "\nno --memory-limit: this order holds up to " + format_number(peak) +
                   " where " + r.best_builtin + " holds " + format_number(builtin_peak) +
                   "; the search minimises time only, so give --memory-limit " +
                   format_number(builtin_peak) + " (or your budget) for an order within it\n";
    }
    if (csv_path)
        out += "\nwrote " + *csv_path +
               " (PyTorch CSV, compute_only: torchtitan's pipeline_parallel_schedule_csv)\n";
    if (picture_path)
        out += (csv_path ? "" : "\n") + std::string("wrote ") + *picture_path + " (SVG)\n";
    return out;
}

std::string json_report(const tune_problem& p, const tune_result& r, const simulation& sim,
                        const std::optional<double>& lowered) {
    std::string out =
        "{\"makespan\": " + json_number(r.makespan) +
        ", \"lowered_makespan\": " + (lowered ? json_number(*lowered) : std::string("null")) +
        ", \"lower_bound\": " + json_number(r.bound.value) + ", \"gap\": " + json_number(r.gap) +
        ", \"optimal\": " + (r.gap == 0 ? "true" : "false") +
        ", \"bubble_fraction\": " + json_number(sim.bubble_fraction) + ",\n \"peak_memory\": [";
    for (std::size_t i = 0; i < r.peak_memory.size(); ++i)
        out += (i ? ", " : "") + json_number(r.peak_memory[i]);
    out += "], \"memory_limit\": " +
           (p.memory_limit ? json_number(*p.memory_limit) : std::string("null"));
    out += ",\n \"best_builtin\": " +
           (r.best_builtin.empty()
                ? std::string("null")
                : "{\"name\": " + json_string(r.best_builtin) +
                      ", \"makespan\": " + json_number(r.best_builtin_makespan) + "}");
    out += ", \"start\": {\"name\": " + json_string(r.start) +
           ", \"makespan\": " + json_number(r.start_makespan) + "}";
    out += ",\n \"evaluations\": " + std::to_string(r.evaluations) +
           ", \"exact_nodes\": " + std::to_string(r.exact_nodes) +
           ", \"beam_nodes\": " + std::to_string(r.beam_nodes) +
           ", \"seconds\": " + json_number(r.elapsed) +
           ", \"time_to_best\": " + json_number(r.time_to_best) +
           ", \"stopped\": " + json_string(to_string_view(r.stopped));
    out += ",\n \"bound\": {\"one_machine\": " + json_number(r.bound.one_machine) +
           ", \"one_machine_rank\": " + std::to_string(r.bound.one_machine_rank) +
           ", \"memory\": " + json_number(r.bound.memory) +
           ", \"memory_rank\": " + std::to_string(r.bound.memory_rank) +
           ", \"memory_ramp\": " + json_number(r.bound.memory_ramp) +
           ", \"memory_ramp_rank\": " + std::to_string(r.bound.memory_ramp_rank) +
           ", \"rank_relaxation\": " + json_number(r.bound.rank_relaxation) +
           ", \"rank_relaxation_rank\": " + std::to_string(r.bound.rank_relaxation_rank) +
           ", \"search\": " + json_number(r.bound.search) +
           ", \"exact_complete\": " + (r.bound.exact_complete ? "true" : "false") +
           ", \"least_memory\": [";
    for (std::size_t i = 0; i < r.bound.least_memory.size(); ++i)
        out += (i ? ", " : "") + json_number(r.bound.least_memory[i]);
    out += "]},\n \"candidates\": [";
    for (std::size_t i = 0; i < r.candidates.size(); ++i) {
        const tune_candidate& c = r.candidates[i];
        out += std::string(i ? ",\n  " : "\n  ") + "{\"name\": " + json_string(c.name) +
               ", \"applies\": " + (c.applies ? "true" : "false") +
               ", \"fits\": " + (c.fits ? "true" : "false");
        if (c.applies)
            out += ", \"makespan\": " + json_number(c.makespan) +
                   ", \"peak_memory\": " + json_number(c.peak_memory);
        out += ", \"why_not\": " + json_string(c.why_not) + "}";
    }
    return out + "]}\n";
}

} // namespace

int cmd_tune(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, tune_help);
    if (a.help_requested()) {
        out.out = help_text(tune_help);
        return exit_ok;
    }
    a.expect_positionals(0, 0, "");
    const std::string format = a.value("--format").value_or("text");
    if (format != "text" && format != "json" && format != "none")
        throw usage_error("--format must be text, json or none, got '" + format + "'");
    // The report goes to standard output, and both files are written together after the
    // search: refuse what would fail then before searching.
    expect_file_names(a, "tune", {"--output", "--picture"});
    const auto csv_path = a.value("--output");
    const auto picture_path = a.value("--picture");
    expect_distinct_files(a, {"--output", "--picture"});
    expect_writable_outputs(a, {"--output", "--picture"});
    if (a.has("--max-boxes") && !picture_path)
        throw usage_error("--max-boxes needs --picture (nothing is drawn without it)");
    const long long max_boxes = a.integer("--max-boxes", 1, 1LL << 40, default_max_boxes);
    const tune_problem problem = read_problem(a);
    // The tuned order alone draws every compute action: refuse a picture too large to open
    // before the search, not after it.
    if (picture_path) {
        const double least = problem.compute_actions();
        if (least > static_cast<double>(max_boxes))
            throw usage_error(too_many_boxes(static_cast<long long>(least), max_boxes));
    }
    for (const char* flag : {"--unshard", "--reduce-grad"})
        if (a.has(flag))
            out.err += std::string("ppsched: warning: ") + flag +
                       " times an action on the communication stream, which tune's compute-only "
                       "orders do not hold: it changes nothing here (lower the order to place "
                       "it)\n";
    tune_options options;
    if (auto text = a.value("--time-limit")) {
        options.time_limit = parse_number(*text, "--time-limit");
        if (!(options.time_limit <= 1e7)) throw usage_error("--time-limit must be <= 1e7 seconds");
    }
    options.max_evaluations =
        static_cast<std::uint64_t>(a.integer("--max-evaluations", 1, 1LL << 62, 0));
    options.seed = static_cast<std::uint64_t>(a.integer("--seed", 0, 1LL << 62, 1));
    if (a.has("--exact-nodes"))
        options.exact_nodes =
            static_cast<std::uint64_t>(a.integer("--exact-nodes", 0, 1LL << 62, 0));
    options.beam_width = static_cast<std::size_t>(a.integer("--beam-width", 0, 1LL << 20, 4096));
    options.threads = static_cast<std::size_t>(a.integer("--threads", 0, 1024, 0));
    // A progress line on stderr once the search runs longer than a second.
    bool printed = false;
    if (!a.has("--quiet")) {
        options.progress = [&printed](const tune_progress& pr) {
            // (No best yet while the start points are timed: their best is known after all.)
            const std::string best =
                pr.best > 0 ? "best " + format_number(pr.best) : "timing the start points";
            std::fprintf(stderr, "\rppsched tune: %.0f s, %llu orders, %s, bound %s   ", pr.elapsed,
                         static_cast<unsigned long long>(pr.evaluations), best.c_str(),
                         format_number(pr.lower_bound).c_str());
            std::fflush(stderr);
            printed = true;
        };
    }
    const tune_result r = tune(problem, options);
    if (printed) std::fprintf(stderr, "\n");
    const simulation sim = simulate(r.best, problem.costs);
    // Where messages take time, PyTorch's runtime (sends and receives in each rank's order,
    // blocking it) can be slower than the compute-only order: time the lowered one too.
    std::optional<double> lowered;
    if (problem.costs.p2p_latency > 0 || problem.costs.p2p_transfer > 0) {
        const simulation ls = simulate(lower(r.best), problem.costs);
        if (ls) lowered = ls.makespan;
    }
    std::vector<std::pair<std::string, std::string>> files;
    if (csv_path) files.emplace_back(*csv_path, io::write_csv(r.best));
    if (picture_path) {
        std::vector<io::chart> charts;
        charts.push_back({"tuned", problem.cfg(), sim, false, ""});
        auto boxes = static_cast<long long>(r.best.action_count());
        auto add_builtin = [&](const std::string& name) {
            for (const tune_candidate& c : r.candidates)
                if (c.name == name && c.applies) {
                    const order o = tune_candidate_order(problem, name);
                    boxes += static_cast<long long>(o.action_count());
                    charts.push_back({name, problem.cfg(), simulate(o, problem.costs), false, ""});
                }
        };
        if (!r.best_builtin.empty()) add_builtin(r.best_builtin);
        const std::size_t with_best = charts.size();
        if (r.best_builtin != "1F1B" && problem.placement == stage_placement::loop &&
            problem.stages_per_rank == 1)
            add_builtin("1F1B");
        const bool best_drawn = with_best > 1, reference_drawn = charts.size() > with_best;
        if (boxes > max_boxes) throw usage_error(too_many_boxes(boxes, max_boxes));
        io::svg_options opts;
        opts.title =
            "ppsched tune: " + counted(problem.ranks, "rank", "ranks") + ", " +
            counted(problem.microbatches, "microbatch", "microbatches") +
            (problem.memory_limit ? ", memory limit " + json_number(*problem.memory_limit) : "");
        // What is drawn: the best built-in only where one fits, 1F1B only on a loop of one
        // stage per rank (where it is not the best already).
        opts.subtitle = std::string("the tuned order") +
                        (best_drawn ? ", the best built-in schedule that fits"
                                    : " (no built-in schedule fits)") +
                        (reference_drawn ? ", and 1F1B for reference" : "") + "; lower bound " +
                        format_number(r.bound.value);
        files.emplace_back(*picture_path, io::write_svg(charts, opts));
    }
    write_output_files(files); // all or none
    if (format == "text") out.out = text_report(problem, r, sim, lowered, csv_path, picture_path);
    if (format == "json") out.out = json_report(problem, r, sim, lowered);
    return exit_ok;
}

} // namespace ppsched::cli
