#pragma once
/// \file io/detail/json_text.hpp
/// JSON string literals, shared by the writers of JSON (traces, the HTML report's data, the
/// tool's `--format json`).

#include <string>
#include <string_view>

namespace ppsched::detail::text {

/// Appends `s` as a JSON string literal: `"` and `\` escaped, control characters as `\u00XX`.
/// `html_safe` also writes `<`, `>` and `&` as `\u00XX`, so the literal can stand inside an
/// HTML `<script>` element without closing it.
inline void append_json_string(std::string& out, std::string_view s, bool html_safe = false) {
    constexpr char digits[] = "0123456789abcdef";
    out += '"';
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20 || (html_safe && (c == '<' || c == '>' || c == '&'))) {
            out += "\\u00";
            out += digits[u >> 4];
            out += digits[u & 0xF];
        } else {
            out += c;
        }
    }
    out += '"';
}

/// `s` as a JSON string literal.
[[nodiscard]] inline std::string json_string(std::string_view s) {
    std::string out;
    append_json_string(out, s);
    return out;
}

} // namespace ppsched::detail::text
