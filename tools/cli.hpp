#pragma once
/// \file cli.hpp
/// The small argument parser shared by the `ppsched` subcommands.
///
/// A subcommand declares its options as a static array of `cli::option`, describes itself in a
/// `cli::command_help`, and calls `cli::parse(argv, help)`. Options are `--name value`,
/// `--name=value` or switches `--name`; `--` ends the options; `-` alone is a positional (stdin).
/// Bad usage throws `cli::usage_error`; `main` prints it as `ppsched: error: ...` and exits 2.

#include <charconv>
#include <cstddef>
#include <iostream>
#include <iterator>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <ppsched/error.hpp>
#include <ppsched/io/csv.hpp>

namespace ppsched::cli {

/// Exit status for success.
inline constexpr int exit_ok = 0;
/// Exit status when the command ran but found a problem in its input (e.g. an invalid schedule).
inline constexpr int exit_failure = 1;
/// Exit status for bad usage or unreadable input.
inline constexpr int exit_usage = 2;

/// Bad command-line usage (unknown option, missing value, wrong number of arguments).
class usage_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// An output could not be written (a missing directory, a full disk or device): `main` prints
/// the message on stderr and exits with `exit_usage`, without the usage hint.
class output_error : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// The input was read fine but failed a check (an invalid order): `main` prints the message
/// on stderr (`ppsched: error: ...`) and exits with `exit_failure`.
class check_failure : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

/// What a subcommand prints. `main` writes it only when the subcommand returns normally, so an
/// error never leaves a partial table on stdout.
struct output {
    std::string out; ///< for stdout
    std::string err; ///< for stderr (warnings, notes)
};

/// One option a subcommand accepts.
struct option {
    std::string_view name;       ///< with dashes: `--error-step`
    std::string_view value_name; ///< `N`, `FILE`; empty for a switch that takes no value
    std::string_view help;       ///< one line
    /// When set, this option is another name of `alias_of` (`--comm` of `--p2p`): it is
    /// stored under that name, so `args` only ever asks for the canonical one.
    std::string_view alias_of = {};
};

/// How a subcommand describes itself in `--help`.
struct command_help {
    std::string_view name;      ///< `show`
    std::string_view arguments; ///< positional synopsis: `FILE.csv`
    std::string_view summary;   ///< one line
    std::span<const option> options;
    std::string_view details = {}; ///< optional paragraph after the options
};

/// The `--help` text of a subcommand.
// Built with `+=` of views only: g++ 12 at -O2 gives false -Wrestrict warnings on
// `"literal" + std::string(...)`.
[[nodiscard]] inline std::string help_text(const command_help& h) {
    std::string out = "usage: ppsched ";
    out += h.name;
    if (!h.options.empty()) out += " [options]";
    if (!h.arguments.empty()) {
        out += ' ';
        out += h.arguments;
    }
    out += "\n\n";
    out += h.summary;
    out += "\n\noptions:\n";
    std::vector<std::string> names;
    std::size_t width = std::string_view("-h, --help").size();
    for (const option& o : h.options) {
        std::string n(o.name);
        if (!o.value_name.empty()) {
            n += ' ';
            n += o.value_name;
        }
        width = n.size() > width ? n.size() : width;
        names.push_back(std::move(n));
    }
    // A description wraps at 100 columns (and at each '\n' in it), its lines under its first.
    auto line = [&](std::string_view n, std::string_view text) {
        const std::size_t indent = width + 4;
        const std::size_t room = indent + 30 < 100 ? 100 - indent : 30;
        out += "  ";
        out += n;
        out.append(width - n.size() + 2, ' ');
        std::size_t used = 0;
        while (!text.empty()) {
            const std::size_t brk = text.find('\n');
            const std::string_view para = text.substr(0, brk);
            text = brk == std::string_view::npos ? std::string_view{} : text.substr(brk + 1);
            std::size_t at = 0;
            while (at < para.size()) {
                std::size_t end = para.find(' ', at);
                if (end == std::string_view::npos) end = para.size();
                const std::string_view word = para.substr(at, end - at);
                if (used > 0 && used + 1 + word.size() > room) {
                    out += '\n';
                    out.append(indent, ' ');
                    used = 0;
                }
                if (used > 0) {
                    out += ' ';
                    ++used;
                }
                out += word;
                used += word.size();
                at = end + 1;
            }
            if (!text.empty()) {
                out += '\n';
                out.append(indent, ' ');
                used = 0;
            }
        }
        out += '\n';
    };
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (h.options[i].alias_of.empty()) {
            line(names[i], h.options[i].help);
            continue;
        }
        std::string same = "same as ";
        same += h.options[i].alias_of;
        line(names[i], same);
    }
    line("-h, --help", "show this help and exit");
    if (!h.details.empty()) {
        out += '\n';
        out += h.details;
        out += '\n';
    }
    return out;
}

/// "1 rank", "4 ranks" (see `ppsched::detail::counted`).
[[nodiscard]] inline std::string counted(long long n, std::string_view one, std::string_view many) {
    return ppsched::detail::counted(n, one, many);
}

/// The files this run has read (`read_input`): no output may replace one of them
/// (`expect_distinct_files`, `write_output_files`). One command per process, so one list.
[[nodiscard]] inline std::vector<std::string>& files_read() {
    static std::vector<std::string> files;
    return files;
}

