#include <ppsched/plan/partition.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <limits>
#include <optional>
#include <random>
#include <vector>

using ppsched::min_max_partition;

namespace {

double largest(const std::vector<double>& w, const std::vector<int>& sizes,
               const std::vector<double>& scale) {
    double best = 0;
    std::size_t at = 0;
    for (std::size_t k = 0; k < sizes.size(); ++k) {
        double s = 0;
        for (int i = 0; i < sizes[k]; ++i) s += w[at++];
        best = std::max(best, (scale.empty() ? 1.0 : scale[k]) * s);
    }
    return best;
}

// Every split of n items into `parts` non-empty parts, by recursion over the first part.
void each_split(int n, int parts, std::vector<int>& prefix,
                const std::function<void(const std::vector<int>&)>& visit) {
    if (parts == 1) {
        prefix.push_back(n);
        visit(prefix);
        prefix.pop_back();
        return;
    }
    for (int first = 1; first <= n - (parts - 1); ++first) {
        prefix.push_back(first);
        each_split(n - first, parts - 1, prefix, visit);
        prefix.pop_back();
    }
}

} // namespace

TEST_CASE("min_max_partition matches brute force on small inputs", "[partition]") {
    std::mt19937 gen(7);
    std::uniform_real_distribution<double> weight(0.0, 10.0);
    std::uniform_real_distribution<double> factor(0.5, 2.0);
    for (int trial = 0; trial < 300; ++trial) {
        const int n = 1 + static_cast<int>(gen() % 12);
        const int parts = 1 + static_cast<int>(gen() % 4);
        std::vector<double> w(static_cast<std::size_t>(n));
        for (double& x : w) x = (gen() % 5 == 0) ? 0.0 : weight(gen);
        std::vector<double> scale;
        if (trial % 3 == 1)
            for (int k = 0; k < parts; ++k) scale.push_back(factor(gen));
        // A per-part cap on the item count, sometimes impossible to meet.
        const int cap = trial % 3 == 2 ? 1 + static_cast<int>(gen() % 4) : n;
        const ppsched::partition_rule rule = [cap](int, int i, int j) { return j - i <= cap; };

        double brute = std::numeric_limits<double>::infinity();
        std::vector<int> prefix;
        if (n >= parts)
            each_split(n, parts, prefix, [&](const std::vector<int>& sizes) {
                if (*std::max_element(sizes.begin(), sizes.end()) > cap) return;
                brute = std::min(brute, largest(w, sizes, scale));
            });
        const auto got = min_max_partition(w, parts, scale, rule);
        INFO("trial " << trial << ", n " << n << ", parts " << parts << ", cap " << cap);
        if (brute == std::numeric_limits<double>::infinity()) {
            CHECK_FALSE(got.has_value());
            continue;
        }
        REQUIRE(got.has_value());
        REQUIRE(got->size() == static_cast<std::size_t>(parts));
        int total = 0;
        for (int s : *got) {
            CHECK(s >= 1);
            CHECK(s <= cap);
            total += s;
        }
        CHECK(total == n);
        CHECK(largest(w, *got, scale) == Approx(brute).epsilon(1e-12).margin(1e-12));
    }
}

TEST_CASE("min_max_partition prefers the most even of the optimal splits", "[partition]") {
    // The bottleneck is the 10; the ones around it are best shared evenly.
    const std::vector<double> w{1, 1, 1, 1, 10, 1, 1, 1, 1};
    const auto got = min_max_partition(w, 3);
    REQUIRE(got.has_value());
    CHECK(*got == std::vector<int>{4, 1, 4});
}

TEST_CASE("min_max_partition rejects impossible requests", "[partition]") {
    const std::vector<double> w{1, 2};
    CHECK_FALSE(min_max_partition(w, 3).has_value());
    CHECK_THROWS_AS(min_max_partition(w, 0), ppsched::config_error);
    const std::vector<double> wrong_scale{1};
    CHECK_THROWS_AS(min_max_partition(w, 2, wrong_scale), ppsched::config_error);
}

TEST_CASE("min_max_partition splits parts whose squares overflow", "[partition]") {
    // Parts of 1e200: their squares are inf in double; the split is still the even one.
    const std::vector<double> w{1e200, 1e200, 1e200, 1e200};
    const auto s = ppsched::min_max_partition(w, 2);
    REQUIRE(s);
    CHECK(*s == std::vector<int>{2, 2});
}
