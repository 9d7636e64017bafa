// CS Drafting closed forms: the paper's Table 1, the limits of EWIF in α, monotonicity, Thm. 4.3 against the
// any-depth cascade and the PGF recursion, Cor. 4.4 and Cor. 4.6, and rejection of invalid inputs.
#include "core/analytic/checks.h"
#include "core/analytic/csdrafting.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace speculum::analytic;

namespace {
// analytic_readings.md: Leviathan et al. Table 3 argmax rates and the fitted cost coefficients.
constexpr double kCSmall = 0.0069, kCBase = 0.0220;
constexpr double kCnnSmall = 0.65, kCnnBase = 0.73, kEndeSmall = 0.75, kEndeBase = 0.80;
constexpr double kClosedFormTol = 1e-12;
double round2(double v) {
    return std::round(v * 100.0) / 100.0;
}
}  // namespace

TEST(CsDrafting, PhiMatchesSeriesForm) {
    // Eq. (3): φ(x) = α^k x^{k+1} + Σ_{i<k} (α^i − α^{i+1}) x^{i+1}.
    for (double a : {0.0, 0.3, 0.8, 1.0})
        for (int k : {0, 1, 5})
            for (double x : {0.2, 0.9, 1.0, 1.7}) {
                double s = std::pow(a, k) * std::pow(x, k + 1);
                for (int i = 0; i < k; ++i) s += (std::pow(a, i) - std::pow(a, i + 1)) * std::pow(x, i + 1);
                EXPECT_NEAR(phi(a, k, x), s, 1e-12) << a << " " << k << " " << x;
            }
}

// Table 1 with Leviathan et al.'s acceptance rates and costs c fitted so that the six EWIF round to the paper's:
// a consistency check of the formulas and the paper's optimal k, not an independent reproduction of its numbers.
TEST(CsDrafting, ReproducesTable1) {
    EXPECT_EQ(round2(ewif_sd(kCnnSmall, kCSmall, 9)), 2.65);
    EXPECT_EQ(round2(ewif_sd(kCnnBase, kCBase, 8)), 2.96);
    EXPECT_EQ(round2(horizontal_cascade({{kCnnBase, kCBase, 5}, {kCnnSmall, kCSmall, 3}})), 3.03);
    EXPECT_EQ(round2(ewif_sd(kEndeSmall, kCSmall, 12)), 3.61);
    EXPECT_EQ(round2(ewif_sd(kEndeBase, kCBase, 11)), 3.75);
    EXPECT_EQ(round2(horizontal_cascade({{kEndeBase, kCBase, 5}, {kEndeSmall, kCSmall, 8}})), 3.93);
    // The paper's single-draft k are the EWIF-optimal ones under these inputs.
    EXPECT_EQ(best_k_sd({kCnnSmall}, kCSmall, 39), 9);
    EXPECT_EQ(best_k_sd({kCnnBase}, kCBase, 39), 8);
    EXPECT_EQ(best_k_sd({kEndeSmall}, kCSmall, 39), 12);
    EXPECT_EQ(best_k_sd({kEndeBase}, kCBase, 39), 11);
}

TEST(CsDrafting, LimitsInAlpha) {
    for (double c : {0.0, 0.01, 0.3, 1.0})
        for (int k : {1, 4, 16}) {
            EXPECT_NEAR(ewif_sd(0.0, c, k), 1.0 / (c * k + 1.0), kClosedFormTol);
            EXPECT_NEAR(ewif_sd(1.0, c, k), (k + 1.0) / (c * k + 1.0), kClosedFormTol);
            EXPECT_NEAR(ewif_sd(1e-9, c, k), 1.0 / (c * k + 1.0), 1e-8);
            EXPECT_NEAR(ewif_sd(1.0 - 1e-9, c, k), (k + 1.0) / (c * k + 1.0), 1e-6);
        }
}

TEST(CsDrafting, MonotoneInAlphaAndCost) {
    for (int k : {1, 3, 10}) {
        double prev = 0.0;
        for (int i = 0; i <= 100; ++i) {
            double v = ewif_sd(i / 100.0, 0.05, k);
            EXPECT_GT(v, prev);
            prev = v;
        }
        prev = 1e9;
        for (int i = 0; i <= 50; ++i) {
            double v = ewif_sd(0.7, i / 50.0, k);
            EXPECT_LT(v, prev);
            prev = v;
        }
    }
}

TEST(CsDrafting, PerPositionChainMatchesScalar) {
    EXPECT_NEAR(ewif_sd(std::vector<double>{0.7}, 0.1, 5), ewif_sd(0.7, 0.1, 5), kClosedFormTol);
    // 1 + .9 + .9*.5 + .9*.5*.2 = 2.44
    EXPECT_NEAR(expected_tokens_chain({0.9, 0.5, 0.2}), 2.44, kClosedFormTol);
    auto d      = chain_length_distribution({0.9, 0.5, 0.2});
    double mean = 0, total = 0;
    for (size_t t = 0; t < d.size(); ++t) mean += t * d[t], total += d[t];
    EXPECT_NEAR(total, 1.0, kClosedFormTol);
    EXPECT_NEAR(mean, 2.44, kClosedFormTol);
}

