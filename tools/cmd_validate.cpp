// `ppsched validate FILE.csv [--ranks P --stages-per-rank V --microbatches M --placement
// loop|v|dual] [--transport eager|rendezvous] [--format text|json]`: checks a pipeline order
// (compute-only or lowered) and prints every violation and the step table marked at the first.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include <ppsched/algorithms/validate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/io/step_table.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "cost_options.hpp"
#include "input.hpp"
#include "schedule_options.hpp"

namespace ppsched::cli {

namespace {

constexpr option validate_options_list[] = {
    order_file_config_options[0],
    order_file_config_options[1],
    order_file_config_options[2],
    order_file_config_options[3],
    transport_option,
    {"--format", "FORMAT", "text (default: the report and the step table) or json"},
};

constexpr command_help validate_help{
    .name = "validate",
    .arguments = "FILE.csv",
    .summary = "Check a pipeline order in PyTorch's CSV (compute-only or lowered, '-' for stdin):\n"
               "every action present once, on its stage's rank, after what it needs; sends and\n"
               "receives matched; FSDP and REDUCE_GRAD in place; no deadlock.",
    .options = validate_options_list,
    .details =
        "The configuration is inferred from the file; an option given is honoured (a file\n"
        "with fewer rows than --ranks is invalid). Prints each violation (rule, rank, step,\n"
        "action, message), the ranks of each deadlock cycle, and PyTorch's step table with\n"
        "'<-- ERROR HERE' at the first one. JSON: {file, valid, config: {ranks,\n"
        "stages_per_rank, microbatches, placement}, lowered, transport, total, truncated,\n"
        "violations: [{rule, rank, step, action, other_rank, other_step, other_action,\n"
        "message}] (the first 1000 of total), cycles: [[rank, ...]]}.\n"
        "Exit status 0 valid, 1 invalid, 2 unreadable file or bad options.",
};

// The ranks of each wait-for cycle: `validate` reports a cycle as consecutive deadlock
// violations, each rank waiting on the next, the last on the first.
std::vector<std::vector<int>> deadlock_cycles(const validation_report& report) {
    std::vector<std::vector<int>> cycles;
    std::vector<int> current;
    for (const violation& v : report) {
        if (v.what != rule::deadlock) continue;
        current.push_back(v.rank);
        if (v.other_rank == current.front()) {
            cycles.push_back(current);
            current.clear();
        }
    }
    if (!current.empty()) cycles.push_back(current);
    return cycles;
}

bool is_lowered(const order_file& o) {
    for (const auto& row : o.rows)
        for (const slot& s : row)
            if (s.has_value() && !is_compute(s->kind())) return true;
    return false;
}

std::string json_report(const std::string& file, const order_file& o, transport t,
                        const validation_report& report) {
    const config& c = o.cfg;
    std::string out =
        "{\"file\": " + json_string(file) + ", \"valid\": " + (report.valid() ? "true" : "false") +
        ",\n \"config\": {\"ranks\": " + std::to_string(c.ranks) +
        ", \"stages_per_rank\": " + std::to_string(c.stages_per_rank) +
        ", \"microbatches\": " + std::to_string(c.microbatches) + ", \"placement\": \"" +
        std::string(to_string_view(c.placement)) +
        "\"}, \"lowered\": " + (is_lowered(o) ? "true" : "false") + ", \"transport\": \"" +
        std::string(to_string_view(t)) + "\",\n \"total\": " + std::to_string(report.total()) +
        ", \"truncated\": " + (report.truncated() ? "true" : "false") + ",\n \"violations\": [";
    bool first = true;
    for (const violation& v : report) {
        out += first ? "\n  " : ",\n  ";
        first = false;
        out += "{\"rule\": \"" + std::string(to_string_view(v.what)) +
               "\", \"rank\": " + std::to_string(v.rank) + ", \"step\": " + std::to_string(v.step) +
               ", \"action\": " +
               (v.has_subject ? json_string(to_string(v.subject)) : std::string("null")) +
               ", \"other_rank\": " + std::to_string(v.other_rank) +
               ", \"other_step\": " + std::to_string(v.other_step) + ", \"other_action\": " +
               (v.has_other ? json_string(to_string(v.other)) : std::string("null")) +
               ", \"message\": " + json_string(describe(v)) + "}";
    }
    out += "],\n \"cycles\": [";
    first = true;
    for (const auto& cycle : deadlock_cycles(report)) {
        out += first ? "[" : ", [";
        first = false;
        for (std::size_t i = 0; i < cycle.size(); ++i)
            out += (i ? ", " : "") + std::to_string(cycle[i]);
        out += "]";
    }
    return out + "]}\n";
}

} // namespace

/// The step of the first violation that has one (for `<-- ERROR HERE`).
std::optional<std::size_t> first_error_step(const validation_report& report) {
    for (const violation& v : report)
        if (v.step >= 0) return static_cast<std::size_t>(v.step);
    return std::nullopt;
}

/// The text lines naming each deadlock cycle (`deadlock cycle: rank 0 -> rank 1 -> rank 0`).
std::string cycle_lines(const validation_report& report, transport t) {
    std::string out;
    for (const auto& cycle : deadlock_cycles(report)) {
        out += "deadlock cycle (" + std::string(to_string_view(t)) + " transport): ";
        for (int r : cycle) out += "rank " + std::to_string(r) + " -> ";
        out += "rank " + std::to_string(cycle.front()) + "\n";
    }
    return out;
}

int cmd_validate(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, validate_help);
    if (a.help_requested()) {
        out.out = help_text(validate_help);
        return exit_ok;
    }
    a.expect_positionals(1, 1, "FILE.csv");
    const std::string format = a.value("--format").value_or("text");
    if (format != "text" && format != "json")
        throw usage_error("--format must be text or json, got '" + printable(format) + "'");
    const transport t = read_transport(a);
    const std::string& path = a.positionals()[0];
    const std::string source = source_name(path);
    bool mark = false;
    const order_file o =
        read_order_file(a, io::read_csv_rows(read_input(path, &mark), source), source);
    // Read here without it, but PyTorch's _load_csv opens the file as plain UTF-8: the mark
    // stays in the first action, which it then refuses.
    if (mark)
        out.err += "ppsched: warning: " + source +
                   " starts with a UTF-8 byte order mark: ppsched drops it, but PyTorch's "
                   "_load_csv keeps it in the first action and fails; save the file without one\n";
    const validation_report report =
        validate(o.rows, o.cfg, validate_options{.transport = t, .idle_slots_in_lowered = false});
    if (format == "json") {
        out.out = json_report(source, o, t, report);
    } else {
        const config& c = o.cfg;
        std::string head = source + ": " + (report.valid() ? "valid" : "INVALID") + " (" +
                           counted(c.ranks, "rank", "ranks") + ", " +
                           counted(c.stages_per_rank, "stage", "stages") + " per rank, " +
                           counted(c.microbatches, "microbatch", "microbatches") + ", placement " +
                           std::string(to_string_view(c.placement)) + ", " +
                           (is_lowered(o) ? "lowered" : "compute-only") + ", " +
                           std::string(to_string_view(t)) + " transport)\n";
        if (!report.valid())
            head += std::to_string(report.total()) +
                    (report.total() == 1 ? " violation" : " violations") +
                    (report.truncated() ? " (the first " + std::to_string(report.size()) + " below)"
                                        : std::string()) +
                    ":\n" + to_string(report) + cycle_lines(report, t) + "\n" +
                    io::format_step_table(o.rows, first_error_step(report));
        out.out = head;
    }
    return report.valid() ? exit_ok : exit_failure;
}

} // namespace ppsched::cli
