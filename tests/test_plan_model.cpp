#include <ppsched/plan/model.hpp>

#include <catch2/catch.hpp>

#include <string>

using ppsched::layer_kind;
using ppsched::model_description;
using ppsched::parse_error;
using ppsched::read_model_json;

namespace {
// The message of the parse_error `text` raises ("" when it parses).
std::string error_of(const std::string& text) {
    try {
        (void)read_model_json(text, "m.json");
    } catch (const parse_error& e) {
        return e.what();
    }
    return "";
}

const char* const good = R"({
  "name": "tiny", "memory_capacity": 10, "p2p_latency": 0.5, "p2p_bandwidth": 2,
  "notes": "hand-written",
  "layers": [
    {"kind": "embedding", "F": 0, "B": 0, "activation": 0, "parameters": 1, "send": 4},
    {"kind": "decoder", "name": "block", "count": 3, "F": 1, "B": 2, "activation": 0.5,
     "parameters": 2, "send": 4},
    {"kind": "loss", "F": 2, "B": 4, "activation": 1, "parameters": 1,
     "modules": ["final_norm", "lm_head"]}
  ]
})";
} // namespace

TEST_CASE("a model file expands runs of layers and keeps every field", "[plan_model]") {
    const model_description m = read_model_json(good);
    CHECK(m.name == "tiny");
    CHECK(m.memory_capacity == 10);
    CHECK(m.p2p_latency == 0.5);
    CHECK(m.p2p_bandwidth == 2);
    REQUIRE(m.layers.size() == 5);
    CHECK(m.layers[0].kind == layer_kind::embedding);
    CHECK(m.layers[0].name == "embedding");
    CHECK(m.layers[0].modules == std::vector<std::string>{"tok_embeddings"});
    for (int i = 1; i <= 3; ++i) {
        CHECK(m.layers[static_cast<std::size_t>(i)].kind == layer_kind::decoder);
        CHECK(m.layers[static_cast<std::size_t>(i)].name == "block");
        CHECK(m.layers[static_cast<std::size_t>(i)].full_backward == 2);
        CHECK(m.layers[static_cast<std::size_t>(i)].modules ==
              std::vector<std::string>{"layers.{n}"});
    }
    CHECK(m.layers[4].kind == layer_kind::loss);
    CHECK(m.layers[4].send == 0);
    CHECK(m.layers[4].modules == std::vector<std::string>{"final_norm", "lm_head"});
    CHECK_FALSE(m.splits());
}

TEST_CASE("a model with I and W on every layer splits its backward", "[plan_model]") {
    const model_description m = read_model_json(
        R"({"memory_capacity": 1, "layers": [{"kind": "decoder", "F": 1, "I": 1.5, "W": 0.5,
            "activation": 0, "parameters": 0}]})");
    REQUIRE(m.layers.size() == 1);
    CHECK(m.splits());
    CHECK(m.layers[0].full_backward == 2);
}

