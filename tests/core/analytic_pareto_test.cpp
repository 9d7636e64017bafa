// The one Pareto front against brute-force dominance, with ties, duplicates and NaNs, for each goal direction.
#include "core/analytic/pareto.h"
#include "core/analytic/trees.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

using namespace speculum::analytic;

namespace {

// Brute force: i is on the front unless some j is at least as good on both and better on one.
std::vector<size_t> brute_force(const std::vector<double>& x, const std::vector<double>& y, Goal gx, Goal gy) {
    auto better_eq = [](double a, double b, Goal g) { return g == Goal::maximize ? a >= b : a <= b; };
    auto better    = [](double a, double b, Goal g) { return g == Goal::maximize ? a > b : a < b; };
    std::vector<size_t> front;
    for (size_t i = 0; i < x.size(); ++i) {
        if (std::isnan(x[i]) || std::isnan(y[i])) continue;
        bool dominated = false;
        for (size_t j = 0; j < x.size() && !dominated; ++j)
            dominated = j != i && !std::isnan(x[j]) && !std::isnan(y[j]) && better_eq(x[j], x[i], gx) &&
                        better_eq(y[j], y[i], gy) && (better(x[j], x[i], gx) || better(y[j], y[i], gy));
        if (!dominated) front.push_back(i);
    }
    std::sort(front.begin(), front.end(), [&](size_t a, size_t b) { return x[a] != x[b] ? x[a] < x[b] : a < b; });
    return front;
}

}  // namespace

TEST(Pareto, MatchesBruteForceDominanceInEveryDirection) {
    std::mt19937 rng(5);
    for (int trial = 0; trial < 400; ++trial) {
        const size_t n = rng() % 40;
        std::vector<double> x(n), y(n);
        for (size_t i = 0; i < n; ++i) {
            x[i] = double(rng() % 8), y[i] = double(rng() % 8);  // many ties and exact duplicates
            if (rng() % 15 == 0) (rng() % 2 ? x[i] : y[i]) = NAN;
        }
        for (Goal gx : {Goal::minimize, Goal::maximize})
            for (Goal gy : {Goal::minimize, Goal::maximize})
                ASSERT_EQ(pareto_front(x, y, gx, gy), brute_force(x, y, gx, gy)) << "trial " << trial;
    }
    // Less memory and more speed: (1, 2) and (3, 5) are the front; (2, 2) is dominated; the duplicate (3, 5) stays.
    EXPECT_EQ(pareto_front({1, 2, 3, 3, 4}, {2, 2, 5, 5, 4}, Goal::minimize, Goal::maximize),
              (std::vector<size_t>{0, 2, 3}));
    EXPECT_THROW(pareto_front({1}, {}, Goal::minimize, Goal::maximize), std::invalid_argument);
}

TEST(TreeFigures, ChainSpeedupIsExpectedLengthOverOnePlusDepthTimesC) {
    const TokenTree chain = chain_tree(3);
    const AcceptanceTable p{{0.5}, {0.5}, {0.5}};
    const TreeFigures f = tree_figures(chain, p, 0.1);
    EXPECT_DOUBLE_EQ(f.expected_length, 1 + 0.5 + 0.25 + 0.125);
    EXPECT_EQ(f.depth, 3);
    EXPECT_DOUBLE_EQ(f.speedup, f.expected_length / 1.3);
    ASSERT_EQ(f.node_acceptance.size(), chain.parent.size());
    EXPECT_DOUBLE_EQ(f.node_acceptance.back(), 0.125);
}
