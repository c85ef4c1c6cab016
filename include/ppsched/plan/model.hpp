#pragma once
/// \file plan/model.hpp
/// A model as the planner sees it (`model_description`): an ordered list of layers, each with
/// its F, I, W (or B) times, activation memory per microbatch, parameter memory and the size of
/// the tensor it sends on, plus the per-rank memory capacity and the point-to-point link. Read
/// from JSON by `read_model_json` (the format is in docs/planning.md).
///
/// Units: times in milliseconds, memory in GB (1e9 bytes), sent tensors in MB (1e6 bytes),
/// bandwidth in GB/s; so a message of X MB takes X / bandwidth ms.

#include <cctype>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppsched/io/detail/json.hpp"
#include "ppsched/error.hpp"
#include "ppsched/io/csv.hpp"

namespace ppsched {

/// What a layer is, in Megatron-LM's terms (`LayerType`); each has a layout-string symbol.
enum class layer_kind : std::uint8_t {
    embedding, ///< `E`
    decoder,   ///< `t` (a transformer layer, dense or MoE)
    mtp,       ///< `m` (a multi-token-prediction layer)
    loss,      ///< `L` (final norm, output head and loss)
};

/// The kind's name in model files (`embedding`, `decoder`, `mtp`, `loss`).
[[nodiscard]] constexpr std::string_view to_string_view(layer_kind k) noexcept {
    switch (k) {
    case layer_kind::embedding:
        return "embedding";
    case layer_kind::decoder:
        return "decoder";
    case layer_kind::mtp:
        return "mtp";
    default:
        return "loss";
    }
}

/// The kind's symbol in Megatron's `--pipeline-model-parallel-layout` (`E`, `t`, `m`, `L`).
[[nodiscard]] constexpr char layout_symbol(layer_kind k) noexcept {
    switch (k) {
    case layer_kind::embedding:
        return 'E';
    case layer_kind::decoder:
        return 't';
    case layer_kind::mtp:
        return 'm';
    default:
        return 'L';
    }
}

/// One layer of a model (a run of identical layers in the file is expanded into copies).
struct model_layer {
    layer_kind kind = layer_kind::decoder;
    std::string name;                      ///< the file's `name` (default: the kind's name)
    double forward = 0;                    ///< F, ms
    std::optional<double> backward_input;  ///< I, ms (set together with W)
    std::optional<double> backward_weight; ///< W, ms
    double full_backward = 0;              ///< B, ms (I + W when those are given)
    double activation = 0;                 ///< GB one microbatch's forward keeps until its backward
    double parameters = 0;                 ///< GB of parameters, gradients and optimizer state
    double send = 0;                       ///< MB of the tensor it sends to the next layer
    std::vector<std::string> modules; ///< module names (`{n}`: index among its template's layers)

    /// True when the backward can be split into I and W (both given).
    [[nodiscard]] bool splits() const noexcept {
        return backward_input.has_value() && backward_weight.has_value();
    }
};

/// A model to split into pipeline stages.
struct model_description {
    std::string name;                ///< the file's `name`
    std::vector<model_layer> layers; ///< in model order
    double memory_capacity = 0;      ///< GB per rank (a rank's parameters + activations)
    double p2p_latency = 0;          ///< ms per message between ranks
    double p2p_bandwidth = 0;        ///< GB/s between ranks

