// Draft trees from a neural draft's distributions (see draft_tree.h).
#include "core/drafts/draft_tree.h"

#include "core/drafts/draft_token.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace speculum::drafts {

namespace {

void softmax(std::span<const float> logits, float temperature, std::vector<float>& p) {
    draft_softmax(logits, temperature, p);
}

// Token ids of the `count` most probable entries of p, most probable first (ties: smaller id).
std::vector<int32_t> top_tokens(const std::vector<float>& p, int32_t count) {
    std::vector<int32_t> order(p.size());
    std::iota(order.begin(), order.end(), 0);
    const size_t c = std::min(order.size(), static_cast<size_t>(count));
    std::partial_sort(
        order.begin(), order.begin() + static_cast<std::ptrdiff_t>(c), order.end(),
        [&](int32_t a, int32_t b) { return p[size_t(a)] > p[size_t(b)] || (p[size_t(a)] == p[size_t(b)] && a < b); });
    order.resize(c);
    return order;
}

}  // namespace

void tree_shape_nodes(const TreeShape& shape, std::vector<int32_t>& parent, std::vector<int32_t>& rank) {
    parent.clear();
    rank.clear();
    if (shape.dynamic_nodes < 0 || (shape.dynamic_nodes > 0 && (shape.explicit_form() || shape.branching.empty())))
        throw std::invalid_argument(
            "TreeShape.dynamic_nodes: a dynamic tree needs branching per depth and a node "
            "count > 0, got " +
            std::to_string(shape.dynamic_nodes));
    if (shape.explicit_form()) {
        if (!shape.branching.empty())
            throw std::invalid_argument("TreeShape: give either branching or parent/rank, not both");
        if (shape.rank.size() != shape.parent.size())
            throw std::invalid_argument("TreeShape: " + std::to_string(shape.rank.size()) + " ranks for " +
                                        std::to_string(shape.parent.size()) + " nodes");
        for (size_t i = 0; i < shape.parent.size(); ++i) {
            if (shape.parent[i] < -1 || shape.parent[i] >= static_cast<int32_t>(i))
                throw std::invalid_argument("TreeShape.parent[" + std::to_string(i) + "] = " +
                                            std::to_string(shape.parent[i]) + ": parents must come before children");
            if (shape.rank[i] < 0)
                throw std::invalid_argument("TreeShape.rank[" + std::to_string(i) + "] must be >= 0");
            for (size_t j = 0; j < i; ++j)
                if (shape.parent[j] == shape.parent[i] && shape.rank[j] == shape.rank[i])
                    throw std::invalid_argument("TreeShape: nodes " + std::to_string(j) + " and " + std::to_string(i) +
                                                " are the same child (parent and rank)");
        }
        parent = shape.parent;
        rank   = shape.rank;
        return;
    }
    std::vector<int32_t> level{-1};  // nodes of the current depth (-1: the root)
    size_t total = 0;
    for (size_t d = 0; d < shape.branching.size(); ++d) {
        if (shape.branching[d] < 1)
            throw std::invalid_argument("TreeShape.branching[" + std::to_string(d) + "] must be >= 1, got " +
                                        std::to_string(shape.branching[d]));
        total += level.size() * static_cast<size_t>(shape.branching[d]);
        if (total > 65536 && shape.dynamic_nodes <= 0) throw std::invalid_argument("TreeShape: more than 65536 nodes");
        std::vector<int32_t> next;
        for (int32_t p : level)
            for (int32_t r = 0; r < shape.branching[d]; ++r) {
                // A dynamic tree's stand-in: its first dynamic_nodes nodes breadth-first.
                if (shape.dynamic_nodes > 0 && static_cast<int32_t>(parent.size()) >= shape.dynamic_nodes) break;
                next.push_back(static_cast<int32_t>(parent.size()));
                parent.push_back(p);
                rank.push_back(r);
            }
        level.swap(next);
    }
}

