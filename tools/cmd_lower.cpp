// `ppsched lower FILE.csv [--ranks P --stages-per-rank V --microbatches M --placement ...]
// [--fsdp|--no-fsdp --prefetch N --no-reduce-grad --merge-bw --defer-recv] [--transport T]
// [--format csv|table] [--output F] [--for torch|ppsched]`: validates a compute-only order
// and writes what PyTorch's runtime executes (`compute_comms`).

#include <span>
#include <string>

#include <ppsched/algorithms/lower.hpp>
#include <ppsched/algorithms/validate.hpp>
#include <ppsched/io/csv.hpp>
#include <ppsched/io/step_table.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "input.hpp"
#include "output_file.hpp"
#include "schedule_options.hpp"

namespace ppsched::cli {

namespace {

constexpr option lower_options_list[] = {
    order_file_config_options[0],
    order_file_config_options[1],
    order_file_config_options[2],
    order_file_config_options[3],
    lowering_options[0],
    lowering_options[1],
    lowering_options[2],
    lowering_options[3],
    lowering_options[4],
    lowering_options[5],
    {"--transport", "T",
     "eager (default) or rendezvous: the transport the output must not hang under"},
    {"--format", "FORMAT", "csv (PyTorch's compute_comms CSV; the default) or table"},
    {"--output", "FILE", "write to FILE (whole or not at all; '-' is stdout) instead of stdout"},
    for_option,
};

constexpr command_help lower_help{
    .name = "lower",
    .arguments = "FILE.csv",
    .summary =
        "Lower a compute-only pipeline order (PyTorch's CSV, '-' for stdin) to what PyTorch's\n"
        "runtime executes: FSDP UNSHARD/RESHARD, REDUCE_GRAD, SEND/RECV between ranks\n"
        "(_prepare_schedule_with_comms; load it with _load_csv(path, format=\"compute_comms\")).",
    .options = lower_options_list,
    .details =
        "The order is validated first: exit 1 with the report (on stderr) if it is invalid.\n"
        "The output is then validated under --transport; for an order 'ppsched generate'\n"
        "made, it is byte for byte 'ppsched generate NAME ... --lower'. See docs/pytorch.md.\n"
        "Exit status 0 written, 1 invalid order, 2 unreadable file or bad options.",
};

} // namespace

int cmd_lower(std::span<const std::string> argv, output& out) {
    const args a = parse(argv, lower_help);
    if (a.help_requested()) {
        out.out = help_text(lower_help);
        return exit_ok;
    }
    a.expect_positionals(1, 1, "FILE.csv");
    const std::string format = a.value("--format").value_or("csv");
    if (format != "csv" && format != "table")
        throw usage_error("--format must be csv or table, got '" + printable(format) + "'");
    const lower_options options = read_lower_options(a);
    const std::string& path = a.positionals()[0];
    const std::string source = source_name(path);
    const order o =
        read_order_file(a, io::read_csv_rows(read_input(path), source), source).to_order(source);
    for (const auto& row : o)
        for (const slot& s : row)
            if (s.has_value() && !is_compute(s->kind()))
                throw parse_error(source + ": already lowered (it has " + to_string(*s) +
                                      "); lower takes a compute-only order",
                                  0, 0);
    check_reader(a, o.cfg(), out);
    const validation_report report = validate(o, validate_options{.idle_slots_in_lowered = false});
    if (!report) {
        out.err += "ppsched: lower: " + source + " is not a valid order:\n" + to_string(report) +
                   cycle_lines(report, transport::eager) + "\n" +
                   io::format_step_table(o, first_error_step(report));
        return exit_failure;
    }
    const order lowered = lower(o, options);
    // The lowering keeps a valid order valid; checked again under the transport asked for.
    const validation_report after =
        validate(lowered, validate_options{.transport = options.transport});
    if (!after) {
        out.err += "ppsched: lower: the lowered order fails under " +
                   std::string(to_string_view(options.transport)) + " transport:\n" +
                   to_string(after) + cycle_lines(after, options.transport);
        return exit_failure;
    }
    std::string text = format == "csv" ? io::write_csv(lowered) : io::format_step_table(lowered);
    const std::string target = a.value("--output").value_or("-");
    if (target == "-")
        out.out = std::move(text);
    else
        write_output_file(target, text);
    return exit_ok;
}

} // namespace ppsched::cli
