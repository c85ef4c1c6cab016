#pragma once
/// \file schedule_options.hpp
/// The shared vocabulary of what an order is: the configuration options (`--ranks P`,
/// `--stages-per-rank V`, `--microbatches M`, `--placement loop|v|dual`, the same names and
/// help in every subcommand), `--transport eager|rendezvous`, the lowering options (`--no-fsdp
/// --prefetch N --no-reduce-grad --merge-bw --defer-recv`), `--for torch|ppsched`, and the
/// options that become `schedule_params` for subcommands that generate a schedule through the
/// registry: append `schedule_param_options` to a command's options and call
/// `read_schedule_params` (and, for the planning options of cost- and memory-aware schedules,
/// `read_planning_params`).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/config.hpp>
#include <ppsched/cost_model.hpp>
#include <ppsched/error.hpp>
#include <ppsched/generate.hpp>
#include <ppsched/infer_config.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/io/detail/number_text.hpp>
#include <ppsched/order.hpp>
#include <ppsched/registry.hpp>
#include <ppsched/transport.hpp>

#include "cli.hpp"
#include "cost_options.hpp"
#include "input.hpp"

namespace ppsched::cli {

/// The options of `schedule_params` fields (a schedule that does not take one rejects it).
inline constexpr option schedule_param_options[] = {
    {"--microbatch-group-size", "G",
     "MegatronInterleaved: consecutive microbatches per chunk, in [ranks, microbatches] "
     "(default: ranks)"},
};

/// Help lines of the configuration options, the same in every subcommand.
inline constexpr option ranks_option{"--ranks", "P", "pipeline ranks (one CSV row each)"};
inline constexpr option stages_per_rank_option{
    "--stages-per-rank", "V",
    "stages per rank (stage chunks; with --placement dual: V/2 per direction)"};
inline constexpr option microbatches_option{"--microbatches", "M", "microbatches per iteration"};
inline constexpr option placement_option{
    "--placement", "P",
    "where stage s lives: loop (rank s % P), v (zig-zag) or dual (two opposite pipelines, "
    "DualPipe)"};
/// The rows of the options that choose an order by schedule NAME or from a CSV file, the same
/// in `simulate` and the drawing subcommands (`render`, `trace`, `timeline`, `report`).
inline constexpr option source_microbatches_option{
    "--microbatches", "M", "microbatches per iteration (required with NAME)"};
inline constexpr option source_stages_per_rank_option{"--stages-per-rank", "V",
                                                      "stages per rank (default: the schedule's)"};
inline constexpr option per_rank_option{
    "--per-rank", "",
    "the costs are a rank's share of the model: each of its V stages costs 1/V of them"};
/// Throws `usage_error` when the order of a built-in schedule for `cfg` may hold more slots than
/// `budget` (`estimated_slots`: its actions, and the idle steps of PyTorch's step tables, which
/// grow with the square of the ranks), before anything is generated; `limit` names the budget
/// in the message (`--max-actions 50000000`).
inline void check_slot_budget(const config& cfg, long long budget, const std::string& limit) {
    const double slots = estimated_slots(cfg);
    if (!(slots > static_cast<double>(budget))) return;
    const std::string count = slots < 9e18 ? std::to_string(static_cast<long long>(slots))
                                           : ppsched::detail::text::general_number(slots);
    throw usage_error(
        "the order of " + counted(cfg.ranks, "rank", "ranks") + " x " +
        counted(cfg.stages_per_rank, "stage", "stages") + " per rank x " +
        counted(cfg.microbatches, "microbatch", "microbatches") + " may take up to " + count +
        " slots (up to 3 actions per stage and microbatch, plus up to about 7 x ranks x "
        "stages per rank idle steps in each rank's row of PyTorch's step table), "
        "more than " +
        limit);
}

inline constexpr option max_actions_option{
    "--max-actions", "N",
    "refuse orders that may hold more than N slots: a schedule's are estimated before it is "
    "generated (its actions, PyTorch's idle steps and, with --lower, the sends and receives), "
    "a CSV file's are its actions (default 50000000)"};
/// `--transport`: how a lowered order's SENDs behave (see ppsched/transport.hpp).
inline constexpr option transport_option{
    "--transport", "T",
    "eager (default: a SEND never blocks) or rendezvous (a SEND waits for its RECV, as NCCL "
    "may)"};
/// `--for`: who reads a written order.
inline constexpr option for_option{
    "--for", "WHO",
    "torch (refuse what PyTorch cannot load: the dual placement) or ppsched (no warning)"};

/// The configuration options for a command that reads an order from a file: every one
/// optional (inferred from the file), every one given honoured.
inline constexpr option order_file_config_options[] = {
    {"--ranks", "P", "pipeline ranks (default: the file's rows; fewer rows is invalid)"},
    {"--stages-per-rank", "V",
     "stages per rank (default: from the highest stage; with dual: V/2 per direction)"},
    {"--microbatches", "M", "microbatches per iteration (default: highest + 1)"},
    {"--placement", "P",
     "where stage s lives: loop (rank s % P), v (zig-zag) or dual (two opposite pipelines, "
     "DualPipe); default: inferred from the actions"},
};

/// The lowering options (`ppsched::lower_options`).
inline constexpr option lowering_options[] = {
    {"--fsdp", "", "insert FSDP UNSHARD/RESHARD (the default, as PyTorch does)"},
    {"--no-fsdp", "", "no UNSHARD/RESHARD"},
    {"--prefetch", "N", "stages a rank keeps unsharded ahead (default 3, as PyTorch)"},
    {"--no-reduce-grad", "", "no REDUCE_GRAD after each stage's last backward"},
    {"--merge-bw", "", "fuse each adjacent I+W into one B first (PyTorch's _merge_bw)"},
    {"--defer-recv", "",
     "each RECV just before the compute that consumes it (PyTorch PR 178815); with "
     "--transport rendezvous each SEND moves with it, so the result cannot hang"},
};

/// The transport given with `--transport` (default eager).
[[nodiscard]] inline transport read_transport(const args& a) {
    transport t = transport::eager;
    if (auto v = a.value("--transport"); v && !parse_transport(*v, t))
        throw usage_error("--transport must be eager or rendezvous, got '" + printable(*v) + "'");
    return t;
}

/// The `lower_options` the lowering options describe (with the `--transport` given).
[[nodiscard]] inline lower_options read_lower_options(const args& a) {
    lower_options o;
    if (a.has("--fsdp") && a.has("--no-fsdp"))
        throw usage_error("--fsdp and --no-fsdp contradict each other");
    o.unshard_reshard = !a.has("--no-fsdp");
    if (a.has("--prefetch")) {
        if (!o.unshard_reshard) throw usage_error("--prefetch needs FSDP (not --no-fsdp)");
        o.prefetch = static_cast<int>(a.integer("--prefetch", 1, 1 << 20, 3));
    }
    o.reduce_grad = !a.has("--no-reduce-grad");
    o.merge_bw = a.has("--merge-bw");
    o.defer_recv = a.has("--defer-recv");
    o.transport = read_transport(a);
    return o;
}

/// Checks `--for` against the order about to be written. The dual placement (DualPipe) has
/// no PyTorch counterpart: refused with `--for torch`, a warning in `out.err` unless
/// `--for ppsched`.
inline void check_reader(const args& a, const config& cfg, output& out) {
    const std::string who = a.value("--for").value_or("");
    if (!who.empty() && who != "torch" && who != "ppsched")
        throw usage_error("--for must be torch or ppsched, got '" + printable(who) + "'");
    if (cfg.placement != stage_placement::dual) return;
    if (who == "torch")
        throw usage_error("--for torch: this order uses the dual placement (two pipelines in "
                          "opposite directions, DualPipe), which PyTorch cannot load: its "
                          "pipelining has no two-direction stage placement (docs/pytorch.md)");
    if (who.empty())
        out.err += "ppsched: warning: this order uses the dual placement (DualPipe); PyTorch "
                   "cannot load it (no two-direction stage placement; see docs/pytorch.md). "
                   "--for ppsched silences this, --for torch refuses.\n";
}

/// The rows of an order file and the configuration they are checked against (the rows may
/// not match it: `validate(rows, cfg)` says so).
struct order_file {
    config cfg;
    std::vector<rank_slots> rows;
    /// Non-idle slots.
    [[nodiscard]] std::size_t action_count() const {
        std::size_t n = 0;
        for (const auto& row : rows)
            for (const slot& s : row)
                if (s.has_value()) ++n;
        return n;
    }
    /// An `order`, when the rows match the configuration's ranks; otherwise throws
    /// `check_failure` with the validation report (exit status 1).
    [[nodiscard]] order to_order(const std::string& source) && {
        if (rows.size() != static_cast<std::size_t>(cfg.ranks))
            throw check_failure(source + " is not a valid order:\n" +
                                to_string(validate(rows, cfg)));
        return order(cfg, std::move(rows));
    }
};

/// An order read from a file with the configuration options of `a` applied: what the flags
/// give is honoured, the rest is inferred from the actions (`io::inferable_sizes`, which
/// refuses indices no size linear in the file can hold, and reads an order with a stray index
/// with the sizes its other actions show; the placement its actions fit best,
/// `detail::choose_placement`). Throws `parse_error`, `usage_error` or `config_error` (a
/// malformed configuration) for bad input or flags. The rows are kept as they are: a file
/// with fewer rows than `--ranks` is an order `validate` rejects (`rank_count`).
[[nodiscard]] inline order_file read_order_file(const args& a, std::vector<rank_slots> rows,
                                                const std::string& source) {
    constexpr long long max_int = (1LL << 31) - 1;
    const bool has_ranks = a.has("--ranks"), has_v = a.has("--stages-per-rank"),
               has_m = a.has("--microbatches");
    const int ranks = static_cast<int>(a.integer("--ranks", 1, max_stage + 1, 1));
    expect_actions(rows, source);
    const io::inferred_sizes sizes =
        io::inferable_sizes(rows, source, !has_v, !has_m, has_ranks ? ranks : 0);
    config cfg = infer_config(rows);
    if (has_ranks) cfg.ranks = ranks;
    // Inferred sizes fit an int (io::inferable_sizes).
    cfg.stages_per_rank =
        has_v ? static_cast<int>(a.integer("--stages-per-rank", 1, max_stage + 1, 1))
              : static_cast<int>(sizes.stages / cfg.ranks);
    cfg.microbatches = has_m ? static_cast<int>(a.integer("--microbatches", 1, max_int, 1))
                             : static_cast<int>(sizes.microbatches);
    if (auto name = a.value("--placement")) {
        if (!parse_placement(*name, cfg.placement))
            throw usage_error("--placement must be loop, v or dual, got '" + printable(*name) +
                              "'");
    } else {
        // Judged on the final sizes (the inferred placement was judged on the file's own).
        ppsched::detail::choose_placement(rows, cfg);
    }
    if (static_cast<long long>(cfg.ranks) * cfg.stages_per_rank > max_stage + 1LL)
        throw usage_error("ranks x stages per rank must be at most " +
                          std::to_string(max_stage + 1) + ", got " + std::to_string(cfg.ranks) +
                          " x " + std::to_string(cfg.stages_per_rank));
    check(cfg);
    return {cfg, std::move(rows)};
}

/// The planning options of cost- and memory-aware schedules (ZB-1P, ZB-2P, ZB, ZB-V, ...), for
/// commands with no cost model of their own (`generate`): `--f --i --w --p2p` (alias `--comm`)
/// become `schedule_params::costs`, `--memory-limit` becomes `schedule_params::memory_limit`.
inline constexpr option planning_options[] = {
    {"--f", "X", "cost-aware schedules: forward time of one stage (default 1)"},
    {"--i", "X", "cost-aware schedules: input-gradient (I) time of one stage (default F)"},
    {"--w", "X", "cost-aware schedules: weight-gradient (W) time of one stage (default F)"},
    {"--p2p", "X", "cost-aware schedules: time of a message between ranks (default 0)"},
    {"--comm", "X", "", "--p2p"},
    {"--memory-limit", "X",
     "memory-aware schedules: activations a rank may hold, one per stage and microbatch (as "
     "the zero-bubble authors count; a V chunk is one)"},
};

/// `params` with the planning options given on the command line (unset ones stay unset).
/// Throws `usage_error` for a bad number or inconsistent costs.
[[nodiscard]] inline schedule_params read_planning_params(const args& a, schedule_params params) {
    auto number = [&a](std::string_view name) -> std::optional<double> {
        const auto text = a.value(name);
        if (!text) return std::nullopt;
        return parse_number(*text, a.spelling(name));
    };
    const auto f = number("--f"), i = number("--i"), w = number("--w"), comm = number("--p2p");
    if (f || i || w || comm) {
        cost_model c;
        c.uniform.forward = f;
        c.uniform.backward_input = i;
        c.uniform.backward_weight = w;
        c.p2p_latency = comm.value_or(0.0);
        try {
            c.check();
            (void)c.at(0);
        } catch (const config_error& e) {
            throw usage_error(e.what());
        }
        params.costs = c;
    }
    if (const auto text = a.value("--memory-limit"))
        params.memory_limit = parse_positive(*text, "--memory-limit");
    return params;
}

/// The schedule parameters given on the command line (unset fields stay unset).
[[nodiscard]] inline schedule_params read_schedule_params(const args& a) {
    constexpr long long max_int = (1LL << 31) - 1;
    schedule_params params;
    if (a.has("--microbatch-group-size"))
        params.microbatch_group_size =
            static_cast<int>(a.integer("--microbatch-group-size", 1, max_int, 1));
    return params;
}

} // namespace ppsched::cli