DraftTree expand_draft_tree(const std::vector<int32_t>& parent, const std::vector<int32_t>& rank,
                            std::span<const float> root_logits, const ProposeParams& params,
                            const TreeNodeEval& evaluate, const CancelToken& cancel) {
    DraftTree tree;
    const int32_t n_nodes = static_cast<int32_t>(parent.size());
    const float temp      = params.temperature > 0.0f ? params.temperature : 1.0f;
    std::vector<int32_t> depth(static_cast<size_t>(n_nodes)), n_children(static_cast<size_t>(n_nodes), 0);
    int32_t max_depth = 0;
    for (int32_t i = 0; i < n_nodes; ++i) {
        depth[size_t(i)] = parent[size_t(i)] < 0 ? 1 : depth[size_t(parent[size_t(i)])] + 1;
        if (parent[size_t(i)] >= 0) ++n_children[size_t(parent[size_t(i)])];
        max_depth = std::max(max_depth, depth[size_t(i)]);
    }
    tree.tokens.assign(size_t(n_nodes), -1);
    tree.parent = parent;
    tree.depth  = depth;
    tree.rank   = rank;
    tree.q.assign(size_t(n_nodes), 0.0f);
    if (params.want_distributions) tree.q_dist.assign(size_t(n_nodes), {});

    // Children of a node whose distribution is `dist` take its top-ranked tokens.
    std::vector<float> dist;
    auto assign_children = [&](int32_t node) {
        int32_t max_rank = -1;
        for (int32_t i = 0; i < n_nodes; ++i)
            if (parent[size_t(i)] == node) max_rank = std::max(max_rank, rank[size_t(i)]);
        if (max_rank < 0) return;
        if (max_rank >= static_cast<int32_t>(dist.size()))
            throw std::invalid_argument("propose_tree: rank " + std::to_string(max_rank) + " exceeds the vocabulary");
        const std::vector<int32_t> top = top_tokens(dist, max_rank + 1);
        for (int32_t i = 0; i < n_nodes; ++i)
            if (parent[size_t(i)] == node) {
                tree.tokens[size_t(i)] = top[size_t(rank[size_t(i)])];
                tree.q[size_t(i)]      = dist[size_t(top[size_t(rank[size_t(i)])])];
            }
        if (params.want_distributions) (node < 0 ? tree.root_q_dist : tree.q_dist[size_t(node)]) = dist;
    };
    softmax(root_logits, temp, dist);
    assign_children(-1);

    // Depth d: evaluate the depth-d nodes that have children, with their ancestors (whose KV the pass needs).
    std::vector<std::vector<float>> logits;
    for (int32_t d = 1; d < max_depth; ++d) {
        std::vector<uint8_t> need(size_t(n_nodes), 0);
        bool any = false;
        for (int32_t i = 0; i < n_nodes; ++i)
            if (depth[size_t(i)] == d && n_children[size_t(i)] > 0) {
                any = true;
                for (int32_t a = i; a >= 0 && !need[size_t(a)]; a = parent[size_t(a)]) need[size_t(a)] = 1;
            }
        if (!any) continue;
        cancel.throw_if_cancelled();
        std::vector<int32_t> nodes, parents, toks, depths, slot(size_t(n_nodes), -1);
        for (int32_t i = 0; i < n_nodes; ++i)
            if (need[size_t(i)]) {
                slot[size_t(i)] = static_cast<int32_t>(nodes.size());
                nodes.push_back(i);
                parents.push_back(parent[size_t(i)]);
                toks.push_back(tree.tokens[size_t(i)]);
                depths.push_back(depth[size_t(i)]);
            }
        const size_t m = nodes.size();
        std::vector<uint8_t> mask(m * m, 0);
        for (size_t r = 0; r < m; ++r)
            for (int32_t a = nodes[r]; a >= 0; a = parent[size_t(a)]) mask[r * m + size_t(slot[size_t(a)])] = 1;
        if (!evaluate(nodes, parents, toks, depths, mask, logits)) break;  // the deeper nodes stay unfilled
        for (size_t r = 0; r < m; ++r) {
            const int32_t node = nodes[r];
            if (depth[size_t(node)] != d || n_children[size_t(node)] == 0) continue;
            softmax(logits[r], temp, dist);
            assign_children(node);
        }
    }

    // Nodes left unfilled are dropped with their subtrees; indices are renumbered.
    if (std::find(tree.tokens.begin(), tree.tokens.end(), -1) != tree.tokens.end()) {
        DraftTree kept;
        kept.root_q_dist = std::move(tree.root_q_dist);
        std::vector<int32_t> remap(size_t(n_nodes), -1);
        for (int32_t i = 0; i < n_nodes; ++i) {
            const int32_t p = parent[size_t(i)];
            if (tree.tokens[size_t(i)] < 0 || (p >= 0 && remap[size_t(p)] < 0)) continue;
            remap[size_t(i)] = kept.size();
            kept.tokens.push_back(tree.tokens[size_t(i)]);
            kept.parent.push_back(p < 0 ? -1 : remap[size_t(p)]);
            kept.depth.push_back(depth[size_t(i)]);
            kept.rank.push_back(rank[size_t(i)]);
            kept.q.push_back(tree.q[size_t(i)]);
            if (params.want_distributions) kept.q_dist.push_back(std::move(tree.q_dist[size_t(i)]));
        }
        tree = std::move(kept);
    }
    return tree;
}

