// Tree shapes the drafter expands each step: static per-depth branching, uniform top-k, CATS's chain plus one
// correction leaf per position, and Sequoia's optimal tree for a node budget, rebuilt from the acceptance by rank
// measured so far in the run (analytic::sequoia_best_tree). Plus the acceptance-by-rank counters themselves.
#pragma once

#include "core/drafts/drafter.h"
#include "core/engine/spec_config.h"

#include <cstdint>
#include <vector>

namespace speculum::engine {

// Counts of tree verification outcomes: visits[d] = steps in which an accepted depth-d node (d = 0: the root)
// had at least r + 1 children for rank r, accepted[d][r] = steps whose accepted child there had rank r.
struct RankCounts {
    std::vector<std::vector<int64_t>> offered;   // [depth][rank]: a rank-r child existed under an accepted node
    std::vector<std::vector<int64_t>> accepted;  // [depth][rank]: and the target accepted it
    void add(int32_t depth, int32_t n_children, int32_t accepted_rank);  // accepted_rank < 0: none accepted
    bool operator==(const RankCounts&) const = default;
};

// Sequoia's single acceptance vector p[r] from the counts pooled over depths, each rank shrunk towards the prior
// with `prior_weight` pseudo-observations (ranks never offered keep the prior).
std::vector<double> acceptance_by_rank(const RankCounts& counts, const std::vector<double>& prior,
                                       double prior_weight = 4.0);

// The shape for a config: static / top_k / cats as given (cats uses `chain`); sequoia from p_by_rank.
drafts::TreeShape make_tree_shape(const TreeConfig& cfg, int32_t chain, const std::vector<double>& p_by_rank);

// Explicit forms (parent, rank) of every shape, and the shape cut to draft depth <= max_depth.
drafts::TreeShape explicit_shape(const drafts::TreeShape& shape);
drafts::TreeShape trim_shape(const drafts::TreeShape& shape, int32_t max_depth);
int32_t shape_nodes(const drafts::TreeShape& shape);
int32_t shape_depth(const drafts::TreeShape& shape);

}  // namespace speculum::engine
