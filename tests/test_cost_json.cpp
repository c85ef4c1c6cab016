#include <ppsched/io/cost_json.hpp>

#include <catch2/catch.hpp>

#include <string>

using ppsched::cost_model;
using ppsched::parse_error;
using ppsched::io::read_cost_json;

namespace {
// The message of the parse_error `text` raises ("" when it parses).
std::string error_of(const std::string& text) {
    try {
        (void)read_cost_json(text, "costs.json");
    } catch (const parse_error& e) {
        return e.what();
    }
    return "";
}
} // namespace

TEST_CASE("a cost file sets uniform values, per-stage arrays and the scalars", "[cost_json]") {
    const cost_model c = read_cost_json(R"({
  "F": 1, "I": 1.25, "W": 0.75, "OVERLAP_F_B": 2.5,
  "B": [null, null, 2.5e0],
  "UNSHARD": 0.1, "REDUCE_GRAD": 0.3, "activation": 2, "parameters": 4,
  "p2p_latency": 0.05, "p2p_transfer": 0.02, "input_grad_frees": 0.5,
  "_note": {"ignored": [true, false, null, "text \u00e9"]}
})");
    CHECK(c.uniform.forward == 1);
    CHECK(c.uniform.backward_input == 1.25);
    CHECK(c.uniform.backward_weight == 0.75);
    CHECK(c.uniform.overlap_f_b == 2.5);
    CHECK_FALSE(c.uniform.full_backward.has_value());
    REQUIRE(c.per_stage.size() == 3);
    CHECK_FALSE(c.per_stage[0].full_backward.has_value());
    CHECK(c.per_stage[2].full_backward == 2.5);
    CHECK(c.at(0).full_backward == 2);   // I + W
    CHECK(c.at(2).full_backward == 2.5); // given
    CHECK(c.uniform.unshard == 0.1);
    CHECK(c.uniform.reduce_grad == 0.3);
    CHECK(c.uniform.activation == 2);
    CHECK(c.uniform.parameters == 4);
    CHECK(c.p2p_latency == 0.05);
    CHECK(c.p2p_transfer == 0.02);
    CHECK(c.input_grad_frees == 0.5);
}

TEST_CASE("per-stage objects under 'stages' override the top-level values", "[cost_json]") {
    const cost_model c = read_cost_json(R"({"F": 2, "stages": [null, {"F": 3, "W": 1}]})");
    REQUIRE(c.per_stage.size() == 2);
    CHECK(c.at(0).forward == 2);
    CHECK(c.at(1).forward == 3);
    CHECK(c.at(1).backward_weight == 1);
    CHECK(c.at(5).forward == 2);
}

TEST_CASE("an empty object is the default cost model; write and read round-trip", "[cost_json]") {
    CHECK(read_cost_json("{}") == cost_model{});
    CHECK(ppsched::io::write_cost_json(cost_model{}) == "{}\n");
    cost_model c = cost_model::uniform_fiw(1, 1.25, 0.75);
    c.per_stage.resize(3);
    c.per_stage[1].forward = 1.5;
    c.per_stage[2].activation = 0.5;
    c.p2p_latency = 0.125;
    c.input_grad_frees = 0.25;
    const std::string text = ppsched::io::write_cost_json(c);
    CHECK(read_cost_json(text) == c);
    // Doubles are written in their shortest exact form.
    c.uniform.forward = 0.1;
    CHECK(read_cost_json(ppsched::io::write_cost_json(c)) == c);
}

