#pragma once
/// \file io/detail/json.hpp
/// A small JSON reader (RFC 8259) for ppsched's own input files (cost models). Why not a
/// library: ppsched is header-only with no dependency, and these files are a handful of numbers;
/// about 250 lines buy exact error positions (`file:line:column: expected ...`) and no
/// install-time requirement. Reads into a plain tree; not constexpr (it builds std::strings).

#include <algorithm>
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <system_error>
#include <unordered_set>
#include <vector>

#include "ppsched/error.hpp"

namespace ppsched::detail::json {

/// The type of a JSON value.
enum class type : std::uint8_t { null, boolean, number, string, array, object };

/// Name of a type, for messages (`a number`, `an object`, ...).
[[nodiscard]] inline const char* describe(type t) noexcept {
    switch (t) {
    case type::null:
        return "null";
    case type::boolean:
        return "a boolean";
    case type::number:
        return "a number";
    case type::string:
        return "a string";
    case type::array:
        return "an array";
    default:
        return "an object";
    }
}

/// A parsed JSON value and where it starts in the text (1-based line and column).
struct value {
    type kind = type::null;
    bool boolean = false;
    double number = 0;
    std::string text;              ///< a string's contents (UTF-8)
    std::vector<value> items;      ///< an array's elements, or an object's values
    std::vector<std::string> keys; ///< an object's keys, parallel to `items`, in text order
    std::size_t line = 0, column = 0;

    /// The member named `key` of an object, or nullptr.
    [[nodiscard]] const value* find(std::string_view key) const noexcept {
        for (std::size_t i = 0; i < keys.size(); ++i)
            if (keys[i] == key) return &items[i];
        return nullptr;
    }
};

/// Parses one JSON document. Throws `parse_error` with `source:line:column: message`.
/// Objects with a repeated key are rejected (their meaning is unspecified in JSON).
/// Complexity: linear in the text; nesting deeper than 64 levels is rejected.
class parser {
  public:
    parser(std::string_view text, std::string_view source) : s_(text), source_(source) {}

    value parse() {
        skip_ws();
        value v = parse_value(0);
        skip_ws();
        if (pos_ < s_.size()) fail("expected the end of the document");
        return v;
    }

    /// Throws a `parse_error` at a value's position (for errors found after parsing).
    [[noreturn]] static void fail_at(std::string_view source, const value& v,
                                     const std::string& message) {
        throw parse_error(std::string(source) + ":" + std::to_string(v.line) + ":" +
                              std::to_string(v.column) + ": " + message,
                          v.line, v.column);
    }

  private:
    static constexpr int max_depth = 64;

