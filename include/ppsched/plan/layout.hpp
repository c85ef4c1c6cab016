#pragma once
/// \file plan/layout.hpp
/// Split formats of the training frameworks, both ways: Megatron-LM's
/// `--pipeline-model-parallel-layout` string (`"Et*3|(tt|)*29,m|L"`: `E` embedding, `t`
/// decoder, `m` MTP, `L` loss, `|` a stage boundary, `X*n` and `(...)*n` repeats, `,` only for
/// readability), and torchtitan's per-stage module lists (`module_fqns_per_model_part`).
/// A layout lists stages in model order; Megatron places stage `s` on rank `s % p`.

#include <algorithm>
#include <cstddef>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ppsched/error.hpp"
#include "ppsched/io/detail/json_text.hpp"
#include "ppsched/plan/model.hpp"

namespace ppsched {

/// The layers of each stage, in model order.
using stage_layout = std::vector<std::vector<layer_kind>>;

namespace detail::plan {

class layout_parser {
  public:
    layout_parser(std::string_view text, std::string_view source) : s_(text), source_(source) {}

    std::string expand() {
        std::string out = sequence(0);
        if (pos_ < s_.size()) fail(s_[pos_] == ')' ? "unbalanced ')'" : "unexpected character");
        return out;
    }

  private:
    [[noreturn]] void fail(const std::string& message) const {
        std::string found =
            pos_ < s_.size() ? std::string("'") + s_[pos_] + "'" : std::string("the end");
        throw parse_error(std::string(source_) + ":1:" + std::to_string(pos_ + 1) + ": " + message +
                              ", found " + found +
                              " (expected E, t, m, L, '|', ',', '(', ')' or '*N')",
                          1, pos_ + 1);
    }

    // A run of items up to ')' or the end; commas are dropped first, as Megatron does.
    std::string sequence(int depth) {
        std::string out;
        while (pos_ < s_.size() && s_[pos_] != ')') {
            const char c = s_[pos_];
            std::string item;
            if (c == ',') {
                ++pos_;
                continue;
            }
            if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
                item = std::string(1, c);
                ++pos_;
            } else if (c == '(') {
                if (depth >= 16) fail("groups nested too deeply");
                const std::size_t open = pos_++;
                item = sequence(depth + 1);
                if (pos_ >= s_.size()) {
                    pos_ = open;
                    fail("unclosed '('");
                }
                ++pos_; // ')'
                skip_commas();
                if (pos_ >= s_.size() || s_[pos_] != '*') fail("expected '*N' after a group");
            } else {
                fail("unexpected character");
            }
            skip_commas();
            if (pos_ < s_.size() && s_[pos_] == '*') {
                ++pos_;
                skip_commas();
                const std::size_t digits = pos_;
                long long n = 0;
                while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
                    n = n * 10 + (s_[pos_] - '0');
                    // As long as the whole layout may be: the writer compresses a run of
                    // layers into one count, and what it writes must read back.
                    if (n > 1'000'000) fail("a repeat count above 10^6");
                    ++pos_;
                }
                if (pos_ == digits) fail("expected a repeat count after '*'");
                if (static_cast<double>(item.size()) * static_cast<double>(n) > 1e6)
                    fail("a layout longer than 10^6 symbols");
                if (item.empty()) continue; // an empty group repeated is empty (and quick)
                std::string rep;
                rep.reserve(item.size() * static_cast<std::size_t>(n));
                for (long long k = 0; k < n; ++k) rep += item;
                item = std::move(rep);
            }
            // The whole expansion is bounded too (many groups each below the limit add up).
            if (out.size() + item.size() > 1'000'000) fail("a layout longer than 10^6 symbols");
            out += item;
        }
        return out;
    }

    void skip_commas() {
        while (pos_ < s_.size() && s_[pos_] == ',') ++pos_;
    }

    std::string_view s_;
    std::string_view source_;
    std::size_t pos_ = 0;
};

inline layer_kind kind_of_symbol(char c) {
    switch (c) {
    case 'E':
        return layer_kind::embedding;
    case 'm':
        return layer_kind::mtp;
    case 'L':
        return layer_kind::loss;
    default:
        return layer_kind::decoder;
    }
}

