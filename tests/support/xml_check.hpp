#pragma once
// A small XML well-formedness check for the SVG tests (the CLI tests run xmllint on the files
// the tool writes; this catches the same mistakes inside the unit tests): tags nest and close,
// attribute values are quoted, `&` starts an entity, `<` never appears in text or attributes.
// Returns an empty string when the document is well formed, else what is wrong and where.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace test_support {

namespace xml_detail {
inline bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == ':' || c == '.';
}
// Checks the text between markup: every `&` starts `&name;` or `&#digits;`.
inline bool entities_ok(std::string_view text) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '<') return false;
        if (text[i] != '&') continue;
        std::size_t j = i + 1;
        while (j < text.size() && (is_name_char(text[j]) || text[j] == '#')) ++j;
        if (j == i + 1 || j >= text.size() || text[j] != ';') return false;
        i = j;
    }
    return true;
}
} // namespace xml_detail

inline std::string xml_problem(std::string_view doc) {
    using namespace xml_detail;
    std::vector<std::string> open;
    std::size_t i = 0, roots = 0;
    auto where = [&](std::size_t at) { return " at offset " + std::to_string(at); };
    while (i < doc.size()) {
        const std::size_t lt = doc.find('<', i);
        if (!entities_ok(doc.substr(i, lt == std::string_view::npos ? doc.size() - i : lt - i)))
            return "bad text" + where(i);
        if (lt == std::string_view::npos) break;
        if (doc.substr(lt, 2) == "<?") {
            const std::size_t end = doc.find("?>", lt);
            if (end == std::string_view::npos) return "unclosed <?" + where(lt);
            i = end + 2;
            continue;
        }
        if (doc.substr(lt, 4) == "<!--") {
            const std::size_t end = doc.find("-->", lt);
            if (end == std::string_view::npos) return "unclosed comment" + where(lt);
            i = end + 3;
            continue;
        }
        const bool closing = doc.substr(lt, 2) == "</";
        std::size_t j = lt + (closing ? 2 : 1);
        const std::size_t name_start = j;
        while (j < doc.size() && is_name_char(doc[j])) ++j;
        const std::string name(doc.substr(name_start, j - name_start));
        if (name.empty()) return "tag without a name" + where(lt);
        if (closing) {
            while (j < doc.size() && doc[j] == ' ') ++j;
            if (j >= doc.size() || doc[j] != '>') return "bad closing tag" + where(lt);
            if (open.empty() || open.back() != name)
                return "</" + name + "> does not close the open element" + where(lt);
            open.pop_back();
            i = j + 1;
            continue;
        }
        // Attributes: name="value" (or '...') separated by whitespace.
        std::vector<std::string> seen;
        for (;;) {
            const std::size_t before = j;
            while (j < doc.size() && (doc[j] == ' ' || doc[j] == '\n' || doc[j] == '\t')) ++j;
            if (j >= doc.size()) return "unterminated tag" + where(lt);
            if (doc[j] == '>' || doc.substr(j, 2) == "/>") break;
            if (j == before) return "attributes must be separated by space" + where(j);
            const std::size_t a = j;
            while (j < doc.size() && is_name_char(doc[j])) ++j;
            const std::string attr(doc.substr(a, j - a));
            if (attr.empty() || j >= doc.size() || doc[j] != '=') return "bad attribute" + where(a);
            for (const auto& s : seen)
                if (s == attr) return "repeated attribute " + attr + where(a);
            seen.push_back(attr);
            ++j;
            if (j >= doc.size() || (doc[j] != '"' && doc[j] != '\'')) return "unquoted" + where(j);
            const char q = doc[j];
            const std::size_t end = doc.find(q, j + 1);
            if (end == std::string_view::npos) return "unterminated value" + where(j);
            if (!entities_ok(doc.substr(j + 1, end - j - 1))) return "bad value" + where(j);
            j = end + 1;
        }
        if (open.empty() && ++roots > 1) return "more than one root element" + where(lt);
        if (doc[j] == '/') {
            i = j + 2;
        } else {
            open.push_back(name);
            i = j + 1;
        }
    }
    if (!open.empty()) return "unclosed <" + open.back() + ">";
    if (roots != 1) return "no root element";
    return {};
}

} // namespace test_support
