#pragma once
// Reads the conformance cases.json files: an array of objects whose values are strings,
// numbers, null, or nested objects kept as raw text. A reader for exactly that shape, so the
// tests need no JSON library.

#include <cctype>
#include <cstddef>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ppsched_test {

/// One entry of a cases.json (nested values such as `params` kept as raw JSON text).
struct torch_case {
    std::string schedule, status, message, compute, comms, params;
    int ranks = 0, microbatches = 0, stages_per_rank = 0;
};

namespace detail {
inline void skip_ws(const std::string& s, std::size_t& i) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
}
inline void expect(const std::string& s, std::size_t& i, char c) {
    skip_ws(s, i);
    if (i >= s.size() || s[i] != c)
        throw std::runtime_error(std::string("cases.json: expected '") + c + "' at offset " +
                                 std::to_string(i));
    ++i;
}
inline std::string read_string(const std::string& s, std::size_t& i) {
    expect(s, i, '"');
    std::string out;
    while (i < s.size() && s[i] != '"') {
        if (s[i] == '\\' && i + 1 < s.size()) {
            ++i;
            const char e = s[i];
            out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
        } else {
            out += s[i];
        }
        ++i;
    }
    expect(s, i, '"');
    return out;
}
} // namespace detail

/// Every case of `path` (throws std::runtime_error on a shape it does not know).
inline std::vector<torch_case> read_torch_cases(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string s = ss.str();
    std::vector<torch_case> cases;
    std::size_t i = 0;
    detail::expect(s, i, '[');
    detail::skip_ws(s, i);
    if (i < s.size() && s[i] == ']') return cases;
    while (true) {
        std::map<std::string, std::string> fields;
        detail::expect(s, i, '{');
        while (true) {
            const std::string key = detail::read_string(s, i);
            detail::expect(s, i, ':');
            detail::skip_ws(s, i);
            if (i < s.size() && s[i] == '"') {
                fields[key] = detail::read_string(s, i);
            } else if (i < s.size() && (s[i] == '{' || s[i] == '[')) {
                // Nested values (costs, params) are kept as raw text.
                const std::size_t start = i;
                int depth = 0;
                bool in_string = false;
                for (; i < s.size(); ++i) {
                    if (in_string) {
                        if (s[i] == '\\')
                            ++i;
                        else if (s[i] == '"')
                            in_string = false;
                    } else if (s[i] == '"') {
                        in_string = true;
                    } else if (s[i] == '{' || s[i] == '[') {
                        ++depth;
                    } else if ((s[i] == '}' || s[i] == ']') && --depth == 0) {
                        ++i;
                        break;
                    }
                }
                fields[key] = s.substr(start, i - start);
            } else {
                // Numbers, true, false, null: everything up to the next separator.
                const std::size_t start = i;
                while (i < s.size() && s[i] != ',' && s[i] != '}' &&
                       !std::isspace(static_cast<unsigned char>(s[i])))
                    ++i;
                if (start == i)
                    throw std::runtime_error("cases.json: unsupported value at offset " +
                                             std::to_string(start));
                fields[key] = s.substr(start, i - start);
            }
            detail::skip_ws(s, i);
            if (s[i] == ',') {
                ++i;
                continue;
            }
            detail::expect(s, i, '}');
            break;
        }
        torch_case c;
        c.schedule = fields["schedule"];
        c.status = fields["status"];
        c.message = fields["message"];
        c.compute = fields["compute"];
        c.comms = fields["comms"];
        c.params = fields["params"];
        c.ranks = std::stoi(fields["ranks"]);
        c.microbatches = std::stoi(fields["microbatches"]);
        c.stages_per_rank = std::stoi(fields["stages_per_rank"]);
        cases.push_back(std::move(c));
        detail::skip_ws(s, i);
        if (s[i] == ',') {
            ++i;
            continue;
        }
        detail::expect(s, i, ']');
        break;
    }
    return cases;
}

} // namespace ppsched_test
