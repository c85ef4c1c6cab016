#pragma once
/// \file io/detail/xml_text.hpp
/// XML (and HTML) text escaping, shared by the SVG pictures and the HTML report.

#include <string>
#include <string_view>

namespace ppsched::detail::text {

/// Appends `text` with the five XML special characters escaped. Control characters that XML 1.0
/// forbids become `?`, so any text (file names, user titles) yields a well-formed document.
inline void append_xml_escaped(std::string& out, std::string_view text) {
    for (const char c : text) {
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
