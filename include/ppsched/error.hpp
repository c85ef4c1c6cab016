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

/// The length of the well-formed UTF-8 character at `text[i]` (a byte >= 0x80), or 0.
[[nodiscard]] inline std::size_t utf8_length(std::string_view text, std::size_t i) {
    const auto at = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    const unsigned char c = at(i);
    const std::size_t n = c >= 0xC2 && c <= 0xDF   ? 2
                          : c >= 0xE0 && c <= 0xEF ? 3
                          : c >= 0xF0 && c <= 0xF4 ? 4
                                                   : 0;
    if (n == 0 || i + n > text.size()) return 0;
    for (std::size_t k = 1; k < n; ++k)
        if ((at(i + k) & 0xC0) != 0x80) return 0;
    const unsigned char d = at(i + 1);
    // Overlong forms, surrogates and code points above U+10FFFF.
    if ((c == 0xE0 && d < 0xA0) || (c == 0xED && d > 0x9F) || (c == 0xF0 && d < 0x90) ||
        (c == 0xF4 && d > 0x8F))
        return 0;
    return n;
}

/// `text` fit for a one-line message: control characters (`\n`, `\x1b`, DEL) and bytes that
/// are not UTF-8 escaped, and cut to `max_length` bytes with `...` (an input echoed in an error
/// must not move the terminal's cursor, fill the screen or break the terminal's decoding).
[[nodiscard]] inline std::string printable(std::string_view text, std::size_t max_length = 80) {
    std::string out;
    const auto escape = [&out](unsigned char c) {
        constexpr char hex[] = "0123456789abcdef";
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 0xF];
    };
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
            escape(c);
        } else if (c < 0x80) {
            out += static_cast<char>(c);
        } else if (const std::size_t n = utf8_length(text, i); n > 0) {
            // A whole UTF-8 character (never cut by the length limit).
            out.append(text.substr(i, n));
            i += n - 1;
        } else {
            escape(c); // not UTF-8: shown as a byte, not as a broken character
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
