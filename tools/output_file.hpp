#pragma once
/// \file output_file.hpp
/// Writing an output file of a `ppsched` subcommand (`--output FILE`) whole or not at all.
///
/// - A regular file (or a name not yet taken): the text goes to a temporary file in the same
///   directory, renamed over FILE only once complete, so an error never leaves a partial
///   picture or trace behind. An existing file the user may not write is refused (the rename
///   alone would replace it).
/// - A symbolic link is followed: its target is written that way (the link stays a link).
/// - Anything else that exists (a device such as `/dev/null` or `/dev/full`, a FIFO, a
///   socket) is opened and written through; it is never replaced by a regular file.
/// - `-` is standard output (the caller's `output::out`, printed only on success).

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "cli.hpp"

namespace ppsched::cli {

namespace detail {

/// Writes `text` into an existing non-regular file (device, FIFO) through one descriptor.
inline void write_through(const std::string& path, std::string_view text) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        const std::string reason = std::strerror(errno);
        throw output_error("cannot write " + printable(path) + ": " + reason);
    }
    std::size_t done = 0;
    while (done < text.size()) {
        const ::ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const std::string reason = n < 0 ? std::strerror(errno) : "nothing written";
            ::close(fd);
            throw output_error("cannot write " + printable(path) + ": " + reason);
        }
        done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) {
        const std::string reason = std::strerror(errno);
        throw output_error("cannot write " + printable(path) + ": " + reason);
    }
}

/// The file a chain of symbolic links ends at (the path itself when it is no link); the
/// last target need not exist. Throws `output_error` on a loop.
inline std::filesystem::path follow_links(std::filesystem::path p, const std::string& shown) {
    namespace fs = std::filesystem;
    for (int hops = 0; hops < 40; ++hops) {
        std::error_code ec;
        if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
        fs::path target = fs::read_symlink(p, ec);
        if (ec) throw output_error("cannot write " + printable(shown) + ": " + ec.message());
        // /dev/stdout -> /proc/self/fd/1 -> "pipe:[1234]": a descriptor's magic link names no
        // path; the link itself opens the pipe or socket.
        if (target.native().find(":[") != std::string::npos) return p;
        p = target.is_absolute() ? target : p.parent_path() / target;
    }
    throw output_error("cannot write " + printable(shown) + ": too many levels of symbolic links");
}

/// Whether `a` and `b` name one file (relative or not, through links or `..`); the paths
/// themselves are compared where they cannot be resolved.
inline bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
    namespace fs = std::filesystem;
    std::error_code ea, eb;
    const fs::path ca = fs::weakly_canonical(fs::absolute(a, ea), ea),
                   cb = fs::weakly_canonical(fs::absolute(b, eb), eb);
    return ea || eb ? a == b : ca == cb;
}

/// Throws `usage_error` when `path` (a regular file or none yet) is a file this run read
/// (`files_read`): `--output order.csv` after `--costs order.csv` would replace the input.
inline void expect_not_read(const std::filesystem::path& path, const std::string& shown) {
    for (const std::string& input : files_read())
        if (same_file(input, path))
            throw usage_error("an output names the file " + shown +
                              " that this command reads: it would be overwritten");
}

} // namespace detail

/// Throws `usage_error` when one of `flags` of `a` is `-`: `command` prints its report on
/// standard output, so its files need names.
inline void expect_file_names(const args& a, std::string_view command,
                              std::initializer_list<std::string_view> flags) {
    for (const std::string_view flag : flags)
        if (a.value(flag) == "-")
            throw usage_error(std::string(command) +
                              " prints its report on standard output: give " + std::string(flag) +
                              " a file name, not '-'");
}

namespace detail {
/// An output as `write_output_files` writes it: the file a path leads to, whether it is
/// written through (a device or FIFO) or replaced by a temporary file, and the text.
struct target_file {
    std::filesystem::path target, temp;
    std::string shown;
    bool through = false;
    std::string_view text;
};

/// The checks of an output `path` (number `index` of a command's outputs) that need no
/// writing: not a directory, its directory exists and takes new files, not a file this run
/// read, an existing file the user may write. Throws `output_error` (or `usage_error`).
inline target_file check_target(const std::string& path, std::size_t index) {
    namespace fs = std::filesystem;
    if (path.empty()) throw usage_error("an output needs a file name, got ''");
    target_file t;
    t.shown = printable(path);
    t.target = follow_links(fs::path(path), path);
    std::error_code ec;
    const fs::file_status st = fs::status(t.target, ec);
    if (fs::is_directory(st)) throw output_error("cannot write " + t.shown + ": is a directory");
    t.through = fs::exists(st) && !fs::is_regular_file(st);
    if (t.through) return t;
    const fs::path dir = t.target.has_parent_path() ? t.target.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec))
        throw output_error("cannot write " + t.shown + ": directory " + printable(dir.string()) +
                           " does not exist");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) {
        const std::string reason = std::strerror(errno);
        throw output_error("cannot write " + t.shown + ": cannot create a file in " +
                           printable(dir.string()) + " (" + reason + ")");
    }
    t.temp = dir / ("." + t.target.filename().string() + ".tmp" + std::to_string(::getpid()) + "." +
                    std::to_string(index));
    expect_not_read(t.target, t.shown);
    // An existing file the user may not write is not replaced (a rename would, as the
    // directory allows it): as a redirection or `cp` would, refuse it.
    if (fs::exists(st) && ::access(t.target.c_str(), W_OK) != 0) {
        const std::string reason = std::strerror(errno);
        throw output_error("cannot write " + t.shown + ": " + reason);
    }
    return t;
}
} // namespace detail

