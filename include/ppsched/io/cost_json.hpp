#pragma once
/// \file io/cost_json.hpp
/// A cost model as a small flat JSON file:
/// ```
/// { "F": 1, "I": 1.25, "W": 0.75, "OVERLAP_F_B": 2.5,
///   "B": [null, null, null, 2.5],          // per stage: index = stage, null = not set
///   "stages": [{}, {"F": 1.5, "activation": 2}],   // or per stage, as objects
///   "UNSHARD": 0.1, "REDUCE_GRAD": 0.3,
///   "activation": 1, "parameters": 4,
///   "p2p_latency": 0.05, "p2p_transfer": 0.02, "input_grad_frees": 0.5,
///   "_note": "keys starting with '_' are ignored" }
/// ```
/// (JSON has no comments; the `//` above are for this page only.)

#include <array>
#include <charconv>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ppsched/cost_model.hpp"
#include "ppsched/error.hpp"
#include "ppsched/io/csv.hpp"
#include "ppsched/io/detail/json.hpp"
#include "ppsched/io/detail/number_text.hpp"

namespace ppsched::io {

namespace detail {

/// A per-stage key of the file and the field it sets.
struct cost_key {
    std::string_view name;
    std::optional<double> stage_costs::*field;
};

inline constexpr std::array<cost_key, 9> per_stage_keys{{
    {"F", &stage_costs::forward},
    {"I", &stage_costs::backward_input},
    {"W", &stage_costs::backward_weight},
    {"B", &stage_costs::full_backward},
    {"OVERLAP_F_B", &stage_costs::overlap_f_b},
    {"UNSHARD", &stage_costs::unshard},
    {"REDUCE_GRAD", &stage_costs::reduce_grad},
    {"activation", &stage_costs::activation},
    {"parameters", &stage_costs::parameters},
}};

inline double non_negative(std::string_view source, const ppsched::detail::json::value& v,
                           std::string_view key) {
    namespace json = ppsched::detail::json;
    if (v.kind != json::type::number)
        json::parser::fail_at(source, v,
                              "expected a number for '" + ppsched::detail::printable(key) +
                                  "', found " + json::describe(v.kind));
    if (v.number < 0)
        json::parser::fail_at(source, v,
                              "expected a non-negative number for '" +
                                  ppsched::detail::printable(key) + "'");
    return v.number;
}

inline const cost_key* find_key(std::string_view name) noexcept {
    for (const auto& ck : per_stage_keys)
        if (ck.name == name) return &ck;
    return nullptr;
}

inline std::string per_stage_key_list() {
    std::string out;
    for (const auto& ck : per_stage_keys) {
        if (!out.empty()) out += ", ";
        out += ck.name;
    }
    return out;
}

// Sets one stage's field, refusing a second value for it (from `stages` and a per-key array).
inline void set_stage(std::string_view source, const ppsched::detail::json::value& v,
                      std::optional<double>& field, const std::string& what) {
    if (field)
        ppsched::detail::json::parser::fail_at(
            source, v, "expected one value for " + what + " (it is set twice)");
    field = non_negative(source, v, what);
}

} // namespace detail

/// Reads a cost model from JSON text (`source` names it in messages).
///
/// The document is one object. Keys `F`, `I`, `W`, `B`, `OVERLAP_F_B`, `UNSHARD`,
/// `REDUCE_GRAD`, `activation`, `parameters` take a number (every stage) or an array with one
/// entry per stage (a number, or null for "not set"); `stages` takes an array of per-stage
/// objects (or nulls) with those keys; every such array has the same length; a stage's value may be
/// given once; `p2p_latency`, `p2p_transfer` and `input_grad_frees` take a number; keys starting
/// with `_` are ignored. Unset values take the defaults of `cost_model`. Throws `parse_error` with
/// `source:line:column` for malformed JSON, an unknown key, a value of the wrong type or a negative
/// one, arrays of different lengths; and with line 0 when the values are inconsistent (a B below a
/// given I or W, `input_grad_frees` outside [0, 1]).
[[nodiscard]] inline cost_model read_cost_json(std::string_view text,
                                               std::string_view source = "<json>") {
    namespace json = ppsched::detail::json;
    const json::value doc = json::parse(text, source);
    if (doc.kind != json::type::object)
        json::parser::fail_at(source, doc,
                              std::string("expected an object of costs, found ") +
                                  json::describe(doc.kind));
    cost_model c;
    // Every per-stage array has one entry per stage, so all have the same length: a shorter
    // one is a mistake (null keeps a stage's default), not a silent fallback.
    std::string first_array;
    std::size_t stage_count = 0;
    auto check_length = [&](const std::string& key, const json::value& v) {
        if (first_array.empty()) {
            first_array = key;
            stage_count = v.items.size();
        } else if (v.items.size() != stage_count) {
            json::parser::fail_at(source, v,
                                  "'" + ppsched::detail::printable(key) + "' has " +
                                      std::to_string(v.items.size()) + " entries but '" +
                                      ppsched::detail::printable(first_array) + "' has " +
                                      std::to_string(stage_count) +
                                      ": give one entry per stage (null keeps a stage's default)");
        }
    };
    for (std::size_t k = 0; k < doc.keys.size(); ++k) {
        const std::string& key = doc.keys[k];
        const json::value& v = doc.items[k];
        if (!key.empty() && key[0] == '_') continue;
        if (key == "p2p_latency") {
            c.p2p_latency = detail::non_negative(source, v, key);
            continue;
        }
        if (key == "p2p_transfer") {
            c.p2p_transfer = detail::non_negative(source, v, key);
            continue;
        }
        if (key == "input_grad_frees") {
            c.input_grad_frees = detail::non_negative(source, v, key);
            if (c.input_grad_frees > 1)
                json::parser::fail_at(source, v, "expected input_grad_frees in [0, 1]");
            continue;
        }
        if (key == "stages") {
            if (v.kind != json::type::array)
                json::parser::fail_at(source, v,
                                      std::string("expected an array of per-stage objects for "
                                                  "'stages', found ") +
                                          json::describe(v.kind));
            check_length(key, v);
            if (c.per_stage.size() < v.items.size()) c.per_stage.resize(v.items.size());
            for (std::size_t s = 0; s < v.items.size(); ++s) {
                const json::value& st = v.items[s];
                if (st.kind == json::type::null) continue;
                if (st.kind != json::type::object)
                    json::parser::fail_at(source, st,
                                          std::string("expected an object (or null) for stage ") +
                                              std::to_string(s) + ", found " +
                                              json::describe(st.kind));
                for (std::size_t j = 0; j < st.keys.size(); ++j) {
                    if (!st.keys[j].empty() && st.keys[j][0] == '_') continue;
                    const detail::cost_key* ck = detail::find_key(st.keys[j]);
                    if (ck == nullptr)
                        json::parser::fail_at(
                            source, st.items[j],
                            "unknown per-stage key '" + ppsched::detail::printable(st.keys[j]) +
                                "'; the valid keys are " + detail::per_stage_key_list());
                    detail::set_stage(source, st.items[j], c.per_stage[s].*(ck->field),
                                      "stages[" + std::to_string(s) + "]." + st.keys[j]);
                }
            }
            continue;
        }
        const detail::cost_key* known = detail::find_key(key);
        if (known == nullptr)
            json::parser::fail_at(source, v,
                                  "unknown key '" + ppsched::detail::printable(key) +
                                      "'; the valid keys are " + detail::per_stage_key_list() +
                                      ", stages, p2p_latency, p2p_transfer, input_grad_frees "
                                      "(keys starting with '_' are ignored)");
        if (v.kind == json::type::array) {
            check_length(key, v);
            if (c.per_stage.size() < v.items.size()) c.per_stage.resize(v.items.size());
            for (std::size_t s = 0; s < v.items.size(); ++s) {
                if (v.items[s].kind == json::type::null) continue;
                detail::set_stage(source, v.items[s], c.per_stage[s].*(known->field),
                                  key + "[" + std::to_string(s) + "]");
            }
        } else {
            c.uniform.*(known->field) = detail::non_negative(source, v, key);
        }
    }
    // Resolve every stage once so that inconsistent values are reported now, with the file.
    try {
        c.check();
        const std::size_t n = c.per_stage.empty() ? 1 : c.per_stage.size();
        for (std::size_t s = 0; s < n; ++s) (void)c.at(static_cast<int>(s));
    } catch (const config_error& e) {
        // "ppsched::cost_model: B must be ..." as "FILE: B must be ...": the file is the
        // context a reader needs, the C++ function is not.
        std::string_view what = e.what();
        if (what.starts_with("ppsched::cost_model: ")) what.remove_prefix(21);
        throw parse_error(std::string(source) + ": " + std::string(what), 0, 0);
    }
    return c;
}

/// Reads a cost model from a JSON file. Throws `parse_error` as `read_cost_json` does, or when
/// the file cannot be opened.
[[nodiscard]] inline cost_model read_cost_json_file(const std::string& path) {
    return read_cost_json(read_file(path), ppsched::detail::printable(path, 1024));
}

/// Writes a cost model as JSON that `read_cost_json` reads back to an equal model: the uniform
/// values that are set at the top level, the per-stage overrides under `stages`.
[[nodiscard]] inline std::string write_cost_json(const cost_model& c) {
    std::string out = "{";
    bool first = true;
    auto key = [&](std::string_view k) {
        out += first ? "\n  \"" : ",\n  \"";
        first = false;
        out += k;
        out += "\": ";
    };
    for (const auto& ck : detail::per_stage_keys) {
        if (const auto& u = c.uniform.*(ck.field)) {
            key(ck.name);
            ppsched::detail::text::append_shortest_number(out, *u);
        }
    }
    if (!c.per_stage.empty()) {
        key("stages");
        out += "[";
        for (std::size_t s = 0; s < c.per_stage.size(); ++s) {
            out += s > 0 ? ",\n    {" : "\n    {";
            bool first_field = true;
            for (const auto& ck : detail::per_stage_keys) {
                if (const auto& v = c.per_stage[s].*(ck.field)) {
                    out += first_field ? "\"" : ", \"";
                    first_field = false;
                    out += ck.name;
                    out += "\": ";
                    ppsched::detail::text::append_shortest_number(out, *v);
                }
            }
            out += "}";
        }
        out += "\n  ]";
    }
    const std::array<std::pair<std::string_view, double>, 3> scalars{
        {{"p2p_latency", c.p2p_latency},
         {"p2p_transfer", c.p2p_transfer},
         {"input_grad_frees", c.input_grad_frees}}};
    for (const auto& [name, value] : scalars) {
        if (value == 0) continue;
        key(name);
        ppsched::detail::text::append_shortest_number(out, value);
    }
    out += first ? "}\n" : "\n}\n";
    return out;
}

} // namespace ppsched::io
