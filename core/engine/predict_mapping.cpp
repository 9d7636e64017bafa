// SpecConfig -> PredictInput (see predict_mapping.h).
#include "core/engine/predict_mapping.h"

#include "core/analytic/kmatrix.h"
#include "core/engine/tree_shapes.h"

#include <algorithm>
#include <stdexcept>

namespace speculum::engine {

namespace {

// The engine's explicit tree (parent -1 = the root) as a TokenTree (node 0 = the root).
analytic::TokenTree token_tree_of(const drafts::TreeShape& shape) {
    const drafts::TreeShape e = explicit_shape(shape);
    analytic::TokenTree t;
    for (int32_t p : e.parent) t.parent.push_back(p < 0 ? 0 : p + 1);
    return t;
}

}  // namespace

ModeledConfig predict_input_of(const SpecConfig& s, const ModelFigures& f) {
    if (f.levels.empty() || f.levels[0].alpha.empty())
        throw std::invalid_argument("levels[0]: no acceptance figures for level 1");
    ModeledConfig m;
    analytic::PredictInput& in = m.input;
    auto note                  = [&](const std::string& line) { m.not_modeled.push_back(line); };
    in.alpha                   = f.levels[0].alpha;
    in.c                       = f.levels[0].c;
    in.k                       = std::max<int32_t>(1, s.draft_length(0));
    // A block draft proposes its k tokens in one pass: c is per block, not per token.
    if (!s.levels.empty() && drafts::drafts_a_block_per_pass(s.levels[0].kind)) in.block = in.k;

    const size_t n = s.levels.size();
    if (n > 1 && !s.k_matrix.empty()) {
        note("k_matrix: the horizontal cascade is not modeled; level 1 alone drafts " + std::to_string(in.k) +
             " tokens");
    } else if (n > 1 && f.levels.size() < n) {
        note("levels[" + std::to_string(f.levels.size()) +
             "..]: no figures; level 1 alone is modeled (the cascade is not)");
    } else if (n > 1) {
        std::vector<analytic::ChainLevel> chain;
        for (size_t i = 0; i < n; ++i) {
            const LevelFigures& l = f.levels[i];
            if (l.alpha.empty())
                throw std::invalid_argument("levels[" + std::to_string(i) + "]: no acceptance figures");
            const int steps = i < s.gamma.size() ? s.gamma[i] : 1;
            in.cascade.push_back({l.alpha, l.c, steps});
            chain.push_back({l.alpha.front(), l.c, steps, drafts::is_statistical(s.levels[i].kind)});
        }
        in.kmatrix = analytic::vertical_chain_kmatrix(chain);
        if (s.length_mode == LengthMode::threshold)
            note("length_mode threshold: the engine's K-matrix figure assumes truncate lengths");
    }

    // The chain's table: the rank-0 child at depth d is accepted with α_{d+1}.
    for (double a : in.alpha) m.rank_table.push_back({a});
    m.tree = analytic::chain_tree(in.k);
    if (s.verification == Verification::tree) {
        if (f.rank_acceptance.empty()) {
            note("tree: no acceptance by sibling rank; modeled as the chain of gamma[0]");
        } else {
            const analytic::AcceptanceTable p{f.rank_acceptance};
            const int32_t chain = s.gamma.empty() ? 1 : s.gamma[0];
            try {
                switch (s.tree.kind) {
                    case TreeKind::sequoia:
                        in.tree = analytic::TreeInput{p, {}, s.tree.node_budget + 1, s.tree.max_depth};
                        m.tree  = analytic::TokenTree{};
                        break;
                    case TreeKind::dynamic:
                        note("tree: dynamic (EAGLE-2) trees change every step; modeled as the first " +
                             std::to_string(s.tree.node_budget) + " nodes of the top-" + std::to_string(s.tree.top_k) +
                             " tree breadth-first");
                        [[fallthrough]];
                    case TreeKind::static_shape:
                    case TreeKind::top_k:
                    case TreeKind::chain_second:
                        m.tree  = token_tree_of(make_tree_shape(s.tree, chain, {}));
                        in.tree = analytic::TreeInput{p, m.tree.parent, 0, s.tree.max_depth};
                        break;
                }
            } catch (const std::exception& e) {
                throw std::invalid_argument(std::string("tree: ") + e.what());
            }
            m.rank_table = p;
        }
    } else if (s.verification == Verification::cats) {
        note("verification cats: CATS's three stages are not modeled here; level 1 as a chain of " +
             std::to_string(in.k) + " (speculum-cli predict's \"cats\" section models them)");
    }
    if (s.p_min > 0.0f) note("p_min: drafts cut short by p_min are not modeled");
    if (s.adaptive_gamma.enabled) note("adaptive_gamma: modeled at the fixed gamma[0]");
    if (std::any_of(s.lenience.begin(), s.lenience.end(), [](float l) { return l != 1.0f; }))
        note("lenience: modeled as strict verification (lenience 1)");
    return m;
}

}  // namespace speculum::engine