    /// True when every layer gives I and W (the backward may be split).
    [[nodiscard]] bool splits() const noexcept {
        for (const model_layer& l : layers)
            if (!l.splits()) return false;
        return true;
    }
};

namespace detail::plan {

/// The module names a layer of `kind` has in torchtitan's Llama and DeepSeek-V3 models, as
/// `module_fqns_per_model_part` lists them (`{n}` counts the layers sharing the template).
[[nodiscard]] inline std::vector<std::string> default_modules(layer_kind k) {
    switch (k) {
    case layer_kind::embedding:
        return {"tok_embeddings"};
    case layer_kind::decoder:
        return {"layers.{n}"};
    case layer_kind::mtp:
        return {"mtp.{n}"};
    default:
        return {"norm", "output"};
    }
}

/// A module's name for the layer that is number `n` among those sharing template `tmpl`: its
/// `{n}` (the first) replaced by n; a name without `{n}` is the template itself.
[[nodiscard]] inline std::string module_name(const std::string& tmpl, int n) {
    std::string name = tmpl;
    if (const std::size_t at = name.find("{n}"); at != std::string::npos)
        name.replace(at, 3, std::to_string(n));
    return name;
}

/// Why `tmpl` is not a module name torchtitan can look up (a dotted path of Python names,
/// with at most one `{n}`), or empty when it is one.
[[nodiscard]] inline std::string bad_module_name(std::string_view tmpl) {
    if (tmpl.empty()) return "is empty";
    const std::size_t at = tmpl.find("{n}");
    if (at != std::string_view::npos && tmpl.find("{n}", at + 3) != std::string_view::npos)
        return "has '{n}' twice (only one is replaced by the layer's number)";
    std::string name(tmpl);
    if (at != std::string::npos) name.replace(at, 3, "0");
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'))
            return "is not a module path (letters, digits, '_' and '.', and one '{n}')";
    if (name.front() == '.' || name.back() == '.' || name.find("..") != std::string::npos)
        return "is not a module path (an empty name between dots)";
    return {};
}

class model_reader {
  public:
    model_reader(std::string_view text, std::string_view source) : source_(source) {
        root_ = json::parse(text, source);
    }

    model_description read() {
        if (root_.kind != json::type::object) fail(root_, "expected an object (the model)");
        model_description m;
        bool has_layers = false, has_capacity = false;
        for (std::size_t i = 0; i < root_.keys.size(); ++i) {
            const std::string& key = root_.keys[i];
            const json::value& v = root_.items[i];
            if (key == "name") {
                m.name = string(v, "name");
            } else if (key == "memory_capacity") {
                m.memory_capacity = positive(v, key);
                has_capacity = true;
            } else if (key == "p2p_latency") {
                m.p2p_latency = non_negative(v, key);
            } else if (key == "p2p_bandwidth") {
                m.p2p_bandwidth = positive(v, key);
            } else if (key == "notes") {
                // Free text (e.g. where the numbers come from); not interpreted.
            } else if (key == "layers") {
                read_layers(v, m);
                has_layers = true;
            } else {
                fail(v, "unknown key '" + key +
                            "' in the model (expected name, memory_capacity, p2p_latency, "
                            "p2p_bandwidth, layers, notes)");
            }
        }
        if (!has_layers) fail(root_, "the model has no 'layers' (an array of layers)");
        // Stages sum their layers, the partitions square the sums, and memory multiplies
        // activations by microbatches in flight: totals beyond 1e150 would overflow there.
        {
            double f = 0, b = 0, act = 0, par = 0;
            for (const model_layer& l : m.layers) {
                f += l.forward;
                b += l.full_backward;
                act += l.activation;
                par += l.parameters;
            }
            const std::pair<const char*, double> totals[] = {
                {"F", f}, {"B (I + W)", b}, {"activation", act}, {"parameters", par}};
            for (const auto& [what, total] : totals)
                if (!(total <= 1e150))
                    fail(root_, std::string("the layers' ") + what + " add up to " +
                                    (std::isfinite(total) ? "more than 1e150" : "infinity") +
                                    ": stage sums and memory per microbatch in flight would "
                                    "overflow; give the model in larger units");
        }
        if (!has_capacity)
            fail(root_, "the model has no 'memory_capacity' (GB per rank, a positive number)");
        if (m.p2p_bandwidth == 0) {
            bool sends = false;
            for (const model_layer& l : m.layers) sends = sends || l.send > 0;
            if (sends)
                fail(root_, "the model has no 'p2p_bandwidth' (GB/s) but its layers send "
                            "tensors ('send' in MB)");
        }
        return m;
    }