DraftTree expand_dynamic_tree(const std::vector<int32_t>& branching, int32_t n_keep, std::span<const float> root_logits,
                              const ProposeParams& params, const TreeNodeEval& evaluate, const CancelToken& cancel) {
    struct Node {
        int32_t parent, depth, rank, token;
        float q;
        double logp;  // log of the path probability
    };
    std::vector<Node> all;
    std::vector<std::vector<float>> dists;  // per node, the distribution its children were drawn from (asked for)
    std::vector<float> dist, root_dist;
    const float temp = params.temperature > 0.0f ? params.temperature : 1.0f;
    // Appends the top-k tokens of `dist` as children of `node` and returns their numbers.
    auto add_children = [&](int32_t node, int32_t k, int32_t depth, double logp) {
        std::vector<int32_t> made;
        const std::vector<int32_t> top = top_tokens(dist, std::min<int32_t>(k, int32_t(dist.size())));
        for (size_t r = 0; r < top.size(); ++r) {
            const float q = dist[size_t(top[r])];
            made.push_back(int32_t(all.size()));
            all.push_back({node, depth, int32_t(r), top[r], q, logp + std::log(std::max(q, 1e-30f))});
        }
        return made;
    };
    if (branching.empty() || n_keep <= 0) return {};
    softmax(root_logits, temp, dist);
    if (params.want_distributions) root_dist = dist;
    std::vector<int32_t> frontier = add_children(-1, branching[0], 1, 0.0);
    auto by_logp                  = [&](int32_t a, int32_t b) {
        const Node &x = all[size_t(a)], &y = all[size_t(b)];
        if (x.logp != y.logp) return x.logp > y.logp;
        return x.depth != y.depth ? x.depth < y.depth : a < b;
    };
    std::vector<std::vector<float>> logits;
    for (size_t d = 1; d < branching.size() && !frontier.empty(); ++d) {
        // The most probable nodes of the deepest level are expanded, with their ancestors in the pass.
        std::sort(frontier.begin(), frontier.end(), by_logp);
        frontier.resize(std::min(frontier.size(), size_t(branching[d])));
        std::vector<uint8_t> need(all.size(), 0), expand(all.size(), 0);
        for (int32_t f : frontier) {
            expand[size_t(f)] = 1;
            for (int32_t a = f; a >= 0 && !need[size_t(a)]; a = all[size_t(a)].parent) need[size_t(a)] = 1;
        }
        cancel.throw_if_cancelled();
        std::vector<int32_t> nodes, parents, toks, depths, slot(all.size(), -1);
        for (size_t i = 0; i < all.size(); ++i)
            if (need[i]) {  // numbers grow with depth: parents come first
                slot[i] = int32_t(nodes.size());
                nodes.push_back(int32_t(i));
                parents.push_back(all[i].parent);
                toks.push_back(all[i].token);
                depths.push_back(all[i].depth);
            }
        const size_t m = nodes.size();
        std::vector<uint8_t> mask(m * m, 0);
        for (size_t r = 0; r < m; ++r)
            for (int32_t a = nodes[r]; a >= 0; a = all[size_t(a)].parent) mask[r * m + size_t(slot[size_t(a)])] = 1;
        if (!evaluate(nodes, parents, toks, depths, mask, logits)) break;
        std::vector<int32_t> next;
        for (size_t r = 0; r < m; ++r) {
            const int32_t node = nodes[r];
            if (!expand[size_t(node)]) continue;
            softmax(logits[r], temp, dist);
            if (params.want_distributions) {
                if (dists.size() <= size_t(node)) dists.resize(size_t(node) + 1);
                dists[size_t(node)] = dist;
            }
            const std::vector<int32_t> made = add_children(node, branching[d], int32_t(d) + 1, all[size_t(node)].logp);
            next.insert(next.end(), made.begin(), made.end());
        }
        frontier.swap(next);
    }

    // Re-rank: the n_keep most probable paths, in the order they were made (parents first).
    std::vector<int32_t> order(all.size());
    for (size_t i = 0; i < all.size(); ++i) order[i] = int32_t(i);
    std::sort(order.begin(), order.end(), by_logp);
    std::vector<uint8_t> keep(all.size(), 0);
    for (size_t i = 0; i < order.size() && i < size_t(n_keep); ++i) keep[size_t(order[i])] = 1;
    DraftTree tree;
    tree.root_q_dist = std::move(root_dist);
    std::vector<int32_t> remap(all.size(), -1), children(all.size(), 0);
    for (size_t i = 0; i < all.size(); ++i) {
        const Node& n = all[i];
        if (!keep[i] || (n.parent >= 0 && remap[size_t(n.parent)] < 0)) continue;
        remap[i] = tree.size();
        if (n.parent >= 0) ++children[size_t(n.parent)];
        tree.tokens.push_back(n.token);
        tree.parent.push_back(n.parent < 0 ? -1 : remap[size_t(n.parent)]);
        tree.depth.push_back(n.depth);
        tree.rank.push_back(n.rank);
        tree.q.push_back(n.q);
    }
    if (params.want_distributions) {  // a node with children keeps the distribution they were drawn from
        tree.q_dist.assign(size_t(tree.size()), {});
        for (size_t i = 0; i < all.size(); ++i)
            if (remap[i] >= 0 && children[i] > 0 && i < dists.size()) tree.q_dist[size_t(remap[i])] = dists[i];
    }
    return tree;
}

}  // namespace speculum::drafts