/// Reads all of standard input (at most `io::default_max_input_bytes`; see `io::read_stream`).
[[nodiscard]] inline std::string read_stdin() { return io::read_stream(std::cin, "<stdin>"); }

/// `text` fit for a one-line message (see `ppsched::detail::printable`).
[[nodiscard]] inline std::string printable(std::string_view text, std::size_t max_length = 80) {
    return ppsched::detail::printable(text, max_length);
}

/// Parses a non-negative decimal integer in [min, max]; `what` names it in the error.
[[nodiscard]] inline long long parse_integer(std::string_view text, std::string_view what,
                                             long long min, long long max) {
    long long v = 0;
    const char* first = text.data();
    const char* last = text.data() + text.size();
    const auto [end, ec] = std::from_chars(first, last, v);
    if (text.empty() || ec == std::errc::invalid_argument || end != last)
        throw usage_error(std::string(what) + " expects an integer, got '" + printable(text) + "'");
    if (ec == std::errc::result_out_of_range || v < min || v > max)
        throw usage_error(std::string(what) + " must be in [" + std::to_string(min) + ", " +
                          std::to_string(max) + "], got '" + printable(text) + "'");
    return v;
}

/// The parsed command line of one subcommand.
class args {
  public:
    /// True when `-h` or `--help` was given (then nothing else was checked).
    [[nodiscard]] bool help_requested() const noexcept { return help_; }
    /// The positional arguments, in order.
    [[nodiscard]] const std::vector<std::string>& positionals() const noexcept {
        return positionals_;
    }
    /// True when the option (switch or valued) was given.
    [[nodiscard]] bool has(std::string_view name) const { return find(name) != nullptr; }
    /// How many times the option was given.
    [[nodiscard]] std::size_t count(std::string_view name) const {
        std::size_t n = 0;
        for (const entry& e : options_) n += e.name == name ? 1U : 0U;
        return n;
    }
    /// How the user wrote option `name` (an alias such as `--comm` for `--p2p`), for messages.
    [[nodiscard]] std::string spelling(std::string_view name) const {
        const entry* e = find(name);
        return e ? e->spelled : std::string(name);
    }
    /// The value of a valued option (the last one given), if any.
    [[nodiscard]] std::optional<std::string> value(std::string_view name) const {
        const entry* e = find(name);
        return e ? std::optional<std::string>(e->value) : std::nullopt;
    }
    /// The value of an integer option in [min, max], or `fallback` when absent.
    [[nodiscard]] long long integer(std::string_view name, long long min, long long max,
                                    long long fallback) const {
        const entry* e = find(name);
        return e ? parse_integer(e->value, name, min, max) : fallback;
    }
    /// Requires between `min` and `max` positionals; `what` names them (`FILE.csv`).
    void expect_positionals(std::size_t min, std::size_t max, std::string_view what) const {
        if (positionals_.size() < min) throw usage_error("missing argument " + std::string(what));
        if (positionals_.size() > max)
            throw usage_error("unexpected argument '" + printable(positionals_[max]) + "'");
    }

  private:
    friend args parse(std::span<const std::string>, const command_help&);
    struct entry {
        std::string name, value;
        std::string spelled; ///< as given (differs from `name` for an alias)
    };
    [[nodiscard]] const entry* find(std::string_view name) const {
        const entry* found = nullptr;
        for (const entry& e : options_)
            if (e.name == name) found = &e;
        return found;
    }
    bool help_ = false;
    std::vector<std::string> positionals_;
    std::vector<entry> options_;
};

/// Parses a subcommand's arguments (everything after the subcommand name) against its options.
/// Throws `usage_error` for unknown options and missing values.
[[nodiscard]] inline args parse(std::span<const std::string> argv, const command_help& help) {
    args out;
    bool options_done = false;
    for (std::size_t i = 0; i < argv.size(); ++i) {
        const std::string& arg = argv[i];
        if (options_done || arg.size() < 2 || arg[0] != '-') {
            out.positionals_.push_back(arg);
            continue;
        }
        if (arg == "--") {
            options_done = true;
            continue;
        }
        if (arg == "-h" || arg == "--help") {
            out.help_ = true;
            return out;
        }
        const std::size_t eq = arg.find('=');
        std::string name = arg.substr(0, eq);
        const option* spec = nullptr;
        for (const option& o : help.options)
            if (o.name == name) spec = &o;
        if (spec == nullptr)
            throw usage_error("unknown option '" + printable(name) + "' for '" +
                              std::string(help.name) + "'");
        const std::string spelled = name;
        if (!spec->alias_of.empty()) name = std::string(spec->alias_of);
        if (spec->value_name.empty()) {
            if (eq != std::string::npos)
                throw usage_error("option '" + spelled + "' takes no value");
            out.options_.push_back({name, {}, spelled});
        } else if (eq != std::string::npos) {
            out.options_.push_back({name, arg.substr(eq + 1), spelled});
        } else {
            if (i + 1 >= argv.size())
                throw usage_error("option '" + spelled + "' needs a value " +
                                  std::string(spec->value_name));
            out.options_.push_back({name, argv[++i], spelled});
        }
    }
    return out;
}

} // namespace ppsched::cli