// A stage's symbols with runs written `t*n` (n >= 3), `tt` or `t`.
inline std::string write_stage(const std::vector<layer_kind>& stage) {
    std::string out;
    for (std::size_t i = 0; i < stage.size();) {
        std::size_t j = i;
        while (j < stage.size() && stage[j] == stage[i]) ++j;
        const std::size_t run = j - i;
        const char c = layout_symbol(stage[i]);
        if (run >= 3)
            out += std::string(1, c) + "*" + std::to_string(run);
        else
            out.append(run, c);
        i = j;
    }
    return out;
}

} // namespace detail::plan

/// Parses a Megatron layout string into its stages. Accepts every construct of Megatron's
/// `PipelineParallelLayerLayout.parse_str_to_list`: symbols `E t m L`, `|`, commas anywhere,
/// `X*n` after a symbol or `|`, and `(...)*n` groups (also nested). Throws `parse_error`
/// (line 1, the column of the mistake) for any other character, a group without `*n`, or an
/// unbalanced parenthesis. Complexity: linear in the expanded string.
[[nodiscard]] inline stage_layout parse_megatron_layout(std::string_view text,
                                                        std::string_view source = "<layout>") {
    const std::string flat = detail::plan::layout_parser(text, source).expand();
    stage_layout stages(1);
    for (char c : flat) {
        if (c == '|')
            stages.emplace_back();
        else
            stages.back().push_back(detail::plan::kind_of_symbol(c));
    }
    return stages;
}

/// Writes stages as a Megatron layout string: runs of three or more equal layers as `t*n`,
/// runs of two or more equal stages (but the last) as `(...|)*n` followed by a comma, as in
/// Megatron's docs (`"Et*3|(tt|)*29,m|L"`). `parse_megatron_layout` reads it back to `stages`.
[[nodiscard]] inline std::string write_megatron_layout(const stage_layout& stages) {
    std::string out;
    const std::size_t n = stages.size();
    for (std::size_t i = 0; i < n;) {
        std::size_t k = 1;
        while (i + k + 1 < n && stages[i + k] == stages[i]) ++k;
        if (k >= 2) {
            // Appended piece by piece: g++ 12 at -O3 warns (falsely, -Wrestrict) about
            // "(" + std::string, which would break a user's -Werror build.
            out += '(';
            out += detail::plan::write_stage(stages[i]);
            out += "|)*";
            out += std::to_string(k);
            out += ',';
            i += k;
            continue;
        }
        out += detail::plan::write_stage(stages[i]);
        if (++i < n) out += '|';
    }
    return out;
}

/// Why Megatron-LM would refuse `stages` as `--pipeline-model-parallel-layout` on `ranks`
/// pipeline ranks (its `PipelineParallelLayerLayout` and `validate_layer_layout`), or "" when
/// it accepts them: a multiple of `ranks` stages; the layers must begin with the one embedding
/// and end with the one loss, every decoder must come before the MTP layers, which must all be
/// on one stage, the last of its rank (Megatron places stage s on rank s % ranks). (The counts
/// of decoder and MTP layers it checks against its own flags.) Linear in the layers.
[[nodiscard]] inline std::string megatron_layout_refusal(const stage_layout& stages, int ranks) {
    // In the order Megatron asserts them: the stage count, then the layers.
    if (ranks <= 0) return "it needs at least one pipeline rank";
    const auto p = static_cast<std::size_t>(ranks);
    if (stages.empty() || stages.size() % p != 0)
        return "its " + std::to_string(stages.size()) + " stages are not a multiple of the " +
               std::to_string(ranks) + " pipeline ranks";
    std::vector<layer_kind> flat;
    std::size_t mtp_stages = 0;
    bool mtp_not_last = false; // on a stage that is not its rank's last (s + p < stages)
    for (std::size_t s = 0; s < stages.size(); ++s) {
        flat.insert(flat.end(), stages[s].begin(), stages[s].end());
        if (std::find(stages[s].begin(), stages[s].end(), layer_kind::mtp) != stages[s].end()) {
            ++mtp_stages;
            mtp_not_last = mtp_not_last || s + p < stages.size();
        }
    }
    const auto count = [&](layer_kind k) { return std::count(flat.begin(), flat.end(), k); };
    if (flat.empty() || flat.front() != layer_kind::embedding)
        return "its first layer must be the embedding";
    if (flat.back() != layer_kind::loss) return "its last layer must be the loss";
    if (count(layer_kind::embedding) != 1) return "it takes exactly one embedding layer";
    if (count(layer_kind::loss) != 1) return "it takes exactly one loss layer";
    const auto first_mtp = std::find(flat.begin(), flat.end(), layer_kind::mtp);
    if (std::find(first_mtp, flat.end(), layer_kind::decoder) != flat.end())
        return "every decoder layer must come before the MTP layers";
    if (mtp_not_last) return "the MTP layers must be on the last stage of their rank";
    if (mtp_stages > 1) return "all MTP layers must be on one stage";
    return {};
}

