#pragma once
/// \file io/detail/json_text.hpp
/// JSON string literals, shared by the writers of JSON (traces, the HTML report's data, the
/// tool's `--format json`).

#include <cstddef>
#include <string>
#include <string_view>

#include "ppsched/io/detail/utf8_text.hpp"

namespace ppsched::detail::text {

/// Appends `s` as a JSON string literal: `"` and `\` escaped, control characters as `\u00XX`.
/// `html_safe` also writes `<`, `>` and `&` as `\u00XX`, so the literal can stand inside an
/// HTML `<script>` element without closing it. Bytes that are not well-formed UTF-8 become
/// U+FFFD.
inline void append_json_string(std::string& out, std::string_view s, bool html_safe = false) {
    constexpr char digits[] = "0123456789abcdef";
    out += '"';
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        const auto u = static_cast<unsigned char>(c);
        if (u >= 0x80) {
            // JSON is UTF-8: a malformed byte becomes U+FFFD.
            const std::size_t n = utf8_sequence_length(s, i);
            if (n == 0) {
                out += utf8_replacement;
            } else {
                out.append(s.substr(i, n));
                i += n - 1;
            }
        } else if (c == '"' || c == '\\') {
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
