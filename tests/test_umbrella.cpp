#include <ppsched/ppsched.hpp>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const fs::path include_dir = fs::path(PPSCHED_SOURCE_DIR) / "include";

// The ppsched headers `header` includes directly (paths relative to include/).
std::vector<std::string> direct_includes(const std::string& header) {
    std::ifstream in(include_dir / header);
    std::vector<std::string> out;
    std::string line;
    const std::string prefix = "#include \"";
    while (std::getline(in, line)) {
        if (line.rfind(prefix, 0) != 0) continue;
        const auto end = line.find('"', prefix.size());
        if (end != std::string::npos)
            out.push_back(line.substr(prefix.size(), end - prefix.size()));
    }
    return out;
}

// Every header reachable from `root` through #include "..." lines.
std::set<std::string> reachable_from(const std::string& root) {
    std::set<std::string> seen{root};
    std::vector<std::string> todo{root};
    while (!todo.empty()) {
        const std::string h = todo.back();
        todo.pop_back();
        for (const auto& inc : direct_includes(h))
            if (seen.insert(inc).second) todo.push_back(inc);
    }
    return seen;
}

} // namespace

TEST_CASE("ppsched.hpp reaches every public header but format.hpp", "[umbrella]") {
    const auto reached = reachable_from("ppsched/ppsched.hpp");
    std::size_t headers = 0;
    for (const auto& entry : fs::recursive_directory_iterator(include_dir / "ppsched")) {
        if (entry.path().extension() != ".hpp") continue;
        const std::string rel = fs::relative(entry.path(), include_dir).generic_string();
        if (rel == "ppsched/format.hpp") continue;
        ++headers;
        INFO(rel << " is not included by ppsched/ppsched.hpp (add it there or to its umbrella)");
        CHECK(reached.count(rel) == 1);
    }
    CHECK(headers > 10);
}

TEST_CASE("no umbrella header reaches fmt", "[umbrella]") {
    for (const std::string umbrella :
         {"ppsched/ppsched.hpp", "ppsched/schedules.hpp", "ppsched/algorithms.hpp"}) {
        INFO(umbrella);
        CHECK(reachable_from(umbrella).count("ppsched/format.hpp") == 0);
    }
    // The check above only follows ppsched's own headers; fmt itself is included with <...>.
    for (const auto& entry : fs::recursive_directory_iterator(include_dir / "ppsched")) {
        if (entry.path().extension() != ".hpp" || entry.path().filename() == "format.hpp") continue;
        std::ifstream in(entry.path());
        std::string line, offending;
        while (std::getline(in, line))
            if (line.rfind("#include <fmt/", 0) == 0) offending = line;
        INFO(entry.path().string() << ": " << offending);
        CHECK(offending.empty());
    }
}

TEST_CASE("the umbrella header is enough to generate, validate and print an order", "[umbrella]") {
    const ppsched::config cfg{.ranks = 2, .stages_per_rank = 2, .microbatches = 4};
    const auto order = ppsched::generate<ppsched::interleaved_1f1b>(cfg);
    CHECK(ppsched::validate(order));
    const auto text = ppsched::io::write_csv(order);
    CHECK(ppsched::io::read_csv(text).cfg() == order.cfg());
    CHECK(!ppsched::io::format_step_table(order).empty());
}

TEST_CASE("docs/reference.md names every public header", "[umbrella][docs]") {
    std::ifstream in(fs::path(PPSCHED_SOURCE_DIR) / "docs" / "reference.md");
    REQUIRE(in);
    const std::string reference{std::istreambuf_iterator<char>(in),
                                std::istreambuf_iterator<char>()};
    for (const auto& entry : fs::recursive_directory_iterator(include_dir / "ppsched")) {
        if (entry.path().extension() != ".hpp") continue;
        const std::string rel =
            fs::relative(entry.path(), include_dir / "ppsched").generic_string();
        if (rel.rfind("detail/", 0) == 0 || rel.find("/detail/") != std::string::npos) continue;
        INFO("docs/reference.md does not mention " << rel << " (add a line for its API)");
        CHECK(reference.find(rel) != std::string::npos);
    }
}

TEST_CASE("no algorithm header includes an io header", "[umbrella][layers]") {
    for (const auto& entry : fs::recursive_directory_iterator(include_dir / "ppsched/algorithms")) {
        if (entry.path().extension() != ".hpp") continue;
        const std::string rel = fs::relative(entry.path(), include_dir).generic_string();
        for (const auto& inc : direct_includes(rel)) {
            INFO(rel << " includes " << inc);
            CHECK(inc.rfind("ppsched/io/", 0) != 0);
        }
    }
}

TEST_CASE("the pictures reach the simulation's results, not the simulator", "[umbrella][layers]") {
    for (const std::string picture :
         {"ppsched/io/chart.hpp", "ppsched/io/svg.hpp", "ppsched/io/chrome_trace.hpp",
          "ppsched/io/html_report.hpp", "ppsched/io/text_timeline.hpp"}) {
        const auto reached = reachable_from(picture);
        INFO(picture);
        CHECK(reached.count("ppsched/simulation.hpp") == 1);
        CHECK(reached.count("ppsched/algorithms/simulate.hpp") == 0);
        CHECK(reached.count("ppsched/algorithms/detail/simulator.hpp") == 0);
    }
}