/// Throws what `write_output_files` would for each output of `flags` of `a` (but `-`) that
/// could not be written: a command with a long search checks its outputs before it starts,
/// so that a mistyped directory does not cost the search (the writing checks them again).
inline void expect_writable_outputs(const args& a, std::initializer_list<std::string_view> flags) {
    std::size_t index = 0;
    for (const std::string_view flag : flags)
        if (const auto path = a.value(flag); path && *path != "-")
            (void)detail::check_target(*path, index++);
}

/// Throws `usage_error` when two of `flags` of `a` name one regular file, or one names a
/// file the command read: a command that writes its files after a long search checks this
/// before it starts (`write_output_files` refuses it again when writing).
inline void expect_distinct_files(const args& a, std::initializer_list<std::string_view> flags) {
    std::vector<std::string> seen;
    for (const std::string_view flag : flags) {
        const auto path = a.value(flag);
        if (!path) continue;
        if (path->empty()) throw usage_error(std::string(flag) + " needs a file name, got ''");
        // A device or FIFO (`/dev/null` twice) is written through, once per output.
        std::error_code ec;
        const std::filesystem::file_status st = std::filesystem::status(*path, ec);
        if (std::filesystem::exists(st) && !std::filesystem::is_regular_file(st)) continue;
        for (const std::string& other : seen)
            if (detail::same_file(other, *path))
                throw usage_error("two outputs name the same file, " + printable(*path));
        detail::expect_not_read(*path, printable(*path));
        seen.push_back(*path);
    }
}

/// Writes each (path, text) of `files` (see the file comment: atomic for regular files, written
/// through for devices and FIFOs, links followed), all or none of the regular files: every
/// target is checked first, the regular files' texts go to temporary files, then the devices
/// and FIFOs are written, and only then are the temporary files renamed into place. Throws
/// `output_error` (`cannot write PATH: reason`) when a directory does not exist or is not
/// writable, a path is a directory, or a write fails; no temporary file (and no regular
/// output) is left behind then.
inline void write_output_files(std::span<const std::pair<std::string, std::string_view>> files) {
    namespace fs = std::filesystem;
    std::vector<detail::target_file> targets;
    for (const auto& [path, text] : files) {
        detail::target_file t = detail::check_target(path, targets.size());
        t.text = text;
        // Two outputs into one regular file: the second would silently replace the first.
        for (const detail::target_file& other : targets)
            if (!t.through && !other.through && detail::same_file(other.target, t.target))
                throw usage_error("two outputs name the same file, " + t.shown);
        targets.push_back(std::move(t));
    }
    auto remove_temps = [&] {
        std::error_code ec;
        for (const detail::target_file& t : targets)
            if (!t.through) fs::remove(t.temp, ec);
    };
    for (const detail::target_file& t : targets) {
        if (t.through) continue;
        std::ofstream out(t.temp, std::ios::binary | std::ios::trunc);
        if (!out) {
            const std::string reason = std::strerror(errno);
            remove_temps();
            throw output_error("cannot write " + t.shown + ": cannot create a file in " +
                               printable(t.temp.parent_path().string()) + " (" + reason + ")");
        }
        out.write(t.text.data(), static_cast<std::streamsize>(t.text.size()));
        out.close();
        if (!out) {
            remove_temps();
            throw output_error("cannot write " + t.shown + ": write failed (disk full?)");
        }
    }
    try {
        for (const detail::target_file& t : targets)
            if (t.through) detail::write_through(t.target.string(), t.text);
    } catch (...) {
        remove_temps();
        throw;
    }
    // The renames come last and rarely fail (a directory that refuses to replace an existing
    // file); one that does after others leaves those written.
    for (const detail::target_file& t : targets) {
        if (t.through) continue;
        std::error_code ec;
        fs::rename(t.temp, t.target, ec);
        if (ec) {
            const std::string reason = ec.message();
            remove_temps();
            throw output_error("cannot write " + t.shown + ": " + reason);
        }
    }
}

/// `write_output_files` of (path, text) pairs that own their texts.
inline void write_output_files(const std::vector<std::pair<std::string, std::string>>& files) {
    std::vector<std::pair<std::string, std::string_view>> views;
    for (const auto& [path, text] : files) views.emplace_back(path, text);
    write_output_files(std::span<const std::pair<std::string, std::string_view>>(views));
}

/// Writes `text` to `path`: `write_output_files` with one file.
inline void write_output_file(const std::string& path, std::string_view text) {
    const std::array<std::pair<std::string, std::string_view>, 1> one{{{path, text}}};
    write_output_files(one);
}

/// `--output` handled the same way everywhere: `-` appends `text` to `out.out` (printed only
/// once the command succeeds), any other path is written with `write_output_file`.
inline void write_output(const std::string& path, std::string_view text, output& out) {
    if (path == "-")
        out.out += text;
    else
        write_output_file(path, text);
}

} // namespace ppsched::cli
