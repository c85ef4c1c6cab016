#pragma once
/// \file output_file.hpp
/// Writing an output file of a `ppsched` subcommand (`--output FILE`) whole or not at all.
///
/// - A regular file (or a name not yet taken): the text goes to a temporary file in the same
///   directory, renamed over FILE only once complete, so an error never leaves a partial
///   picture or trace behind.
/// - A symbolic link is followed: its target is written that way (the link stays a link).
/// - Anything else that exists (a device such as `/dev/null` or `/dev/full`, a FIFO, a
///   socket) is opened and written through; it is never replaced by a regular file.
/// - `-` is standard output (the caller's `output::out`, printed only on success).

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

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
        throw usage_error("cannot write " + printable(path) + ": " + reason);
    }
    std::size_t done = 0;
    while (done < text.size()) {
        const ::ssize_t n = ::write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            const std::string reason = n < 0 ? std::strerror(errno) : "nothing written";
            ::close(fd);
            throw usage_error("cannot write " + printable(path) + ": " + reason);
        }
        done += static_cast<std::size_t>(n);
    }
    if (::close(fd) != 0) {
        const std::string reason = std::strerror(errno);
        throw usage_error("cannot write " + printable(path) + ": " + reason);
    }
}

/// The file a chain of symbolic links ends at (the path itself when it is no link); the
/// last target need not exist. Throws `usage_error` on a loop.
inline std::filesystem::path follow_links(std::filesystem::path p, const std::string& shown) {
    namespace fs = std::filesystem;
    for (int hops = 0; hops < 40; ++hops) {
        std::error_code ec;
        if (!fs::is_symlink(fs::symlink_status(p, ec))) return p;
        fs::path target = fs::read_symlink(p, ec);
        if (ec) throw usage_error("cannot write " + printable(shown) + ": " + ec.message());
        p = target.is_absolute() ? target : p.parent_path() / target;
    }
    throw usage_error("cannot write " + printable(shown) + ": too many levels of symbolic links");
}

} // namespace detail

/// Writes `text` to `path` (see the file comment: atomic for regular files, written through
/// for devices and FIFOs, links followed). Throws `usage_error` (`cannot write PATH: reason`)
/// when the directory does not exist or is not writable, `path` is a directory, or a write
/// fails; no temporary file is left behind then.
inline void write_output_file(const std::string& path, std::string_view text) {
    namespace fs = std::filesystem;
    if (path.empty()) throw usage_error("--output needs a file name");
    const std::string shown = printable(path);
    const fs::path target = detail::follow_links(fs::path(path), path);
    std::error_code ec;
    const fs::file_status st = fs::status(target, ec);
    if (fs::is_directory(st)) throw usage_error("cannot write " + shown + ": is a directory");
    if (fs::exists(st) && !fs::is_regular_file(st)) {
        detail::write_through(target.string(), text);
        return;
    }
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec))
        throw usage_error("cannot write " + shown + ": directory " + printable(dir.string()) +
                          " does not exist");
    const fs::path temp =
        dir / ("." + target.filename().string() + ".tmp" + std::to_string(::getpid()));
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        if (!out) {
            const std::string reason = std::strerror(errno);
            throw usage_error("cannot write " + shown + ": " + reason);
        }
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        out.close();
        if (!out) {
            fs::remove(temp, ec);
            throw usage_error("cannot write " + shown + ": write failed (disk full?)");
        }
    }
    fs::rename(temp, target, ec);
    if (ec) {
        const std::string reason = ec.message();
        fs::remove(temp, ec);
        throw usage_error("cannot write " + shown + ": " + reason);
    }
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
