// Tree view: the chain, a branching tree and Sequoia's best tree, with node acceptance from the analytic model.
#include "ui/ui_fixtures.h"

#include "ui/panels/tree_view_panel.h"

#include <cmath>

using namespace speculum;

TEST(TreeViewPanel, ChainBranchingAndBudgetTrees) {
    ui::AppConfig cfg;
    cfg.spec.gamma[0] = 5;
    auto chain        = test::modeled_snapshot(cfg);
    ASSERT_EQ(chain.modeled.tree.parent.size(), 6u);
    EXPECT_NEAR(chain.modeled.node_acceptance[5], std::pow(cfg.level1().alpha, 5), 1e-12);
    EXPECT_NEAR(chain.modeled.tree_expected_length, chain.modeled.output.expected_tokens, 1e-9);

    set_tree_mode(cfg, ui::TreeMode::branching);
    cfg.spec.tree.branching = {2, 2};
    auto branching          = test::modeled_snapshot(cfg);
    EXPECT_EQ(branching.modeled.tree.parent.size(), 7u);
    EXPECT_EQ(branching.modeled.tree_depth, 2);

    set_tree_mode(cfg, ui::TreeMode::budget);
    cfg.spec.tree.node_budget = 11;
    auto best                 = test::modeled_snapshot(cfg);
    ASSERT_TRUE(best.modeled.output.sequoia.has_value());
    EXPECT_LE(best.modeled.tree.parent.size(), 12u);
    EXPECT_GE(best.modeled.tree_expected_length, branching.modeled.tree_expected_length - 1e-9)
        << "Sequoia's best 12-node tree is at least as good as a 7-node tree";

    test::HeadlessImGui im;
    ui::TreeViewPanel panel;
    ui::UiActions actions;
    for (auto* s : {&chain, &branching, &best})
        EXPECT_NE(test::draw_once(im, panel.title, [&] { panel.draw(*s, actions); }), nullptr);
    EXPECT_TRUE(actions.queue.empty());
}

TEST(TreeViewPanel, ErrorStateDraws) {
    ui::AppConfig cfg;
    cfg.spec.tree.prior = {0.9, 0.9};  // sums above 1
    set_tree_mode(cfg, ui::TreeMode::budget);
    auto snap = test::modeled_snapshot(cfg);
    EXPECT_FALSE(snap.modeled.error.empty());
    test::HeadlessImGui im;
    ui::TreeViewPanel panel;
    ui::UiActions actions;
    EXPECT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
}
