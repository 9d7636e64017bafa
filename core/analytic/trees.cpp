// Token-tree expected length and Sequoia's best-tree dynamic program (see trees.h).
#include "core/analytic/trees.h"

#include "core/analytic/checks.h"

#include <algorithm>
#include <string>

namespace speculum::analytic {

namespace {
constexpr int kMaxNodes = 4096;
constexpr int kMaxRanks = 256;

double table_at(const AcceptanceTable& p, int depth, int rank) {
    const auto& row = p[std::min(size_t(depth), p.size() - 1)];
    return size_t(rank) < row.size() ? row[rank] : 0.0;
}
}  // namespace

void validate_tree(const TokenTree& tree, const char* field) {
    std::string f = field;
    if (tree.parent.empty()) throw InvalidInput(f + " is empty: a tree needs at least its root");
    if (tree.parent.size() > size_t(kMaxNodes))
        throw InvalidInput(f + " has " + std::to_string(tree.parent.size()) + " nodes (max " +
                           std::to_string(kMaxNodes) + ")");
    if (tree.parent[0] != -1) throw InvalidInput(f + ".parents[0] must be -1 (the root)");
    for (size_t i = 1; i < tree.parent.size(); ++i)
        if (tree.parent[i] < 0 || size_t(tree.parent[i]) >= i)
            throw InvalidInput(f + ".parents[" + std::to_string(i) + "] must be in [0, " + std::to_string(i - 1) +
                               "], got " + std::to_string(tree.parent[i]));
}

void validate_acceptance_table(const AcceptanceTable& p, const char* field) {
    std::string f = field;
    if (p.empty()) throw InvalidInput(f + " is empty: give at least one row of per-rank acceptance");
    for (size_t d = 0; d < p.size(); ++d) {
        std::string row = f + "[" + std::to_string(d) + "]";
        require_probabilities(p[d], row);
        if (p[d].size() > size_t(kMaxRanks)) throw InvalidInput(row + " has more than 256 ranks");
        double sum = 0;
        for (double v : p[d]) sum += v;
        // Ranks are exclusive choices (analytic_readings.md), so their acceptances cannot sum above 1.
        if (sum > 1.0 + 1e-9) throw InvalidInput(row + " sums to " + std::to_string(sum) + " > 1");
    }
}

TokenTree chain_tree(int k) {
    require_count(k, 0, kMaxNodes - 1, "k");
    TokenTree t;
    for (int i = 1; i <= k; ++i) t.parent.push_back(i - 1);
    return t;
}

std::vector<int> tree_depths(const TokenTree& tree) {
    validate_tree(tree);
    std::vector<int> d(tree.parent.size(), 0);
    for (size_t i = 1; i < d.size(); ++i) d[i] = d[size_t(tree.parent[i])] + 1;
    return d;
}

std::vector<int> tree_ranks(const TokenTree& tree) {
    validate_tree(tree);
    std::vector<int> children(tree.parent.size(), 0), rank(tree.parent.size(), 0);
    for (size_t i = 1; i < rank.size(); ++i) rank[i] = children[size_t(tree.parent[i])]++;
    return rank;
}

AcceptanceTable uniform_table(const std::vector<double>& p_by_rank, int depth) {
    require_count(depth, 1, kMaxNodes, "depth");
    return AcceptanceTable(size_t(depth), p_by_rank);
}

std::vector<double> node_acceptance(const TokenTree& tree, const AcceptanceTable& p) {
    validate_acceptance_table(p);
    auto depth = tree_depths(tree);
    auto rank  = tree_ranks(tree);
    std::vector<double> acc(tree.parent.size(), 1.0);
    for (size_t i = 1; i < acc.size(); ++i) {
        int par = tree.parent[i];
        acc[i]  = acc[size_t(par)] * table_at(p, depth[size_t(par)], rank[i]);
    }
    return acc;
}

double tree_expected_length(const TokenTree& tree, const AcceptanceTable& p) {
    auto acc   = node_acceptance(tree, p);
    double sum = 0;
    for (double a : acc) sum += a;  // the root contributes the target's own token (1)
    return sum;
}

SequoiaResult sequoia_best_tree(const AcceptanceTable& p, int node_budget, int max_depth) {
    validate_acceptance_table(p);
    require_count(node_budget, 1, kMaxNodes, "tree.budget");
    require_count(max_depth, 0, kMaxNodes, "tree.max_depth");
    const int N = node_budget, D = max_depth;
    int R = 0;
    for (const auto& row : p) R = std::max(R, int(row.size()));
    // F[d][n]: best value (expected accepted nodes, root counted) of a subtree with ≤ n nodes rooted at depth d.
    // G[m][r]: best value of m nodes spread over the children of ranks ≥ r of a depth-d node (d fixed per pass).
    // choice[d][m][r]: nodes given to rank r's subtree in the optimum (0 = skip rank r).
    std::vector<std::vector<double>> F(size_t(D) + 1, std::vector<double>(size_t(N) + 1, 0.0));
    std::vector<std::vector<std::vector<int>>> choice(size_t(D) + 1);
    std::vector<std::vector<double>> G(size_t(N) + 1, std::vector<double>(size_t(R) + 1, 0.0));
    for (int d = D; d >= 0; --d) {
        auto& ch = choice[size_t(d)];
        ch.assign(size_t(N) + 1, std::vector<int>(size_t(R) + 1, 0));
        for (int n = 1; n <= N; ++n) F[size_t(d)][size_t(n)] = 1.0;
        if (d == D) continue;  // no children below the depth limit
        for (int m = 0; m <= N - 1; ++m) G[size_t(m)][size_t(R)] = 0.0;
        for (int r = R - 1; r >= 0; --r) {
            double pr = table_at(p, d, r);
            for (int m = 0; m <= N - 1; ++m) {
                // Ranks are used contiguously (a tree's ranks are its children's order), so the alternative
                // to giving rank r some nodes is to stop: ranks ≥ r get none.
                double best = 0.0;
                int arg     = 0;
                if (pr > 0.0)
                    for (int s = 1; s <= m; ++s) {
                        double v = pr * F[size_t(d) + 1][size_t(s)] + G[size_t(m - s)][size_t(r) + 1];
                        if (v > best + 1e-15) best = v, arg = s;
                    }
                G[size_t(m)][size_t(r)]  = best;
                ch[size_t(m)][size_t(r)] = arg;
            }
        }
        for (int n = 1; n <= N; ++n) F[size_t(d)][size_t(n)] = 1.0 + G[size_t(n) - 1][0];
    }
    SequoiaResult res;
    res.best_by_budget.assign(F[0].begin() + 1, F[0].end());
    res.expected_length = F[0][size_t(N)];
    // Rebuild the tree: expand(node, n nodes, depth) distributes n−1 nodes over ranks by the stored choices.
    res.tree.parent = {-1};
    struct Item {
        int node, n, d;
    };
    std::vector<Item> stack{{0, N, 0}};
    while (!stack.empty()) {
        Item it = stack.back();
        stack.pop_back();
        if (it.d >= D) continue;
        int m = it.n - 1;
        std::vector<Item> kids;
        for (int r = 0; r < R && m > 0; ++r) {
            int s = choice[size_t(it.d)][size_t(m)][size_t(r)];
            if (s == 0) continue;
            res.tree.parent.push_back(it.node);
            kids.push_back({int(res.tree.parent.size()) - 1, s, it.d + 1});
            m -= s;
        }
        // Children are appended in rank order before any grandchild, so order of appearance = rank.
        for (auto k = kids.rbegin(); k != kids.rend(); ++k) stack.push_back(*k);
    }
    return res;
}

TreeFigures tree_figures(const TokenTree& tree, const AcceptanceTable& p, double c) {
    TreeFigures f;
    f.node_acceptance = node_acceptance(tree, p);
    f.expected_length = tree_expected_length(tree, p);
    for (int d : tree_depths(tree)) f.depth = std::max(f.depth, d);
    f.speedup = f.expected_length / (1.0 + f.depth * c);
    return f;
}

}  // namespace speculum::analytic
