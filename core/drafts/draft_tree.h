// Draft trees from a neural draft's distributions, shared by every drafter that grows one (ModelDrafter, and the
// state drafters: MTP layers and EAGLE-3 heads): a TreeShape's explicit form, the static expansion over a shape, and
// EAGLE-2's dynamic expansion. The drafter supplies the passes (TreeNodeEval); these decide which nodes to run.
#pragma once

#include "core/cancel.h"
#include "core/drafts/drafter.h"

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace speculum::drafts {

// The shape's explicit form: parent (-1 = root) and sibling rank of every node, parents before children, with
// uniform branching expanded breadth-first. Throws std::invalid_argument on an inconsistent shape (naming it).
void tree_shape_nodes(const TreeShape& shape, std::vector<int32_t>& parent, std::vector<int32_t>& rank);

// Runs a neural draft over some nodes of a tree being expanded: `nodes` (parents first; each row attends its
// ancestors among them and the committed context), their parents (node ids, -1 = the root), tokens and depths (1 =
// a child of the root). Fills one logits row per node and returns true, or false when it cannot (no room in its
// context or batch): the deeper nodes then stay unfilled.
using TreeNodeEval = std::function<bool(const std::vector<int32_t>& nodes, const std::vector<int32_t>& parents,
                                        const std::vector<int32_t>& tokens, const std::vector<int32_t>& depths,
                                        const std::vector<uint8_t>& mask, std::vector<std::vector<float>>& logits)>;
// Expands a tree of `parent`/`rank` (tree_shape_nodes) from a neural draft's distributions: the root's children
// take the top-ranked tokens of `root_logits` and each evaluated node's children the top-ranked tokens of its
// logits (softmax at the draft temperature, 1 when greedy); depth by depth, each evaluation covering the nodes that
// have children at that depth and their ancestors. Nodes left unfilled are dropped with their subtrees.
DraftTree expand_draft_tree(const std::vector<int32_t>& parent, const std::vector<int32_t>& rank,
                            std::span<const float> root_logits, const ProposeParams& params,
                            const TreeNodeEval& evaluate, const CancelToken& cancel);

// EAGLE-2's dynamic tree (Li et al. 2024): at depth d the branching[d] nodes of the deepest level with the highest
// path probability (the product of the draft probabilities along the path) are evaluated, each taking its
// branching[d] top-ranked tokens as children (the root's children: branching[0] tokens of `root_logits`); then the
// n_keep nodes of highest path probability over all depths are kept (a child's never exceeds its parent's, so
// every kept node's parent is kept; ties go to the shallower, then the earlier node). Nodes are numbered in the
// order they are made; `evaluate` sees those numbers.
DraftTree expand_dynamic_tree(const std::vector<int32_t>& branching, int32_t n_keep, std::span<const float> root_logits,
                              const ProposeParams& params, const TreeNodeEval& evaluate, const CancelToken& cancel);

}  // namespace speculum::drafts
