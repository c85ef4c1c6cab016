#pragma once
// Reads the cases.json files of ../shared/conformance beyond torch/ (megatron/, overlap/, ...):
// an array of objects whose values are strings, numbers, or objects of those. Nested keys are
// flattened with a dot ("params.microbatch_group_size"). A reader for exactly that shape, so
// the tests need no JSON library.

#include <cctype>
#include <cstddef>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace ppsched_test {

/// One entry of a cases.json: every scalar by its (dotted) key, as written (strings unquoted).
struct conformance_case {
    std::map<std::string, std::string> fields;

    /// The value of `key`, or `fallback` when absent.
    [[nodiscard]] std::string get(const std::string& key, const std::string& fallback = "") const {
        const auto it = fields.find(key);
        return it == fields.end() ? fallback : it->second;
    }
    /// The integer value of `key`, or `fallback` when absent.
    [[nodiscard]] int integer(const std::string& key, int fallback = 0) const {
        const auto it = fields.find(key);
        return it == fields.end() ? fallback : std::stoi(it->second);
    }
    [[nodiscard]] bool has(const std::string& key) const { return fields.count(key) != 0; }
};

namespace detail {
class case_reader {
  public:
    explicit case_reader(std::string text) : s_(std::move(text)) {}

    std::vector<conformance_case> read() {
        std::vector<conformance_case> out;
        expect('[');
        if (peek() == ']') return out;
        while (true) {
            conformance_case c;
            read_object(c, "");
            out.push_back(std::move(c));
            if (peek() == ',') {
                ++i_;
                continue;
            }
            expect(']');
            return out;
        }
    }

  private:
    char peek() {
        while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
        if (i_ >= s_.size()) fail("unexpected end");
        return s_[i_];
    }
    void expect(char c) {
        if (peek() != c) fail(std::string("expected '") + c + "'");
        ++i_;
    }
    [[noreturn]] void fail(const std::string& what) const {
        throw std::runtime_error("cases.json: " + what + " at offset " + std::to_string(i_));
    }
    std::string read_string() {
        expect('"');
        std::string out;
        while (i_ < s_.size() && s_[i_] != '"') {
            if (s_[i_] == '\\' && i_ + 1 < s_.size()) {
                const char e = s_[++i_];
                out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
            } else {
                out += s_[i_];
            }
            ++i_;
        }
        expect('"');
        return out;
    }
    void read_object(conformance_case& c, const std::string& prefix) {
        expect('{');
        if (peek() == '}') {
            ++i_;
            return;
        }
        while (true) {
            const std::string key = prefix + read_string();
            expect(':');
            const char first = peek();
            if (first == '"') {
                c.fields[key] = read_string();
            } else if (first == '{') {
                read_object(c, key + ".");
            } else {
                const std::size_t start = i_;
                while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) ||
                                          s_[i_] == '-' || s_[i_] == '+' || s_[i_] == '.'))
                    ++i_;
                if (start == i_) fail("unsupported value");
                c.fields[key] = s_.substr(start, i_ - start);
            }
            if (peek() == ',') {
                ++i_;
                continue;
            }
            expect('}');
            return;
        }
    }

    std::string s_;
    std::size_t i_ = 0;
};
} // namespace detail

/// Every case of `path` (throws std::runtime_error on a shape it does not know).
inline std::vector<conformance_case> read_conformance_cases(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot open " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return detail::case_reader(ss.str()).read();
}

} // namespace ppsched_test
