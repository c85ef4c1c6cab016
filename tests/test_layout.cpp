#include <ppsched/plan/layout.hpp>

#include <catch2/catch.hpp>

#include <string>
#include <vector>

using ppsched::layer_kind;
using ppsched::parse_megatron_layout;
using ppsched::stage_layout;
using ppsched::write_megatron_layout;

namespace {

constexpr layer_kind E = layer_kind::embedding;
constexpr layer_kind t = layer_kind::decoder;
constexpr layer_kind m = layer_kind::mtp;
constexpr layer_kind L = layer_kind::loss;

std::vector<layer_kind> decoders(int n) {
    return std::vector<layer_kind>(static_cast<std::size_t>(n), t);
}

std::vector<layer_kind> join(std::vector<layer_kind> a, const std::vector<layer_kind>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

stage_layout repeat(const std::vector<layer_kind>& stage, int n) {
    return stage_layout(static_cast<std::size_t>(n), stage);
}

stage_layout cat(stage_layout a, const stage_layout& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::string error_of(const std::string& text) {
    try {
        (void)parse_megatron_layout(text, "layout");
    } catch (const ppsched::parse_error& e) {
        return e.what();
    }
    return "";
}

struct example {
    const char* text;
    stage_layout stages;
};

// The expected stages are written by hand from Megatron-LM's own docs and tests
// (NVIDIA/Megatron-LM at d98e8a64ddf34856e74b24714e3bedb2f5a39553):
//  - docs/user-guide/features/pipeline_parallel_layout.md: "Et*3|(tt|)*29,m|L" for PP16 x VPP2,
//    whose table reads: rank 0 stage 0 "embedding + 3 x decoder", every other stage
//    "2 x decoder", rank 14's second stage "mtp", rank 15's second stage "loss"; and the note
//    "E||t|L" (the second stage is empty).
//  - tests/unit_tests/transformer/test_transformer_block.py, test_parsing_layout_from_str:
//    the pairs (layout string, list of lists) below.
//  - tests/functional_tests/test_cases/.../model_config.yaml: "Et*2|(tt|)*5t|tmL",
//    "Et*7|t*7mL", "Et*3|(tt|)*6tmL", "Et|(tt|)*6mL" (expanded here by the rules of
//    PipelineParallelLayerLayout.parse_str_to_list: "(...)*n" and "x*n" repeat, "," is
//    cosmetic, "|" splits stages).
const std::vector<example>& examples() {
    static const std::vector<example> all{
        {"Et*3|(tt|)*29,m|L",
         cat(cat({join({E}, decoders(3))}, repeat(decoders(2), 29)), {{m}, {L}})},
        {"E||t|L", {{E}, {}, {t}, {L}}},
        {"Et|t*4|t|tL", {{E, t}, decoders(4), {t}, {t, L}}},
        {"E|t*6|t|L", {{E}, decoders(6), {t}, {L}}},
        {"E|t|t*2|t||(t|)*2,t*2,L", {{E}, {t}, {t, t}, {t}, {}, {t}, {t}, {t, t, L}}},
        {"Et*2|(tt|)*29,t|mL",
         cat(cat({join({E}, decoders(2))}, repeat(decoders(2), 29)), {{t}, {m, L}})},
        {"Et*2|(tt|)*5t|tmL", cat(cat({{E, t, t}}, repeat(decoders(2), 5)), {{t}, {t, m, L}})},
        {"Et*7|t*7mL", {join({E}, decoders(7)), join(decoders(7), {m, L})}},
        {"Et*3|(tt|)*6tmL", cat(cat({{E, t, t, t}}, repeat(decoders(2), 6)), {{t, m, L}})},
        {"Et|(tt|)*6mL", cat(cat({{E, t}}, repeat(decoders(2), 6)), {{m, L}})},
    };
    return all;
}

} // namespace

TEST_CASE("Megatron layout strings from its docs and tests expand to its stage lists", "[layout]") {
    for (const example& ex : examples()) {
        INFO(ex.text);
        CHECK(parse_megatron_layout(ex.text) == ex.stages);
    }
}

TEST_CASE("Megatron layout strings round-trip: parse, write, parse", "[layout]") {
    for (const example& ex : examples()) {
        INFO(ex.text);
        const stage_layout once = parse_megatron_layout(ex.text);
        const std::string written = write_megatron_layout(once);
        INFO(written);
        CHECK(parse_megatron_layout(written) == once);
    }
}

TEST_CASE("a layout with a run above 100000 layers writes back to text that reads", "[layout]") {
    // Found by fuzz_layout: the writer compressed a stage of 101000 decoder layers into
    // "t*101000", which the reader refused (its repeat counts stopped at 100000).
    const std::string text = "(t*1010)*100,(L(tt|)*92E)*1049";
    const stage_layout once = parse_megatron_layout(text);
    REQUIRE(once.front().size() > 100000);
    const std::string written = write_megatron_layout(once);
    INFO(written.substr(0, 80));
    CHECK(parse_megatron_layout(written) == once);
    // An empty group repeated is empty, whatever the count; counts stay bounded.
    CHECK(parse_megatron_layout("E|()*999999t|L") == stage_layout{{E}, {t}, {L}});
    CHECK(error_of("Et*99999999|L").find("a repeat count above 10^6") != std::string::npos);
}

TEST_CASE("the layout writer uses the docs' compact form", "[layout]") {
    // Megatron's documented string for DeepSeek-V3 on PP16 x VPP2 is already in this form.
    CHECK(write_megatron_layout(parse_megatron_layout("Et*3|(tt|)*29,m|L")) == "Et*3|(tt|)*29,m|L");
    CHECK(write_megatron_layout({{E}, {}, {t}, {L}}) == "E||t|L");
    CHECK(write_megatron_layout({{E, t}, {t, t}, {t, t}, {t, t}}) == "Et|(tt|)*2,tt");
}

TEST_CASE("layout repeats apply to any symbol, '|' and nested groups", "[layout]") {
    CHECK(parse_megatron_layout("E|*2t|L") == stage_layout{{E}, {}, {t}, {L}});
    CHECK(parse_megatron_layout("E|((t|)*2,m|)*2,L") ==
          stage_layout{{E}, {t}, {t}, {m}, {t}, {t}, {m}, {L}});
    CHECK(parse_megatron_layout("Et*0|L") == stage_layout{{E}, {L}});
}

TEST_CASE("a malformed layout string is a parse_error at its column", "[layout]") {
    CHECK(error_of("Et*3|x|L") ==
          "layout:1:6: unexpected character, found 'x' (expected E, t, m, L, '|', ',', '(', ')' "
          "or '*N')");
    CHECK(error_of("Et*|L").find("layout:1:4: expected a repeat count after '*'") == 0);
    CHECK(error_of("E|(tt|*2").find("layout:1:3: unclosed '('") == 0);
    CHECK(error_of("E|tt)|L").find("layout:1:5: unbalanced ')'") == 0);
    CHECK(error_of("E|(tt|)|L").find("layout:1:8: expected '*N' after a group") == 0);
    CHECK(error_of("E t").find("layout:1:2: unexpected character") == 0);
}

TEST_CASE("a layout is matched against a model's layers", "[layout]") {
    ppsched::model_description model;
    for (layer_kind k : {E, t, t, t, m, L}) {
        ppsched::model_layer l;
        l.kind = k;
        l.name = std::string(ppsched::to_string_view(k));
        l.modules = ppsched::detail::plan::default_modules(k);
        model.layers.push_back(l);
    }
    CHECK(ppsched::split_of(model, parse_megatron_layout("Et|tt|mL")) == std::vector<int>{2, 2, 2});
    CHECK(ppsched::split_of(model, parse_megatron_layout("E||t*3|mL")) ==
          std::vector<int>{1, 0, 3, 2});
    CHECK_THROWS_WITH(ppsched::split_of(model, parse_megatron_layout("Et|tt|tL")),
                      "ppsched::split_of: stage 2 has 't' where the model's layer 4 is 'mtp' (m)");
    CHECK_THROWS_AS(ppsched::split_of(model, parse_megatron_layout("Et|tt|m")),
                    ppsched::config_error);
    CHECK_THROWS_AS(ppsched::split_of(model, parse_megatron_layout("Et|tt|mLL")),
                    ppsched::config_error);
    const std::vector<int> sizes{2, 2, 2};
    CHECK(ppsched::write_megatron_layout(ppsched::layout_of(model, sizes)) == "Et|tt|mL");
    const auto lists = ppsched::module_lists(model, sizes);
    CHECK(lists == std::vector<std::vector<std::string>>{{"tok_embeddings", "layers.0"},
                                                         {"layers.1", "layers.2"},
                                                         {"mtp.0", "norm", "output"}});
    CHECK(ppsched::write_module_lists(lists) ==
          "[[\"tok_embeddings\", \"layers.0\"],\n [\"layers.1\", \"layers.2\"],\n [\"mtp.0\", "
          "\"norm\", \"output\"]]");
}

TEST_CASE("Megatron's layout checks: embedding first, loss last, MTP after the decoders",
          "[layout]") {
    using ppsched::megatron_layout_refusal;
    auto refusal = [](const char* text, int ranks) {
        return megatron_layout_refusal(parse_megatron_layout(text), ranks);
    };
    // The layout Megatron's docs give for DeepSeek-V3 on PP16 x VPP2, and plain ones.
    CHECK(refusal("Et*3|(tt|)*29,m|L", 16).empty());
    CHECK(refusal("Ett|tt|tt|ttL", 4).empty());
    // 2 ranks x 2 stages, stage s on rank s % 2: stage 2 is rank 0's last.
    CHECK(refusal("Et|t|m|L", 2).empty());
    // What its validate_layer_layout asserts.
    CHECK(refusal("tt|tt|tt|tt", 4) == "its first layer must be the embedding");
    CHECK(refusal("Ett|tt|tt|tt", 4) == "its last layer must be the loss");
    CHECK(refusal("Ett|EtL", 2) == "it takes exactly one embedding layer");
    CHECK(refusal("Et|LtL", 2) == "it takes exactly one loss layer");
    CHECK(refusal("Em|ttL", 2) == "every decoder layer must come before the MTP layers");
    // Stage 1 is rank 1's first of two stages; stages 2 and 3 are the ranks' last.
    CHECK(refusal("Et|m|L|", 2) == "the MTP layers must be on the last stage of their rank");
    CHECK(refusal("Etm|m|L|", 2) == "the MTP layers must be on the last stage of their rank");
    CHECK(refusal("Et|t|m|mL", 2) == "all MTP layers must be on one stage");
    // The stage count first, as Megatron's constructor asserts it.
    CHECK(refusal("Et|tL", 3) == "its 2 stages are not a multiple of the 3 pipeline ranks");
    CHECK(refusal("Et|t|mL", 2) == "its 3 stages are not a multiple of the 2 pipeline ranks");
    CHECK(refusal("EtL", 0) == "it needs at least one pipeline rank");
}
