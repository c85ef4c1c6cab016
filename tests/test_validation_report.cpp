// validation_report.hpp: the report's vocabulary on its own (what validate fills is tested in
// test_validate.cpp).

#include <ppsched/algorithms/validation_report.hpp>

#include <catch2/catch.hpp>

#include <cstddef>
#include <string>

using ppsched::action;
using ppsched::rule;
using ppsched::validation_report;
using ppsched::violation;

namespace {

constexpr violation missing_forward(int mb) {
    violation v;
    v.what = rule::missing_forward;
    v.rank = 0;
    v.subject = action::forward(0, mb);
    v.has_subject = true;
    return v;
}

constexpr validation_report report_of(std::size_t n) {
    validation_report r;
    for (std::size_t i = 0; i < n; ++i) r.add(missing_forward(static_cast<int>(i)));
    return r;
}

} // namespace

TEST_CASE("every rule has a short name", "[validation_report]") {
    STATIC_REQUIRE(to_string_view(rule::invalid_config) == "invalid_config");
    STATIC_REQUIRE(to_string_view(rule::missing_recv) == "missing_recv");
    STATIC_REQUIRE(to_string_view(rule::deadlock) == "deadlock");
    for (std::size_t i = 0; i < ppsched::rule_count; ++i)
        CHECK(std::string(to_string_view(static_cast<rule>(i))) != "?");
}

TEST_CASE("an empty report is valid and converts to true", "[validation_report]") {
    STATIC_REQUIRE(validation_report{});
    STATIC_REQUIRE(!report_of(1));
    STATIC_REQUIRE(report_of(2).count(rule::missing_forward) == 2);
    STATIC_REQUIRE(report_of(2).has(rule::missing_forward));
    STATIC_REQUIRE(!report_of(2).has(rule::deadlock));
    CHECK(to_string(validation_report{}) == "valid");
}

TEST_CASE("a report keeps the first max_stored violations and counts the rest",
          "[validation_report]") {
    validation_report r = report_of(validation_report::max_stored + 5);
    r.count_more(3);
    CHECK(r.size() == validation_report::max_stored);
    CHECK(r.total() == validation_report::max_stored + 8);
    CHECK(r.truncated());
    CHECK(to_string(r).find("... and 8 more (1008 violations in all)") != std::string::npos);
}

TEST_CASE("a violation reads as one line naming its rule", "[validation_report]") {
    CHECK(describe(missing_forward(3)) == "rank 0: missing 0F3 [missing_forward]");
}