  private:
    [[noreturn]] void fail(const json::value& v, const std::string& message) const {
        json::parser::fail_at(source_, v, message);
    }
    double number(const json::value& v, std::string_view key) const {
        if (v.kind != json::type::number)
            fail(v, "expected a number for '" + std::string(key) + "', found " +
                        json::describe(v.kind));
        return v.number;
    }
    double non_negative(const json::value& v, std::string_view key) const {
        const double x = number(v, key);
        if (!(x >= 0)) fail(v, "expected a non-negative number for '" + std::string(key) + "'");
        return x;
    }
    double positive(const json::value& v, std::string_view key) const {
        const double x = number(v, key);
        if (!(x > 0)) fail(v, "expected a positive number for '" + std::string(key) + "'");
        return x;
    }
    std::string string(const json::value& v, std::string_view key) const {
        if (v.kind != json::type::string)
            fail(v, "expected a string for '" + std::string(key) + "', found " +
                        json::describe(v.kind));
        return v.text;
    }

    void read_layers(const json::value& arr, model_description& m) const {
        if (arr.kind != json::type::array)
            fail(arr,
                 std::string("expected an array for 'layers', found ") + json::describe(arr.kind));
        if (arr.items.empty()) fail(arr, "expected at least one layer in 'layers'");
        // Module names as torchtitan gets them (`module_lists`): each must be one module.
        std::map<std::string, int> per_template;
        std::map<std::string, std::size_t> first_layer; // a name -> the layer that has it
        for (std::size_t item = 0; item < arr.items.size(); ++item) {
            const json::value& v = arr.items[item];
            long long count = 1;
            model_layer l = read_layer(v, count);
            // Megatron's layout puts the embedding on the first stage and the loss on the
            // last: a model with them elsewhere (or twice) has no layout, so it is refused.
            if (l.kind == layer_kind::embedding && (item != 0 || count != 1))
                fail(v, "an 'embedding' layer must be the model's first layer, and only one");
            if (l.kind == layer_kind::loss && (item + 1 != arr.items.size() || count != 1))
                fail(v, "a 'loss' layer must be the model's last layer, and only one");
            // A run of identical layers (`count`) is expanded: layers are few (hundreds).
            for (long long k = 0; k < count; ++k) {
                for (const std::string& tmpl : l.modules) {
                    const std::string name = module_name(tmpl, per_template[tmpl]++);
                    const auto [it, fresh] = first_layer.emplace(name, m.layers.size());
                    if (!fresh && it->second == m.layers.size())
                        fail(v, "the module name '" + name + "' appears twice in layer " +
                                    std::to_string(m.layers.size()) + " (layers count from 0)");
                    if (!fresh)
                        fail(v, "the module name '" + name + "' of layer " +
                                    std::to_string(m.layers.size()) + " is also layer " +
                                    std::to_string(it->second) +
                                    "'s (layers count from 0): give each layer its own, or "
                                    "'{n}' in a name shared by several layers (it counts them)");
                }
                m.layers.push_back(l);
            }
        }
    }

