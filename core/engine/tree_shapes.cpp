// Tree shapes and acceptance-by-rank estimation.
#include "core/engine/tree_shapes.h"

#include "core/analytic/trees.h"
#include "core/drafts/model_drafter.h"

#include <algorithm>
#include <stdexcept>

namespace speculum::engine {

void RankCounts::add(int32_t depth, int32_t n_children, int32_t accepted_rank) {
    if (depth < 0 || n_children <= 0) return;
    const size_t d = static_cast<size_t>(depth);
    if (offered.size() <= d) offered.resize(d + 1), accepted.resize(d + 1);
    if (offered[d].size() < static_cast<size_t>(n_children)) {
        offered[d].resize(static_cast<size_t>(n_children), 0);
        accepted[d].resize(static_cast<size_t>(n_children), 0);
    }
    for (int32_t r = 0; r < n_children; ++r) ++offered[d][static_cast<size_t>(r)];
    if (accepted_rank >= 0 && accepted_rank < n_children) ++accepted[d][static_cast<size_t>(accepted_rank)];
}

std::vector<double> acceptance_by_rank(const RankCounts& counts, const std::vector<double>& prior,
                                       double prior_weight) {
    std::vector<double> p(prior);
    double total = 0;
    for (size_t r = 0; r < p.size(); ++r) {
        double off = 0, acc = 0;
        for (size_t d = 0; d < counts.offered.size(); ++d) {
            if (r < counts.offered[d].size()) off += static_cast<double>(counts.offered[d][r]);
            if (r < counts.accepted[d].size()) acc += static_cast<double>(counts.accepted[d][r]);
        }
        p[r] = (acc + prior_weight * prior[r]) / (off + prior_weight);
        total += p[r];
    }
    // The model needs Σ_r p[r] <= 1 (one exclusive choice per node).
    if (total > 1.0)
        for (double& x : p) x /= total;
    return p;
}

drafts::TreeShape explicit_shape(const drafts::TreeShape& shape) {
    if (shape.explicit_form()) return shape;
    drafts::TreeShape out;
    if (shape.dynamic_nodes > 0) {  // its static stand-in (what the verifier must make room for)
        drafts::tree_shape_nodes(shape, out.parent, out.rank);
        return out;
    }
    std::vector<int32_t> frontier{-1};  // nodes at the current depth (-1 = root)
    for (int32_t b : shape.branching) {
        std::vector<int32_t> next;
        for (int32_t par : frontier)
            for (int32_t r = 0; r < b; ++r) {
                next.push_back(static_cast<int32_t>(out.parent.size()));
                out.parent.push_back(par);
                out.rank.push_back(r);
            }
        frontier.swap(next);
        if (out.parent.size() > 4096) throw std::invalid_argument("tree shape has more than 4096 nodes");
    }
    return out;
}

int32_t shape_nodes(const drafts::TreeShape& shape) {
    return static_cast<int32_t>(explicit_shape(shape).parent.size());
}

static std::vector<int32_t> depths_of(const drafts::TreeShape& e) {
    std::vector<int32_t> d(e.parent.size());
    for (size_t i = 0; i < e.parent.size(); ++i) d[i] = e.parent[i] < 0 ? 1 : d[static_cast<size_t>(e.parent[i])] + 1;
    return d;
}

int32_t shape_depth(const drafts::TreeShape& shape) {
    const auto d = depths_of(explicit_shape(shape));
    return d.empty() ? 0 : *std::max_element(d.begin(), d.end());
}

drafts::TreeShape trim_shape(const drafts::TreeShape& shape, int32_t max_depth) {
    if (!shape.explicit_form()) {
        drafts::TreeShape s = shape;
        if (s.branching.size() > static_cast<size_t>(std::max(0, max_depth)))
            s.branching.resize(size_t(std::max(0, max_depth)));
        if (s.branching.empty()) s.dynamic_nodes = 0;  // no depth left: no tree
        return s;
    }
    const auto d = depths_of(shape);
    drafts::TreeShape out;
    std::vector<int32_t> new_index(shape.parent.size(), -1);
    for (size_t i = 0; i < shape.parent.size(); ++i) {
        if (d[i] > max_depth) continue;
        new_index[i] = static_cast<int32_t>(out.parent.size());
        out.parent.push_back(shape.parent[i] < 0 ? -1 : new_index[static_cast<size_t>(shape.parent[i])]);
        out.rank.push_back(shape.rank[i]);
    }
    return out;
}

drafts::TreeShape make_tree_shape(const TreeConfig& cfg, int32_t chain, const std::vector<double>& p_by_rank) {
    drafts::TreeShape s;
    switch (cfg.kind) {
        case TreeKind::static_shape:
            s.branching = cfg.branching;
            break;
        case TreeKind::top_k:
            s.branching.assign(static_cast<size_t>(cfg.depth), cfg.top_k);
            break;
        case TreeKind::dynamic:
            s.branching.assign(static_cast<size_t>(cfg.depth), cfg.top_k);
            s.dynamic_nodes = cfg.node_budget;
            break;
        case TreeKind::chain_second:
            // The draft chain, and under every chain node's parent one extra rank-1 leaf — the draft's second
            // choice, which becomes the accepted token when the chain token is rejected at that position.
            for (int32_t i = 0; i < chain; ++i) {
                const int32_t par = i == 0 ? -1 : static_cast<int32_t>(s.parent.size()) - 2;
                s.parent.push_back(par), s.rank.push_back(0);
                s.parent.push_back(par), s.rank.push_back(1);
            }
            break;
        case TreeKind::sequoia: {
            const analytic::AcceptanceTable table = analytic::uniform_table(p_by_rank, cfg.max_depth);
            const analytic::SequoiaResult best = analytic::sequoia_best_tree(table, cfg.node_budget + 1, cfg.max_depth);
            const std::vector<int> ranks       = analytic::tree_ranks(best.tree);
            for (size_t i = 1; i < best.tree.parent.size(); ++i) {
                s.parent.push_back(best.tree.parent[i] - 1);  // analytic node 0 is the root
                s.rank.push_back(ranks[i]);
            }
            break;
        }
    }
    return s;
}

}  // namespace speculum::engine