/// The stages of a split of `m`: `stage_layers[s]` consecutive layers on stage `s`.
/// Requires the counts to sum to the number of layers.
[[nodiscard]] inline stage_layout layout_of(const model_description& m,
                                            std::span<const int> stage_layers) {
    stage_layout out;
    std::size_t at = 0;
    for (int count : stage_layers) {
        PPSCHED_EXPECTS(count >= 0 && at + static_cast<std::size_t>(count) <= m.layers.size(),
                        "ppsched::layout_of: the stage sizes exceed the model's ", m.layers.size(),
                        " layers");
        auto& stage = out.emplace_back();
        for (int k = 0; k < count; ++k) stage.push_back(m.layers[at++].kind);
    }
    PPSCHED_EXPECTS(at == m.layers.size(), "ppsched::layout_of: the stages hold ", at,
                    " layers but the model has ", m.layers.size());
    return out;
}

/// The number of layers on each stage of `layout`, checked against the layers of `m` in
/// order. Throws `config_error` when the layout's layers differ from the model's (naming the
/// stage and the first layer that differs) or the counts differ.
[[nodiscard]] inline std::vector<int> split_of(const model_description& m,
                                               const stage_layout& layout) {
    std::vector<int> sizes;
    std::size_t at = 0;
    for (std::size_t s = 0; s < layout.size(); ++s) {
        for (layer_kind k : layout[s]) {
            PPSCHED_EXPECTS(at < m.layers.size(),
                            "ppsched::split_of: the layout has more layers "
                            "than the model (",
                            m.layers.size(), "); stage ", s, " goes past the end");
            const model_layer& l = m.layers[at];
            if (l.kind != k)
                throw config_error("ppsched::split_of: stage " + std::to_string(s) + " has '" +
                                   std::string(1, layout_symbol(k)) + "' where the model's layer " +
                                   std::to_string(at) + " is '" + l.name + "' (" +
                                   std::string(1, layout_symbol(l.kind)) + ")");
            ++at;
        }
        sizes.push_back(static_cast<int>(layout[s].size()));
    }
    PPSCHED_EXPECTS(at == m.layers.size(), "ppsched::split_of: the layout has ", at,
                    " layers but the model has ", m.layers.size());
    return sizes;
}

/// torchtitan's `module_fqns_per_model_part` for a split: each stage's module names, the
/// `{n}` in a layer's module template replaced by how many earlier layers share the template
/// (so decoders are `layers.0`, `layers.1`, ... across dense and MoE runs).
[[nodiscard]] inline std::vector<std::vector<std::string>>
module_lists(const model_description& m, std::span<const int> stage_layers) {
    std::vector<std::vector<std::string>> out;
    std::map<std::string, int> seen;
    std::size_t at = 0;
    for (int count : stage_layers) {
        auto& stage = out.emplace_back();
        for (int k = 0; k < count && at < m.layers.size(); ++k, ++at) {
            for (const std::string& tmpl : m.layers[at].modules)
                stage.push_back(detail::plan::module_name(tmpl, seen[tmpl]++));
        }
    }
    return out;
}

/// Module lists as JSON (also a Python literal), one stage per line:
/// `[["tok_embeddings", "layers.0"],\n ["layers.1", "norm", "output"]]`.
[[nodiscard]] inline std::string
write_module_lists(const std::vector<std::vector<std::string>>& lists) {
    std::string out = "[";
    for (std::size_t s = 0; s < lists.size(); ++s) {
        out += s ? ",\n [" : "[";
        for (std::size_t i = 0; i < lists[s].size(); ++i) {
            if (i) out += ", ";
            ppsched::detail::text::append_json_string(out, lists[s][i]); // escaped
        }
        out += "]";
    }
    return out + "]";
}

} // namespace ppsched