TEST_CASE("every mistake in a model file is a parse_error with its position", "[plan_model]") {
    CHECK(error_of("[1]") == "m.json:1:1: expected an object (the model)");
    CHECK(error_of(R"({"memory_capacity": 1})") ==
          "m.json:1:1: the model has no 'layers' (an array of layers)");
    CHECK(error_of(R"({"layers": [{"kind": "decoder", "F": 1, "B": 2, "activation": 0,
        "parameters": 0}]})") ==
          "m.json:1:1: the model has no 'memory_capacity' (GB per rank, a positive number)");
    CHECK(error_of(R"({"memory_capacity": 0, "layers": []})") ==
          "m.json:1:21: expected a positive number for 'memory_capacity'");
    CHECK(error_of(R"({"memory_capacity": 1, "layers": []})") ==
          "m.json:1:34: expected at least one layer in 'layers'");
    CHECK(error_of(R"({"memory_capacity": 1, "colour": 3, "layers": []})") ==
          "m.json:1:34: unknown key 'colour' in the model (expected name, memory_capacity, "
          "p2p_latency, p2p_bandwidth, layers, notes)");
    CHECK(error_of("{\"memory_capacity\": 1,\n \"layers\": [{\"kind\": \"encoder\"}]}") ==
          "m.json:2:22: unknown layer kind 'encoder' (expected embedding, decoder, mtp or loss)");
    CHECK(error_of(R"({"memory_capacity": 1, "layers": [{"kind": "decoder"}]})") ==
          "m.json:1:35: the layer has no 'F' (forward time, ms)");
    CHECK(error_of(R"({"memory_capacity": 1, "layers": [{"kind": "decoder", "F": 1,
        "activation": 0, "parameters": 0}]})") ==
          "m.json:1:35: the layer has no backward time (give 'I' and 'W', or 'B')");
    CHECK(error_of(R"({"memory_capacity": 1, "layers": [{"kind": "decoder", "F": 1, "I": 1,
        "activation": 0, "parameters": 0}]})") ==
          "m.json:1:35: the layer gives 'I' but not 'W' (give both, or 'B' alone)");
    CHECK(error_of(R"({"memory_capacity": 1, "layers": [{"kind": "decoder", "F": 1, "I": 1,
        "W": 1, "B": 2, "activation": 0, "parameters": 0}]})") ==
          "m.json:2:22: give either 'B' or both 'I' and 'W', not both (B would be I + W)");
    CHECK(error_of(R"({"memory_capacity": 1, "layers": [{"kind": "decoder", "F": -1}]})") ==
          "m.json:1:60: expected a non-negative number for 'F'");
    CHECK(error_of(R"({"memory_capacity": 1, "layers": [{"kind": "decoder", "F": "1"}]})") ==
          "m.json:1:60: expected a number for 'F', found a string");
    CHECK(error_of(R"({"memory_capacity": 1, "layers": [{"kind": "decoder", "count": 2.5}]})") ==
          "m.json:1:64: expected an integer in [1, 100000] for 'count'");
    CHECK(error_of(R"({"memory_capacity": 1, "layers": [{"kind": "decoder", "F": 1, "B": 2,
        "activation": 0, "parameters": 0, "send": 3}]})") ==
          "m.json:1:1: the model has no 'p2p_bandwidth' (GB/s) but its layers send tensors "
          "('send' in MB)");
    CHECK(error_of(R"({"memory_capacity": 1, "layers": [{"kind": "decoder", "F": 1, "B": 2,
        "activation": 0, "parameters": 0, "modules": "layers"}]})") ==
          "m.json:2:54: expected an array of strings for 'modules', found a string");
    CHECK(error_of(R"({"memory_capacity": 1, "layers": [{"kind": "decoder", "F": 1, "B": 2,
        "activation": 0, "parameters": 0, "colour": 1}]})") ==
          "m.json:2:53: unknown key 'colour' in a layer (expected kind, name, count, F, I, W, B, "
          "activation, parameters, send, modules, notes)");
    CHECK(error_of(R"({"memory_capacity": 1, "layers": [3]})") ==
          "m.json:1:35: expected an object (a layer), found a number");
    CHECK(error_of("{\"memory_capacity\": 1,}").find("m.json:1:23: expected a key") == 0);
    // The embedding first and the loss last, once each: Megatron's layout has no other place
    // for them (a review's model with two losses before the embedding got "LL|E").
    const std::string layer = R"("F": 1, "B": 2, "activation": 0, "parameters": 0)";
    auto model = [&](const std::string& layers) {
        return R"({"memory_capacity": 1, "layers": [)" + layers + "]}";
    };
    auto of = [&](const std::string& kind, const std::string& extra = "") {
        return R"({"kind": ")" + kind + R"(", )" + layer + extra + "}";
    };
    CHECK_THAT(error_of(model(of("loss", R"(, "count": 2)") + ", " + of("embedding"))),
               Catch::Contains("a 'loss' layer must be the model's last layer, and only one"));
    CHECK_THAT(error_of(model(of("decoder") + ", " + of("embedding"))),
               Catch::Contains("an 'embedding' layer must be the model's first layer"));
    CHECK_THAT(error_of(model(of("embedding") + ", " + of("loss") + ", " + of("decoder"))),
               Catch::Contains("a 'loss' layer must be the model's last layer"));
    CHECK_NOTHROW(ppsched::read_model_json(
        model(of("embedding") + ", " + of("decoder", R"(, "count": 3)") + ", " + of("loss"))));
    // Module names torchtitan gets twice: a template without {n} on a run, or two layers
    // naming one module.
    CHECK(error_of(model(of("decoder", R"(, "count": 2, "modules": ["a.b"])"))) ==
          "m.json:1:35: the module name 'a.b' of layer 1 is also layer 0's (layers count from "
          "0): give each layer its own, or '{n}' in a name shared by several layers (it counts "
          "them)");
    CHECK_THAT(error_of(model(of("decoder", R"(, "modules": ["norm"])") + ", " + of("loss"))),
               Catch::Contains("the module name 'norm' of layer 1 is also layer 0's"));
    CHECK_THAT(error_of(model(of("decoder", R"(, "modules": ["x", "x"])"))),
               Catch::Contains("the module name 'x' appears twice in layer 0"));
    // Names torchtitan can look up: a dotted path with at most one {n}; JSON and Python
    // literals of them need no escaping (quotes and control characters: tests/cli/plan.cmake).
    for (const auto& [modules, why] :
         {std::pair{R"([])", "'modules' is empty"}, std::pair{R"([""])", "'' is empty"},
          std::pair{R"(["{n}{n}"])", "has '{n}' twice"},
          std::pair{R"(["a b"])", "is not a module path"},
          std::pair{R"(["a-b"])", "is not a module path"},
          std::pair{R"(["a{x}"])", "is not a module path"},
          std::pair{R"(["a..b"])", "an empty name between dots"},
          std::pair{R"([".a"])", "an empty name between dots"}}) {
        INFO(modules);
        CHECK_THAT(error_of(model(of("decoder", std::string(R"(, "modules": )") + modules))),
                   Catch::Contains(why));
    }
    CHECK_NOTHROW(ppsched::read_model_json(
        model(of("decoder", R"(, "count": 2, "modules": ["model.layers_{n}.mlp", "x{n}y"])"))));
    CHECK_NOTHROW(ppsched::read_model_json(
        model(of("decoder", R"(, "count": 2, "modules": ["a{n}", "b{n}"])"))));
}

TEST_CASE("the shipped example models read", "[plan_model]") {
    const model_description llama =
        ppsched::read_model_json_file(PPSCHED_SOURCE_DIR "/examples/models/llama_dense.json");
    CHECK(llama.layers.size() == 82);
    CHECK(llama.layers.front().kind == layer_kind::embedding);
    CHECK(llama.layers.back().kind == layer_kind::loss);
    CHECK(llama.splits());
    const model_description ds =
        ppsched::read_model_json_file(PPSCHED_SOURCE_DIR "/examples/models/deepseek_v3.json");
    CHECK(ds.layers.size() == 64);
    CHECK(ds.layers[62].kind == layer_kind::mtp);
}