TEST_CASE("malformed JSON is reported with the file, line and column", "[cost_json][errors]") {
    CHECK(error_of("{\n  \"F\": 1,\n  \"W\" 2\n}") ==
          "costs.json:3:7: expected ':' after the key, found '2'");
    CHECK(error_of("{\"F\": 1,}") == "costs.json:1:9: expected a key (a string), found '}'");
    CHECK(error_of("{\"F\": 01}") == "costs.json:1:8: expected no leading zero, found '1'");
    CHECK(error_of("{\"F\": .5}") ==
          "costs.json:1:7: expected a value (object, array, string, number, true, false or "
          "null), found '.'");
    CHECK(error_of("{\"F\": 1} x") ==
          "costs.json:1:10: expected the end of the document, found 'x'");
    CHECK(error_of("{\"F\": 1") == "costs.json:1:8: expected ',' or '}' in the object, found the "
                                   "end of the text");
    CHECK(error_of("{\"_s\": \"a\tb\"}") ==
          "costs.json:1:10: expected no control character in a string (escape it), found byte 9");
    CHECK(error_of("{\"F\": 1, \"F\": 2}") ==
          "costs.json:1:10: expected each key once, found 'F' a second time");
    CHECK(error_of("{\"F\": 1e999}") ==
          "costs.json:1:7: expected a number that fits a double, found '1e999'");
    CHECK(error_of("{\"F\": -2.5e-400}") ==
          "costs.json:1:7: expected a number a double can hold (this one is too close to 0: write "
          "0), found '-2.5e-400'");
    // Too large with a negative exponent; too close to 0 without one.
    CHECK_THAT(error_of("{\"F\": 1" + std::string(400, '0') + "e-5}"),
               Catch::Contains("expected a number that fits a double"));
    CHECK_THAT(error_of("{\"F\": 0." + std::string(400, '0') + "1}"),
               Catch::Contains("too close to 0"));
    // A long one is cut to its first 40 characters.
    CHECK(error_of("{\"F\": 1" + std::string(400, '0') + "}") ==
          "costs.json:1:7: expected a number that fits a double, found '1" + std::string(39, '0') +
              "'");
    CHECK(error_of(std::string(100, '[') + std::string(100, ']')).find("nested") !=
          std::string::npos);
    CHECK(error_of("") == "costs.json:1:1: expected a value, found the end of the text");
}

TEST_CASE("wrong keys, types and values are reported at the value", "[cost_json][errors]") {
    CHECK(error_of("{\n \"f\": 1}")
              .rfind("costs.json:2:7: unknown key 'f'; the valid keys are F, "
                     "I, W, B, OVERLAP_F_B",
                     0) == 0);
    CHECK(error_of("{\"F\": \"1\"}") ==
          "costs.json:1:7: expected a number for 'F', found a string");
    CHECK(error_of("{\"F\": -1}") == "costs.json:1:7: expected a non-negative number for 'F'");
    CHECK(error_of("{\"B\": [1, true]}") ==
          "costs.json:1:11: expected a number for 'B[1]', found a boolean");
    CHECK(error_of("{\"input_grad_frees\": 2}") ==
          "costs.json:1:22: expected input_grad_frees in [0, 1]");
    CHECK(error_of("[1]") == "costs.json:1:1: expected an object of costs, found an array");
    CHECK(error_of("{\"stages\": [{\"G\": 1}]}")
              .rfind("costs.json:1:19: unknown per-stage key 'G'", 0) == 0);
    CHECK(error_of("{\"F\": [1], \"stages\": [{\"F\": 2}]}") ==
          "costs.json:1:29: expected one value for stages[0].F (it is set twice)");
    // Per-stage arrays of different lengths (a shorter one would silently keep defaults).
    CHECK(error_of("{\"F\": [1, 1, 1], \"B\": [2, 2, 2, 2]}") ==
          "costs.json:1:23: 'B' has 4 entries but 'F' has 3: give one entry per stage (null "
          "keeps a stage's default)");
    CHECK(error_of("{\"F\": [1, 1], \"stages\": [{}]}") ==
          "costs.json:1:25: 'stages' has 1 entries but 'F' has 2: give one entry per stage "
          "(null keeps a stage's default)");
    // Inconsistent values: no single position to point at.
    CHECK(error_of("{\"B\": 1, \"I\": 2}") ==
          "costs.json: B must be >= the given I or W (stage 0)");
}

TEST_CASE("a missing cost file is a parse error naming it", "[cost_json][errors]") {
    CHECK_THROWS_WITH(ppsched::io::read_cost_json_file("/nonexistent/costs.json"),
                      "/nonexistent/costs.json: cannot open file for reading");
}

TEST_CASE("repeated keys are found in large objects too (checked with a hash set)",
          "[cost_json][bounded]") {
    // 80,000 keys took 11.6 s with the former quadratic scan; how fast is for the benchmarks,
    // what is checked here is that the set finds the repeat and its position.
    std::string text = R"({"F": 1, "_note": {)";
    for (int k = 0; k < 80000; ++k) text += (k ? ", \"k" : "\"k") + std::to_string(k) + "\": 0";
    CHECK(error_of(text + "}}").empty());
    const std::string bad = text + ", \"k41234\": 1}}";
    const std::string e = error_of(bad);
    CHECK(e.find("'k41234' a second time") != std::string::npos);
    CHECK(e.find("costs.json:1:" + std::to_string(bad.size() - 12)) == 0);
}
