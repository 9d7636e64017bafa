// SpecConfig -> PredictInput (core/engine/predict_mapping): what each configuration means to the analytic models,
// the tree the engine would expand, and every part the models leave out named in not_modeled.
#include "core/engine/predict_mapping.h"

#include "core/analytic/kmatrix.h"
#include "core/engine/tree_shapes.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace speculum;

namespace {

engine::SpecConfig chain(int gamma) {
    engine::SpecConfig s;
    s.levels = {drafts::DraftSpec{}};
    s.gamma  = {gamma};
    return s;
}

engine::ModelFigures level1(std::vector<double> alpha, double c) {
    engine::ModelFigures f;
    f.levels = {{std::move(alpha), c}};
    return f;
}

bool mentions(const std::vector<std::string>& lines, const std::string& what) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(what) != std::string::npos; });
}

}  // namespace

TEST(PredictMapping, AChainIsAlphaKAndC) {
    const engine::ModeledConfig m = engine::predict_input_of(chain(5), level1({0.9, 0.7}, 0.1));
    EXPECT_EQ(m.input.alpha, (std::vector<double>{0.9, 0.7}));
    EXPECT_EQ(m.input.k, 5);
    EXPECT_DOUBLE_EQ(m.input.c, 0.1);
    EXPECT_TRUE(m.input.cascade.empty());
    EXPECT_FALSE(m.input.tree.has_value());
    EXPECT_EQ(m.tree, analytic::chain_tree(5));
    EXPECT_TRUE(m.not_modeled.empty());
    EXPECT_THROW(engine::predict_input_of(chain(5), {}), std::invalid_argument) << "level 1 needs figures";
}

TEST(PredictMapping, AVerticalCascadeIsModeledBothWays) {
    engine::SpecConfig s = chain(4);
    drafts::DraftSpec mg;
    mg.kind = drafts::DraftKind::maxgram;
    s.levels.push_back(mg);
    s.gamma.push_back(10);
    engine::ModelFigures f = level1({0.8}, 0.05);
    f.levels.push_back({{0.5}, 0.0});
    const engine::ModeledConfig m = engine::predict_input_of(s, f);
    ASSERT_EQ(m.input.cascade.size(), 2u);
    EXPECT_EQ(m.input.cascade[1].steps, 10);
    ASSERT_TRUE(m.input.kmatrix.has_value());
    EXPECT_EQ(*m.input.kmatrix, analytic::vertical_chain_kmatrix({{0.8, 0.05, 4, false}, {0.5, 0.0, 10, true}}));
    EXPECT_TRUE(m.not_modeled.empty());

    // Only level 1 measured (the export manifest's case): level 1 alone, and the basis says so.
    const engine::ModeledConfig one = engine::predict_input_of(s, level1({0.8}, 0.05));
    EXPECT_TRUE(one.input.cascade.empty());
    EXPECT_TRUE(mentions(one.not_modeled, "the cascade is not"));
}

TEST(PredictMapping, TreesAreTheShapesTheEngineExpands) {
    engine::SpecConfig s    = chain(3);
    s.verification          = engine::Verification::tree;
    s.tree.kind             = engine::TreeKind::static_shape;
    s.tree.branching        = {3, 2};
    engine::ModelFigures f  = level1({0.8}, 0.05);
    f.rank_acceptance       = {0.6, 0.2, 0.1};
    engine::ModeledConfig m = engine::predict_input_of(s, f);
    ASSERT_EQ(m.tree.parent.size(), 1u + 3 + 6);
    EXPECT_EQ(m.tree.parent[4], 1) << "the first child of the first depth-1 node";
    ASSERT_TRUE(m.input.tree.has_value());
    EXPECT_EQ(m.input.tree->parents, m.tree.parent);
    EXPECT_EQ(m.rank_table, (analytic::AcceptanceTable{{0.6, 0.2, 0.1}}));

    for (engine::TreeKind k : {engine::TreeKind::top_k, engine::TreeKind::chain_second}) {
        s.tree.kind = k;
        m           = engine::predict_input_of(s, f);
        EXPECT_EQ(int(m.tree.parent.size()) - 1, engine::shape_nodes(engine::make_tree_shape(s.tree, 3, {})));
    }
    s.tree.kind        = engine::TreeKind::sequoia;
    s.tree.node_budget = 11;
    m                  = engine::predict_input_of(s, f);
    ASSERT_TRUE(m.input.tree.has_value());
    EXPECT_EQ(m.input.tree->budget, 12) << "predict's budget counts the root, the engine's does not";
    EXPECT_EQ(m.tree.parent.size(), 1u) << "Sequoia's tree is predict()'s to pick";

    const engine::ModeledConfig no_ranks = engine::predict_input_of(s, level1({0.8}, 0.05));
    EXPECT_FALSE(no_ranks.input.tree.has_value());
    EXPECT_TRUE(mentions(no_ranks.not_modeled, "modeled as the chain"));
}

TEST(PredictMapping, WhatTheModelsLeaveOutIsNamed) {
    engine::SpecConfig s     = chain(4);
    s.p_min                  = 0.3f;
    s.adaptive_gamma.enabled = true;
    engine::ModeledConfig m  = engine::predict_input_of(s, level1({0.8}, 0.05));
    EXPECT_TRUE(mentions(m.not_modeled, "p_min"));
    EXPECT_TRUE(mentions(m.not_modeled, "adaptive_gamma"));

    engine::SpecConfig k = chain(1);
    drafts::DraftSpec mg;
    mg.kind = drafts::DraftKind::maxgram;
    k.levels.push_back(mg);
    k.gamma.clear();
    k.k_matrix = {{0, 2, 3}, {0, 0, 0}, {0, 0, 0}};
    m          = engine::predict_input_of(k, level1({0.8}, 0.05));
    EXPECT_EQ(m.input.k, 5) << "the target's draft is the K-matrix row";
    EXPECT_TRUE(mentions(m.not_modeled, "k_matrix"));
}
