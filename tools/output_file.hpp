#pragma once
/// \file output_file.hpp
/// Writing an output file of a `ppsched` subcommand (`--output FILE`) whole or not at all: the
/// text goes to a temporary file in the same directory, which is renamed over FILE only once it
/// is complete, so an error never leaves a partial picture or trace behind.

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>

#include <unistd.h>

#include "cli.hpp"

namespace ppsched::cli {

/// Writes `text` to `path` atomically (temporary file, then rename). Throws `usage_error`
/// (`cannot write PATH: reason`) when the directory does not exist or is not writable, or
/// `path` is a directory; the temporary file is removed then.
inline void write_output_file(const std::string& path, std::string_view text) {
    namespace fs = std::filesystem;
    if (path.empty()) throw usage_error("--output needs a file name");
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw usage_error("cannot write " + path + ": is a directory");
    const fs::path target(path);
    const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
    if (!fs::is_directory(dir, ec))
        throw usage_error("cannot write " + path + ": directory " + dir.string() +
                          " does not exist");
    const fs::path temp =
        dir / ("." + target.filename().string() + ".tmp" + std::to_string(::getpid()));
    {
        std::ofstream out(temp, std::ios::binary | std::ios::trunc);
        if (!out) {
            const std::string reason = std::strerror(errno);
            throw usage_error("cannot write " + path + ": " + reason);
        }
        out.write(text.data(), static_cast<std::streamsize>(text.size()));
        out.close();
        if (!out) {
            fs::remove(temp, ec);
            throw usage_error("cannot write " + path + ": write failed (disk full?)");
        }
    }
    fs::rename(temp, target, ec);
    if (ec) {
        const std::string reason = ec.message();
        fs::remove(temp, ec);
        throw usage_error("cannot write " + path + ": " + reason);
    }
}

} // namespace ppsched::cli
