// Every closed form against the Monte Carlo simulation of the same process, within 4 standard errors.
#include "core/analytic/checks.h"
#include "core/analytic/csdrafting.h"
#include "core/analytic/montecarlo.h"
#include "core/analytic/trees.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace speculum::analytic;

namespace {
constexpr int64_t kRounds = 200000;
constexpr double kSigmas  = 4.0;  // a correct closed form fails this about once in 16,000 runs per check
#define EXPECT_WITHIN_SE(stats, value)                                    \
    EXPECT_NEAR((stats).mean, (value), kSigmas*(stats).std_error + 1e-12) \
        << "MC " << (stats).mean << " ± " << (stats).std_error << " vs closed form " << (value)
}  // namespace

TEST(MonteCarlo, RngIsReproducibleAndUniform) {
    Rng a(42), b(42), c(43);
    EXPECT_EQ(a.next(), b.next());
    EXPECT_NE(a.next(), c.next());
    double sum = 0;
    Rng r(7);
    for (int i = 0; i < 100000; ++i) sum += r.uniform();
    EXPECT_NEAR(sum / 100000, 0.5, 4 * 0.2887 / std::sqrt(100000.0));
}

TEST(MonteCarlo, ChainScalarAndPerPosition) {
    for (double a : {0.3, 0.8}) {
        auto s = mc_chain({a}, 6, kRounds, 1);
        EXPECT_WITHIN_SE(s, ewif_sd(a, 0.0, 6));
    }
    std::vector<double> pos{0.95, 0.8, 0.6, 0.4, 0.2};
    auto s = mc_chain(pos, 5, kRounds, 2);
    EXPECT_WITHIN_SE(s, expected_tokens_chain(pos));
    // The simulator can tell a wrong formula apart: the i.i.d. value at the mean α is far off.
    double mean_alpha = (0.95 + 0.8 + 0.6 + 0.4 + 0.2) / 5;
    EXPECT_GT(std::abs(s.mean - ewif_sd(mean_alpha, 0.0, 5)), 10 * s.std_error);
}

TEST(MonteCarlo, VerticalCascadeTwoAndThreeLevels) {
    std::vector<DraftLevel> two{{{0.8}, 0.1, 2}, {{0.6}, 0.0, 3}};
    auto s2 = mc_vertical_cascade(two, kRounds, 3);
    EXPECT_WITHIN_SE(s2, vertical_cascade(two).expected_tokens);
    double thm = ewif_vertical_two_level(0.8, 0.6, 3, 2, 0.1, 0.0) * vertical_cascade(two).cost;
    EXPECT_WITHIN_SE(s2, thm);
    std::vector<DraftLevel> three{{{0.8}, 0.1, 2}, {{0.7}, 0.02, 2}, {{0.5}, 0.0, 4}};
    EXPECT_WITHIN_SE(mc_vertical_cascade(three, kRounds / 2, 4), vertical_cascade(three).expected_tokens);
    // Per-position acceptance at every level (no closed form in the paper; the distribution propagation).
    std::vector<DraftLevel> pos{{{0.9, 0.7, 0.5}, 0.1, 2}, {{0.8, 0.4}, 0.0, 5}};
    EXPECT_WITHIN_SE(mc_vertical_cascade(pos, kRounds, 5), vertical_cascade(pos).expected_tokens);
    // Max-Gram bottom.
    std::vector<DraftLevel> mag{{{0.8}, 0.02, 2}, max_gram_level(0.5)};
    EXPECT_WITHIN_SE(mc_vertical_cascade(mag, kRounds, 6), vertical_cascade(mag).expected_tokens);
}

TEST(MonteCarlo, TreesAndSequoia) {
    AcceptanceTable p{{0.6, 0.2, 0.1}, {0.5, 0.3}, {0.4}};
    TokenTree t{{-1, 0, 0, 0, 1, 1, 2, 4}};
    EXPECT_WITHIN_SE(mc_tree(t, p, kRounds, 7), tree_expected_length(t, p));
    auto best = sequoia_best_tree(uniform_table({0.5, 0.2, 0.1}, 6), 24, 6);
    EXPECT_WITHIN_SE(mc_tree(best.tree, uniform_table({0.5, 0.2, 0.1}, 6), kRounds, 8), best.expected_length);
    // A chain tree is the chain process.
    EXPECT_WITHIN_SE(mc_tree(chain_tree(4), {{0.9}, {0.7}, {0.5}, {0.3}}, kRounds, 9),
                     expected_tokens_chain({0.9, 0.7, 0.5, 0.3}));
}

TEST(MonteCarlo, RejectsInvalidInputs) {
    EXPECT_THROW(mc_chain({1.5}, 3, 10, 1), InvalidInput);
    EXPECT_THROW(mc_chain({0.5}, 3, 0, 1), InvalidInput);
    EXPECT_THROW(mc_tree(TokenTree{{}}, {{0.5}}, 10, 1), InvalidInput);
    EXPECT_THROW(mc_vertical_cascade({}, 10, 1), InvalidInput);
}
