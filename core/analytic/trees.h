// Token trees: expected accepted length from per-depth, per-rank acceptance, and Sequoia's dynamic program for
// the best tree under a node budget. Model (design/analytic_readings.md, "Trees"): at each depth the accepted
// child is one exclusive choice among ranks; P(rank r accepted | parent accepted) = p[d][r], Σ_r p[d][r] ≤ 1.
// Under it, E[accepted length] = 1 + Σ_{nodes} Π(path acceptance) exactly. Values are "modeled".
#pragma once

#include <vector>

namespace speculum::analytic {

// p[d][r]: acceptance of the rank-r child (0 = the draft's top choice) of a depth-d node (root depth 0).
// Depths beyond p.size()−1 reuse the last row; ranks beyond a row's size have acceptance 0.
using AcceptanceTable = std::vector<std::vector<double>>;

// A token tree in parent-array form. Node 0 is the root (the last verified token); parent[0] = −1 and
// parent[i] < i for i ≥ 1. Siblings are ranked in order of appearance (first child = rank 0).
struct TokenTree {
    std::vector<int> parent{-1};
    bool operator==(const TokenTree&) const = default;
};

// Throws InvalidInput naming `field` for an empty tree, a bad parent index or a bad table.
void validate_tree(const TokenTree& tree, const char* field = "tree");
void validate_acceptance_table(const AcceptanceTable& p, const char* field = "tree.p");

TokenTree chain_tree(int k);  // root plus a chain of k draft tokens
std::vector<int> tree_depths(const TokenTree& tree);
std::vector<int> tree_ranks(const TokenTree& tree);

// Sequoia's single vector p[r] (the same at every depth) as a table with `depth` rows.
AcceptanceTable uniform_table(const std::vector<double>& p_by_rank, int depth);

// Probability that each node is on the accepted path (root = 1).
std::vector<double> node_acceptance(const TokenTree& tree, const AcceptanceTable& p);
// 1 + Σ_{non-root nodes} Π(path acceptance): accepted draft tokens plus the target's own token.
double tree_expected_length(const TokenTree& tree, const AcceptanceTable& p);

// What one verification step with `tree` is expected to give: P(node on the accepted path), E[tokens per target
// pass] (1 + Σ node acceptance), the tree's depth, and its speedup E[len] / (1 + depth·c) — the draft runs once
// per tree level at cost c per call (modeled).
struct TreeFigures {
    std::vector<double> node_acceptance;  // parallel to tree.parent
    double expected_length = 1;
    int depth              = 0;
    double speedup         = 1;
};
TreeFigures tree_figures(const TokenTree& tree, const AcceptanceTable& p, double c);

struct SequoiaResult {
    double expected_length = 1.0;        // of the best tree with exactly `node_budget` nodes (or fewer)
    TokenTree tree;                      // that tree
    std::vector<double> best_by_budget;  // best expected length for budgets 1..node_budget (index n−1)
};

// Best tree with at most `node_budget` nodes counting the root and at most `max_depth` draft levels below it.
// DP: F(n, d) = 1 + G(n−1, 0, d), G(m, r, d) = max(0, max_{s≥1} p[d][r] F(s, d+1) + G(m−s, r+1, d));
// O(budget² · ranks · depth). Exact for this acceptance model.
SequoiaResult sequoia_best_tree(const AcceptanceTable& p, int node_budget, int max_depth);

}  // namespace speculum::analytic
