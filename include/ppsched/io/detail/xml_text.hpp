#pragma once
/// \file io/detail/xml_text.hpp
/// XML (and HTML) text escaping, shared by the SVG pictures and the HTML report.

#include <cstddef>
#include <string>
#include <string_view>

#include "ppsched/io/detail/utf8_text.hpp"

namespace ppsched::detail::text {

/// Appends `text` with the five XML special characters escaped. Control characters that XML 1.0
/// forbids become `?`; bytes that are not well-formed UTF-8, and the non-characters U+FFFE and
/// U+FFFF, become U+FFFD. So any text (file names, user titles) yields a well-formed document.
inline void append_xml_escaped(std::string& out, std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const char c = text[i];
        const std::size_t n = utf8_sequence_length(text, i);
        if (n == 0) {
            out += utf8_replacement;
            ++i;
            continue;
        }
        // XML 1.0 has no U+FFFE or U+FFFF (EF BF BE, EF BF BF): replaced as well.
        if (n == 3 && c == '\xEF' && text[i + 1] == '\xBF' &&
            (text[i + 2] == '\xBE' || text[i + 2] == '\xBF')) {
            out += utf8_replacement;
            i += 3;
            continue;
        }
        if (n > 1) {
            out.append(text.substr(i, n));
            i += n;
            continue;
        }
        ++i;
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&quot;";
            break;
        case '\'':
            out += "&apos;";
            break;
        default:
            if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
                out += '?';
            else
                out += c;
        }
    }
}

/// `text` with XML special characters escaped (see `append_xml_escaped`).
[[nodiscard]] inline std::string xml_escape(std::string_view text) {
    std::string out;
    append_xml_escaped(out, text);
    return out;
}

} // namespace ppsched::detail::text
