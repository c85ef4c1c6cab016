#pragma once
/// \file error.hpp
/// The error model: preconditions on configurations (`config_error`) and malformed text
/// (`parse_error`). Schedule data is never an error: `validate` reports it instead.

#include <charconv>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace ppsched {

/// Thrown at run time when a configuration breaks a documented precondition
/// (for example a schedule that cannot serve the requested configuration).
class config_error : public std::invalid_argument {
  public:
    using std::invalid_argument::invalid_argument;
};

/// Thrown when text (an action string, a CSV file, a cost file) cannot be read.
/// `line()` and `column()` are 1-based; 0 means "not applicable".
class parse_error : public std::runtime_error {
  public:
    parse_error(const std::string& message, std::size_t line, std::size_t column)
        : std::runtime_error(message), line_(line), column_(column) {}
    [[nodiscard]] std::size_t line() const noexcept { return line_; }
    [[nodiscard]] std::size_t column() const noexcept { return column_; }

  private:
    std::size_t line_;
    std::size_t column_;
};

namespace detail {

inline void append_piece(std::string& out, std::string_view s) { out += s; }
inline void append_piece(std::string& out, const char* s) { out += s; }
inline void append_piece(std::string& out, char c) { out += c; }
template <class T>
requires std::is_arithmetic_v<T>
void append_piece(std::string& out, T v) {
    if constexpr (std::is_floating_point_v<T>) {
        // The shortest text that reads back as v ("7.5", not "7.500000").
        char buf[64];
        const auto res = std::to_chars(buf, buf + sizeof buf, v);
        out.append(buf, res.ptr);
    } else {
        out += std::to_string(v);
    }
}

/// "1 rank", "4 ranks": `n` and the noun that agrees with it (for titles and messages).
[[nodiscard]] inline std::string counted(long long n, std::string_view one, std::string_view many) {
    std::string out = std::to_string(n);
    out += ' ';
    out += n == 1 ? one : many;
    return out;
}

/// `text` fit for a one-line message: control characters and bytes >= 0x7f escaped (`\n`,
/// `\x1b`), and cut to `max_length` characters with `...` (an input echoed in an error must
/// not move the terminal's cursor or fill the screen).
[[nodiscard]] inline std::string printable(std::string_view text, std::size_t max_length = 80) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (out.size() >= max_length) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f) {
            constexpr char hex[] = "0123456789abcdef";
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xF];
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

/// Deliberately not constexpr: reaching it during constant evaluation makes the compiler
/// stop and quote the failing `PPSCHED_EXPECTS` line, message included.
template <class... Pieces>
[[noreturn]] void precondition_failed(const Pieces&... pieces) {
    std::string message;
    (append_piece(message, pieces), ...);
    throw config_error(message);
}

} // namespace detail
} // namespace ppsched

/// Checks a precondition. The message pieces (string literals and numbers) are concatenated
/// into the `config_error` thrown at run time; in a constant expression the compiler rejects
/// the call and its diagnostic shows this line with the message.
#define PPSCHED_EXPECTS(cond, ...)                                                                 \
    do {                                                                                           \
        if (!(cond)) ::ppsched::detail::precondition_failed(__VA_ARGS__);                          \
    } while (false)
