// Token trees: expected length from per-depth per-rank acceptance, and Sequoia's DP against brute force over
// every tree shape of small budgets.
#include "core/analytic/checks.h"
#include "core/analytic/csdrafting.h"
#include "core/analytic/trees.h"

#include <gtest/gtest.h>

#include <functional>

using namespace speculum::analytic;

namespace {
constexpr double kTol = 1e-12;

// Best expected length over all parent arrays with n nodes (parent[i] < i), depth ≤ max_depth.
double brute_force_best(const AcceptanceTable& p, int n, int max_depth) {
    double best = 0;
    TokenTree t;
    t.parent.assign(size_t(n), 0);
    t.parent[0]                  = -1;
    std::function<void(int)> rec = [&](int i) {
        if (i == n) {
            auto d = tree_depths(t);
            for (int x : d)
                if (x > max_depth) return;
            best = std::max(best, tree_expected_length(t, p));
            return;
        }
        for (int par = 0; par < i; ++par) {
            t.parent[size_t(i)] = par;
            rec(i + 1);
        }
    };
    rec(1);
    return best;
}
}  // namespace

TEST(Trees, ChainTreeMatchesChainFormula) {
    AcceptanceTable p{{0.9}, {0.6}, {0.3}};
    EXPECT_NEAR(tree_expected_length(chain_tree(3), p), expected_tokens_chain({0.9, 0.6, 0.3}), kTol);
    EXPECT_NEAR(tree_expected_length(chain_tree(0), p), 1.0, kTol);
}

TEST(Trees, HandComputedTree) {
    // root → a (rank 0), b (rank 1); a → c (rank 0). p0 = {0.6, 0.2}, p1 = {0.5}.
    TokenTree t{{-1, 0, 0, 1}};
    AcceptanceTable p{{0.6, 0.2}, {0.5}};
    EXPECT_NEAR(tree_expected_length(t, p), 1 + 0.6 + 0.2 + 0.6 * 0.5, kTol);
    auto r = tree_ranks(t);
    EXPECT_EQ(r, (std::vector<int>{0, 0, 1, 0}));
}

TEST(Trees, SequoiaMatchesBruteForce) {
    std::vector<AcceptanceTable> tables{
        uniform_table({0.6, 0.2, 0.1}, 8),
        {{0.8, 0.1}, {0.5, 0.3}, {0.3, 0.3, 0.2}},
        uniform_table({0.3, 0.3, 0.3}, 8),
        uniform_table({0.95}, 8),
    };
    for (const auto& p : tables)
        for (int n = 1; n <= 7; ++n)
            for (int depth : {1, 2, 6}) {
                auto res = sequoia_best_tree(p, n, depth);
                EXPECT_NEAR(res.expected_length, brute_force_best(p, n, depth), 1e-12) << n << " " << depth;
                // The rebuilt tree achieves the DP value and respects the budget and depth.
                EXPECT_LE(int(res.tree.parent.size()), n);
                EXPECT_NEAR(tree_expected_length(res.tree, p), res.expected_length, 1e-12);
                for (int d : tree_depths(res.tree)) EXPECT_LE(d, depth);
            }
}

TEST(Trees, SequoiaSingleRankIsChain) {
    auto res = sequoia_best_tree(uniform_table({0.7}, 10), 6, 10);
    EXPECT_EQ(res.tree, chain_tree(5));
    EXPECT_NEAR(res.expected_length, expected_tokens_chain({0.7, 0.7, 0.7, 0.7, 0.7}), kTol);
    // Best value grows with the budget.
    auto big = sequoia_best_tree(uniform_table({0.5, 0.2, 0.1}, 12), 64, 12);
    for (size_t i = 1; i < big.best_by_budget.size(); ++i) EXPECT_GE(big.best_by_budget[i], big.best_by_budget[i - 1]);
}

TEST(Trees, RejectsInvalidInputs) {
    EXPECT_THROW(tree_expected_length(TokenTree{{}}, {{0.5}}), InvalidInput);
    EXPECT_THROW(tree_expected_length(TokenTree{{-1, 1}}, {{0.5}}), InvalidInput);
    EXPECT_THROW(tree_expected_length(chain_tree(2), {}), InvalidInput);
    EXPECT_THROW(tree_expected_length(chain_tree(2), {{0.7, 0.5}}), InvalidInput);  // ranks sum > 1
    EXPECT_THROW(tree_expected_length(chain_tree(2), {{1.5}}), InvalidInput);
    EXPECT_THROW(sequoia_best_tree({{0.5}}, 0, 4), InvalidInput);
    try {
        tree_expected_length(TokenTree{{}}, {{0.5}});
    } catch (const InvalidInput& e) {
        EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos);
    }
}

TEST(Trees, ShortTableReusesItsLastRow) {
    // A chain of 4 under a 2-row table: depths 2 and 3 reuse row 1. A rank beyond a row's length accepts nothing.
    const AcceptanceTable p{{0.9}, {0.5}};
    EXPECT_NEAR(tree_expected_length(chain_tree(4), p), 1 + 0.9 + 0.9 * 0.5 + 0.9 * 0.25 + 0.9 * 0.125, kTol);
    EXPECT_NEAR(tree_expected_length(TokenTree{{-1, 0, 0}}, p), 1 + 0.9 + 0.0, kTol);
    // And the DP, with a budget deeper than the table, agrees with brute force on the extended table.
    const AcceptanceTable longer{{0.9}, {0.5}, {0.5}, {0.5}, {0.5}, {0.5}};
    EXPECT_NEAR(sequoia_best_tree(p, 6, 5).expected_length, brute_force_best(longer, 6, 5), kTol);
}