    /// Throws `message` at pos_, with what is found there: the character at pos_, or the text
    /// `what` (quoted) where the caller gives it.
    /// Throws `parse_error` at the current position: "message, found X", X the text `what`
    /// (quoted unless `quote` is false) or what is there.
    [[noreturn]] void fail(const std::string& message, std::string_view what = {},
                           bool quote = true) const {
        // Line and column of pos_, counted on demand: errors are rare, text is small.
        std::size_t line = 1, column = 1;
        for (std::size_t i = 0; i < pos_ && i < s_.size(); ++i) {
            if (s_[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        std::string found;
        if (!what.empty())
            found = quote ? "'" + std::string(what) + "'" : std::string(what);
        else if (pos_ >= s_.size())
            found = "the end of the text";
        else if (s_[pos_] >= ' ' && s_[pos_] < 127)
            found = std::string("'") + s_[pos_] + "'";
        else
            found = "byte " + std::to_string(static_cast<unsigned char>(s_[pos_]));
        throw parse_error(std::string(source_) + ":" + std::to_string(line) + ":" +
                              std::to_string(column) + ": " + message + ", found " + found,
                          line, column);
    }

    void skip_ws() {
        while (pos_ < s_.size() &&
               (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
            ++pos_;
    }

    // Marks where `v` starts. The position is advanced incrementally from the last mark, so
    // marking every value keeps parsing linear.
    void mark(value& v) {
        for (; scanned_ < pos_; ++scanned_) {
            if (s_[scanned_] == '\n') {
                ++line_;
                column_ = 1;
            } else {
                ++column_;
            }
        }
        v.line = line_;
        v.column = column_;
    }

    value parse_value(int depth) {
        if (depth > max_depth) fail("expected at most 64 nested arrays or objects");
        value v;
        mark(v);
        if (pos_ >= s_.size()) fail("expected a value");
        const char c = s_[pos_];
        if (c == '{') {
            v.kind = type::object;
            ++pos_;
            skip_ws();
            if (pos_ < s_.size() && s_[pos_] == '}') {
                ++pos_;
                return v;
            }
            std::unordered_set<std::string> seen;
            while (true) {
                skip_ws();
                if (pos_ >= s_.size() || s_[pos_] != '"') fail("expected a key (a string)");
                const std::size_t key_at = pos_;
                std::string key = parse_string();
                // A hash set, not a scan of the keys so far: linear in the object's size.
                if (!seen.insert(key).second) {
                    pos_ = key_at;
                    fail("expected each key once",
                         "'" + ppsched::detail::printable(key) + "' a second time", false);
                }
                skip_ws();
                if (pos_ >= s_.size() || s_[pos_] != ':') fail("expected ':' after the key");
                ++pos_;
                skip_ws();
                v.keys.push_back(std::move(key));
                v.items.push_back(parse_value(depth + 1));
                skip_ws();
                if (pos_ < s_.size() && s_[pos_] == ',') {
                    ++pos_;
                    continue;
                }
                if (pos_ < s_.size() && s_[pos_] == '}') {
                    ++pos_;
                    return v;
                }
                fail("expected ',' or '}' in the object");
            }
        }
        if (c == '[') {
            v.kind = type::array;
            ++pos_;
            skip_ws();
            if (pos_ < s_.size() && s_[pos_] == ']') {
                ++pos_;
                return v;
            }
            while (true) {
                skip_ws();
                v.items.push_back(parse_value(depth + 1));
                skip_ws();
                if (pos_ < s_.size() && s_[pos_] == ',') {
                    ++pos_;
                    continue;
                }
                if (pos_ < s_.size() && s_[pos_] == ']') {
                    ++pos_;
                    return v;
                }
                fail("expected ',' or ']' in the array");
            }
        }
        if (c == '"') {
            v.kind = type::string;
            v.text = parse_string();
            return v;
        }
        if (literal("true")) {
            v.kind = type::boolean;
            v.boolean = true;
            return v;
        }
        if (literal("false")) {
            v.kind = type::boolean;
            return v;
        }
        if (literal("null")) return v;
        if (c == '-' || (c >= '0' && c <= '9')) {
            v.kind = type::number;
            v.number = parse_number();
            return v;
        }
        fail("expected a value (object, array, string, number, true, false or null)");
    }

    bool literal(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) return false;
        pos_ += word.size();
        return true;
    }

    static bool digit(char c) noexcept { return c >= '0' && c <= '9'; }

    // Whether a JSON number out of a double's range is so by being too close to 0: the decimal
    // exponent of its first nonzero digit, plus its exponent, is negative (both saturated:
    // only the sign of the sum matters).
    static bool too_close_to_zero(std::string_view t) noexcept {
        constexpr long long cap = 1LL << 40;
        long long where = 0, exponent = 0;
        bool seen = false; // a nonzero digit
        std::size_t i = !t.empty() && t[0] == '-' ? 1 : 0;
        for (; i < t.size() && digit(t[i]); ++i) {
            if (seen)
                where = std::min(where + 1, cap);
            else if (t[i] != '0')
                seen = true; // where = 0: the ones
        }
        if (i < t.size() && t[i] == '.') {
            long long k = 0; // the fraction digit's place
            for (++i; i < t.size() && digit(t[i]); ++i) {
                k = std::min(k + 1, cap);
                if (!seen && t[i] != '0') {
                    seen = true;
                    where = -k;
                }
            }
        }
        bool negative = false;
        if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
            if (++i < t.size() && (t[i] == '-' || t[i] == '+')) negative = t[i++] == '-';
            for (; i < t.size() && digit(t[i]); ++i)
                exponent = std::min(exponent * 10 + (t[i] - '0'), cap);
        }
        return where + (negative ? -exponent : exponent) < 0;
    }

    double parse_number() {
        // Check JSON's grammar first (from_chars accepts more, e.g. "inf" or a leading '+').
        const std::size_t start = pos_;
        if (s_[pos_] == '-') ++pos_;
        if (pos_ >= s_.size() || !digit(s_[pos_])) fail("expected a digit");
        if (s_[pos_] == '0') {
            ++pos_;
            if (pos_ < s_.size() && digit(s_[pos_])) fail("expected no leading zero");
        } else {
            while (pos_ < s_.size() && digit(s_[pos_])) ++pos_;
        }
        if (pos_ < s_.size() && s_[pos_] == '.') {
            ++pos_;
            if (pos_ >= s_.size() || !digit(s_[pos_])) fail("expected a digit after '.'");
            while (pos_ < s_.size() && digit(s_[pos_])) ++pos_;
        }
        if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
            ++pos_;
            if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
            if (pos_ >= s_.size() || !digit(s_[pos_])) fail("expected a digit in the exponent");
            while (pos_ < s_.size() && digit(s_[pos_])) ++pos_;
        }
        double out = 0;
        const auto [end, ec] = std::from_chars(s_.data() + start, s_.data() + pos_, out);
        if (ec == std::errc::result_out_of_range) {
            const std::string_view text = s_.substr(start, pos_ - start);
            pos_ = start;
            // Too close to 0 or too large; a long one is cut.
            fail(too_close_to_zero(text)
                     ? "expected a number a double can hold (this one is too close to 0: write 0)"
                     : "expected a number that fits a double",
                 text.substr(0, 40));
        }
        (void)end;
        return out;
    }

    unsigned hex4() {
        unsigned v = 0;
        for (int i = 0; i < 4; ++i, ++pos_) {
            if (pos_ >= s_.size()) fail("expected 4 hex digits after \\u");
            const char c = s_[pos_];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                v |= static_cast<unsigned>(c - 'A' + 10);
            else
                fail("expected 4 hex digits after \\u");
        }
        return v;
    }

    static void append_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    std::string parse_string() {
        ++pos_; // the opening quote
        std::string out;
        while (true) {
            if (pos_ >= s_.size()) fail("expected '\"' closing the string");
            const char c = s_[pos_];
            if (c == '"') {
                ++pos_;
                return out;
            }
            if (static_cast<unsigned char>(c) < 0x20)
                fail("expected no control character in a string (escape it)");
            if (c != '\\') {
                out += c;
                ++pos_;
                continue;
            }
            ++pos_;
            if (pos_ >= s_.size()) fail("expected an escape after '\\'");
            const char e = s_[pos_++];
            switch (e) {
            case '"':
                out += '"';
                break;
            case '\\':
                out += '\\';
                break;
            case '/':
                out += '/';
                break;
            case 'b':
                out += '\b';
                break;
            case 'f':
                out += '\f';
                break;
            case 'n':
                out += '\n';
                break;
            case 'r':
                out += '\r';
                break;
            case 't':
                out += '\t';
                break;
            case 'u': {
                unsigned cp = hex4();
                if (cp >= 0xD800 && cp < 0xDC00) { // a surrogate pair
                    if (s_.substr(pos_, 2) != "\\u")
                        fail("expected a low surrogate (\\uDC00-DFFF)");
                    pos_ += 2;
                    const unsigned low = hex4();
                    if (low < 0xDC00 || low >= 0xE000)
                        fail("expected a low surrogate (\\uDC00-DFFF)");
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                } else if (cp >= 0xDC00 && cp < 0xE000) {
                    fail("expected a high surrogate before a low one");
                }
                append_utf8(out, cp);
                break;
            }
            default:
                --pos_;
                fail("expected a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)");
            }
        }
    }

    std::string_view s_;
    std::string_view source_;
    std::size_t pos_ = 0;
    std::size_t scanned_ = 0, line_ = 1, column_ = 1;
};

/// Parses `text` (named `source` in messages). Throws `parse_error`.
[[nodiscard]] inline value parse(std::string_view text, std::string_view source = "<json>") {
    return parser(text, source).parse();
}

} // namespace ppsched::detail::json