TEST(CsDrafting, VerticalTwoLevelMatchesCascadeAndPgf) {
    struct Case {
        double a, ap;
        int k, n;
        double c1, c2;
    };
    for (Case cs :
         {Case{0.8, 0.6, 3, 2, 0.1, 0.01}, Case{0.7, 0.4, 5, 3, 0.05, 0.0}, Case{0.75, 0.5, 10, 1, 0.2, 0.02}}) {
        double thm = ewif_vertical_two_level(cs.a, cs.ap, cs.k, cs.n, cs.c1, cs.c2);
        std::vector<DraftLevel> levels{{{cs.a}, cs.c1, cs.n}, {{cs.ap}, cs.c2, cs.k}};
        EXPECT_NEAR(vertical_cascade(levels).ewif, thm, 1e-10);
        EXPECT_NEAR(vertical_cascade_pgf(levels).ewif, thm, 1e-10);
    }
    // The closed form at points of our choosing (not the paper's figures: it prints none for Thm. 4.3); the paper
    // extraction's Monte Carlo of the i.i.d. model gives 3.390, 2.867, 2.196.
    EXPECT_NEAR(vertical_cascade({{{0.8}, 0, 2}, {{0.6}, 0, 3}}).expected_tokens, 3.383, 5e-4);
    EXPECT_NEAR(vertical_cascade({{{0.7}, 0, 3}, {{0.4}, 0, 5}}).expected_tokens, 2.8697, 5e-4);
    EXPECT_NEAR(vertical_cascade({{{0.75}, 0, 1}, {{0.5}, 0, 10}}).expected_tokens, 2.200, 5e-4);
}

TEST(CsDrafting, DeepCascadeMatchesPgf) {
    std::vector<DraftLevel> levels{{{0.8}, 0.1, 2}, {{0.7}, 0.02, 2}, {{0.5}, 0.0, 4}};
    auto a = vertical_cascade(levels), b = vertical_cascade_pgf(levels);
    EXPECT_NEAR(a.expected_tokens, b.expected_tokens, 1e-10);
    EXPECT_NEAR(a.cost, 1.0 + 0.1 * 2 + 0.02 * 4, kClosedFormTol);
    double total = 0;
    for (double p : a.draft_length_distribution) total += p;
    EXPECT_NEAR(total, 1.0, 1e-12);
    // A single level is plain speculative decoding.
    EXPECT_NEAR(vertical_cascade({{{0.7}, 0.05, 6}}).ewif, ewif_sd(0.7, 0.05, 6), kClosedFormTol);
}

TEST(CsDrafting, MaxGramBelowADraftHelps) {
    // Cor. 4.4: φ_{α',k}(α) < α, so a zero-cost Max-Gram bottom beats the draft alone at k = n.
    for (double a : {0.3, 0.6, 0.9})
        for (double ap : {0.2, 0.5, 0.8})
            for (int k : {1, 5, 10}) EXPECT_LT(phi(ap, k, a), a);
    double alone    = ewif_sd(0.8, 0.02, 5);
    double with_mag = vertical_cascade({{{0.8}, 0.02, 5}, max_gram_level(0.4)}).ewif;
    EXPECT_GT(with_mag, alone);
    EXPECT_EQ(max_gram_level(0.4).steps, kMaxGramBlock);
    EXPECT_EQ(max_gram_level(0.4).c, 0.0);
}

TEST(CsDrafting, HorizontalGradientMatchesFiniteDifference) {
    std::vector<double> a{0.9, 0.7, 0.5, 0.3}, c{0.05, 0.05, 0.01, 0.0};
    auto g = horizontal_cascade_gradient(a, c);
    for (size_t l = 0; l < a.size(); ++l) {
        auto hi = a, lo = a;
        hi[l] += 1e-6, lo[l] -= 1e-6;
        EXPECT_NEAR(g[l], (horizontal_cascade(hi, c) - horizontal_cascade(lo, c)) / 2e-6, 1e-7) << l;
    }
    // Printed special cases: dT/dα_k = Π_{j<k} α_j / cost.
    double cost = 1.11;
    EXPECT_NEAR(g.back(), 0.9 * 0.7 * 0.5 / cost, 1e-12);
}

TEST(CsDrafting, RejectsInvalidInputs) {
    EXPECT_THROW(ewif_sd(1.2, 0.1, 4), InvalidInput);
    EXPECT_THROW(ewif_sd(-0.1, 0.1, 4), InvalidInput);
    EXPECT_THROW(ewif_sd(0.5, -0.1, 4), InvalidInput);
    EXPECT_THROW(ewif_sd(0.5, 0.1, -1), InvalidInput);
    EXPECT_THROW(ewif_sd(std::nan(""), 0.1, 4), InvalidInput);
    EXPECT_THROW(ewif_sd(std::vector<double>{}, 0.1, 4), InvalidInput);
    EXPECT_THROW(vertical_cascade({}), InvalidInput);
    EXPECT_THROW(vertical_cascade({{{0.5}, 0.1, 0}}), InvalidInput);
    EXPECT_THROW(horizontal_cascade({0.5, 0.5}, {0.1}), InvalidInput);
    try {
        vertical_cascade({{{0.5}, 0.1, 2}, {{1.5}, 0.0, 3}});
        FAIL();
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find("cascade.levels[1].alpha[0]"), std::string::npos) << e.what();
    }
}