    model_layer read_layer(const json::value& v, long long& count) const {
        if (v.kind != json::type::object)
            fail(v, std::string("expected an object (a layer), found ") + json::describe(v.kind));
        model_layer l;
        bool has_kind = false, has_f = false, has_act = false, has_params = false;
        std::optional<double> b;
        const json::value* b_at = nullptr;
        for (std::size_t i = 0; i < v.keys.size(); ++i) {
            const std::string& key = v.keys[i];
            const json::value& x = v.items[i];
            if (key == "kind") {
                const std::string k = string(x, key);
                if (k == "embedding")
                    l.kind = layer_kind::embedding;
                else if (k == "decoder")
                    l.kind = layer_kind::decoder;
                else if (k == "mtp")
                    l.kind = layer_kind::mtp;
                else if (k == "loss")
                    l.kind = layer_kind::loss;
                else
                    fail(x, "unknown layer kind '" + k +
                                "' (expected embedding, decoder, mtp or loss)");
                has_kind = true;
            } else if (key == "name") {
                l.name = string(x, key);
            } else if (key == "count") {
                const double c = number(x, key);
                if (!(c >= 1 && c <= 100000 && c == static_cast<double>(static_cast<long long>(c))))
                    fail(x, "expected an integer in [1, 100000] for 'count'");
                count = static_cast<long long>(c);
            } else if (key == "F") {
                l.forward = non_negative(x, key);
                has_f = true;
            } else if (key == "I") {
                l.backward_input = non_negative(x, key);
            } else if (key == "W") {
                l.backward_weight = non_negative(x, key);
            } else if (key == "B") {
                b = non_negative(x, key);
                b_at = &x;
            } else if (key == "activation") {
                l.activation = non_negative(x, key);
                has_act = true;
            } else if (key == "parameters") {
                l.parameters = non_negative(x, key);
                has_params = true;
            } else if (key == "send") {
                l.send = non_negative(x, key);
            } else if (key == "modules") {
                if (x.kind != json::type::array)
                    fail(x, std::string("expected an array of strings for 'modules', found ") +
                                json::describe(x.kind));
                if (x.items.empty())
                    fail(x, "'modules' is empty: leave it out for the default names of the "
                            "layer's kind, or name its modules");
                for (const json::value& s : x.items) {
                    l.modules.push_back(string(s, "modules"));
                    if (const std::string why = bad_module_name(l.modules.back()); !why.empty())
                        fail(s, "the module name '" + ppsched::detail::printable(l.modules.back()) +
                                    "' " + why);
                }
            } else if (key == "notes") {
            } else {
                fail(x, "unknown key '" + key +
                            "' in a layer (expected kind, name, count, F, I, W, B, activation, "
                            "parameters, send, modules, notes)");
            }
        }
        if (!has_kind) fail(v, "the layer has no 'kind' (embedding, decoder, mtp or loss)");
        if (!has_f) fail(v, "the layer has no 'F' (forward time, ms)");
        if (!has_act) fail(v, "the layer has no 'activation' (GB per microbatch)");
        if (!has_params) fail(v, "the layer has no 'parameters' (GB)");
        const bool has_i = l.backward_input.has_value(), has_w = l.backward_weight.has_value();
        if (b) {
            if (has_i || has_w)
                fail(*b_at, "give either 'B' or both 'I' and 'W', not both (B would be I + W)");
            l.full_backward = *b;
        } else if (has_i && has_w) {
            l.full_backward = *l.backward_input + *l.backward_weight;
        } else if (has_i || has_w) {
            fail(v, std::string("the layer gives '") + (has_i ? "I" : "W") + "' but not '" +
                        (has_i ? "W" : "I") + "' (give both, or 'B' alone)");
        } else {
            fail(v, "the layer has no backward time (give 'I' and 'W', or 'B')");
        }
        if (l.name.empty()) l.name = std::string(to_string_view(l.kind));
        if (l.modules.empty()) l.modules = default_modules(l.kind);
        return l;
    }

    std::string_view source_;
    json::value root_;
};

} // namespace detail::plan

/// Reads a model description from JSON text (`source` names it in messages). Throws
/// `parse_error` with line and column for malformed JSON, an unknown or missing key, a value
/// of the wrong type or sign, and inconsistent backward times.
[[nodiscard]] inline model_description read_model_json(std::string_view text,
                                                       std::string_view source = "<model>") {
    return detail::plan::model_reader(text, source).read();
}

/// Reads the model description in file `path`. Throws `parse_error`.
[[nodiscard]] inline model_description read_model_json_file(const std::string& path) {
    return read_model_json(io::read_file(path), ppsched::detail::printable(path, 1024));
}

} // namespace ppsched
