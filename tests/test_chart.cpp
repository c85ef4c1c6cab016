// io/chart.hpp: what a picture shows, its title and summary lines (how it is drawn is tested in
// test_svg.cpp).

#include <ppsched/io/chart.hpp>

#include <catch2/catch.hpp>

#include <string>

using ppsched::config;
using ppsched::io::chart;

TEST_CASE("a chart's title names the schedule and its configuration", "[chart]") {
    chart c;
    c.name = "1F1B";
    c.cfg = config{.ranks = 4, .microbatches = 8};
    CHECK(chart_title(c) == "1F1B: 4 ranks, 1 stage per rank, 8 microbatches");
    c.name.clear();
    c.cfg = config{.ranks = 1,
                   .stages_per_rank = 2,
                   .microbatches = 1,
                   .placement = ppsched::stage_placement::v};
    c.sim.lowered = true;
    c.steps = true;
    CHECK(chart_title(c) ==
          "pipeline: 1 rank, 2 stages per rank, 1 microbatch, V placement, lowered, step layout");
}

TEST_CASE("a chart's summary line gives makespan, ideal, bubble ratio and idle share", "[chart]") {
    chart c;
    c.sim.makespan = 52;
    c.sim.ideal = 48;
    c.sim.bubble_ratio = 4.0 / 48;
    c.sim.bubble_fraction = 4.0 / 52;
    CHECK(chart_stats(c) ==
          "makespan 52 \u00b7 ideal 48 \u00b7 bubble ratio 0.0833 \u00b7 idle 7.69 %");
    c.steps = true;
    CHECK(chart_stats(c).rfind("makespan 52 steps", 0) == 0);
}
