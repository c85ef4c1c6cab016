// The `ppsched` command-line tool: dispatches to the subcommands of commands.hpp and turns
// every error into `ppsched: error: ...` on stderr with exit status 2 (bad usage or input).

#include <cstdio>
#include <exception>
#include <iostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <ppsched/error.hpp>
#include <ppsched/registry.hpp>

#include "cli.hpp"
#include "commands.hpp"

#ifndef PPSCHED_VERSION
#define PPSCHED_VERSION "unknown"
#endif

namespace {

using namespace ppsched::cli;

std::string main_help() {
    std::string out =
        "usage: ppsched [--help] [--version] <command> [options] [arguments]\n\n"
        "Pipeline-parallel training schedules (PyTorch's torch.distributed.pipelining "
        "in C++20).\n\ncommands:\n";
    std::size_t width = 0;
    for (const command& c : commands) width = c.name.size() > width ? c.name.size() : width;
    for (const command& c : commands)
        out += "  " + std::string(c.name) + std::string(width - c.name.size() + 2, ' ') +
               std::string(c.summary) + "\n";
    out += "\nRun 'ppsched <command> --help' for a command's options.\n"
           "Exit status: 0 success, 1 the input was read but failed a check, 2 bad usage or "
           "input.\n";
    return out;
}

// A library error without the C++ function that raised it ("ppsched::tune: the memory
// limit ..." -> "the memory limit ..."): a user of the tool has no use for it.
std::string_view without_function(std::string_view message) {
    constexpr std::string_view prefix = "ppsched::";
    if (message.substr(0, prefix.size()) != prefix) return message;
    std::size_t at = prefix.size();
    while (at < message.size() &&
           ((message[at] >= 'a' && message[at] <= 'z') || message[at] == '_' ||
            message[at] == ':' || (message[at] >= '0' && message[at] <= '9')))
        ++at;
    // "ppsched::io::read_pytorch_trace: " ends at the last ':' before the space.
    if (at + 1 < message.size() && message[at] == ' ' && message[at - 1] == ':')
        return message.substr(at + 1);
    return message;
}

// A library error as a user of the tool reads it: without the C++ function, and naming a
// schedule as the user named it ("one_f_one_b: microbatches ..." -> "1F1B: microbatches ...").
std::string for_user(std::string_view message) {
    std::string text(without_function(message));
    for (const ppsched::schedule_entry& e : ppsched::builtin_schedules().entries()) {
        const std::string prefix = e.name + ": ";
        if (text.starts_with(prefix)) return e.pytorch_name + ": " + text.substr(prefix.size());
    }
    return text;
}

int fail(std::string_view message, std::string_view hint = {}) {
    std::string text = "ppsched: error: " + std::string(message) + "\n";
    if (!hint.empty()) text += std::string(hint) + "\n";
    std::cerr << text << std::flush;
    return exit_usage;
}

int run(std::span<const std::string> argv) {
    if (argv.empty()) return fail("no command given", "Run 'ppsched --help' for the commands.");
    const std::string& first = argv[0];
    if (first == "--help" || first == "-h" || first == "help") {
        if (first == "help" && argv.size() > 1) {
            // `ppsched help show` is `ppsched show --help`.
            const std::vector<std::string> again{argv[1], "--help"};
            return run(again);
        }
        std::cout << main_help();
        return exit_ok;
    }
    if (first == "--version" || first == "-V") {
        if (argv.size() > 1)
            return fail("--version takes no argument, got '" + printable(argv[1]) + "'",
                        "Run 'ppsched --help' for usage.");
        std::cout << "ppsched " PPSCHED_VERSION "\n";
        return exit_ok;
    }
    const command* cmd = nullptr;
    for (const command& c : commands)
        if (c.name == first) cmd = &c;
    if (cmd == nullptr) {
        if (!first.empty() && first[0] == '-')
            return fail("unknown option '" + printable(first) + "'",
                        "Run 'ppsched --help' for usage.");
        return fail("unknown command '" + printable(first) + "'",
                    "Run 'ppsched --help' for the commands.");
    }

    output out;
    int status = exit_ok;
    try {
        status = cmd->run(argv.subspan(1), out);
    } catch (const check_failure& e) {
        std::cerr << "ppsched: error: " << e.what() << std::flush;
        return exit_failure;
    } catch (const usage_error& e) {
        return fail(for_user(e.what()),
                    "Run 'ppsched " + std::string(cmd->name) + " --help' for usage.");
    } catch (const output_error& e) {
        return fail(e.what());
    } catch (const ppsched::parse_error& e) {
        // (Not for_user: a parse error starts with the file's name, which may be any word.)
        return fail(without_function(e.what()));
    } catch (const ppsched::config_error& e) {
        return fail(for_user(e.what()));
    }
    // Only now, with the whole output built, does anything reach stdout.
    std::cout << out.out << std::flush;
    std::cerr << out.err << std::flush;
    return status;
}

} // namespace

int main(int argc, char** argv) {
    try {
        const std::vector<std::string> args(argv + 1, argv + argc);
        const int status = run(args);
        std::cout.flush();
        if (!std::cout) {
            // As for a failing --output file: exit status 2.
            std::cerr << "ppsched: error: cannot write to standard output\n";
            return exit_usage;
        }
        return status;
    } catch (const std::bad_alloc&) {
        // Not a failed check of a valid input (exit 1): the input or the configuration asks
        // for more memory than the machine has.
        std::cerr << "ppsched: error: out of memory (the input or the configuration is too large "
                     "for this machine)\n";
        return exit_usage;
    } catch (const std::exception& e) {
        std::cerr << "ppsched: error: internal error: " << e.what() << "\n";
        return exit_failure;
    }
}
