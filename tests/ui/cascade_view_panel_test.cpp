// Cascade view: one level, a vertical cascade and a horizontal split.
#include "ui/ui_fixtures.h"

#include "ui/panels/cascade_view_panel.h"

using namespace speculum;

TEST(CascadeViewPanel, DrawsLevelsAndSplit) {
    test::HeadlessImGui im;
    ui::CascadeViewPanel panel;
    ui::UiActions actions;
    ui::AppConfig cfg;
    auto single = test::modeled_snapshot(cfg);
    EXPECT_FALSE(single.modeled.output.cascade.has_value());
    im.begin_frame();
    panel.draw(single, actions);
    int single_vtx = im.end_frame()->TotalVtxCount;

    ASSERT_EQ(ui::set_config_value(cfg, "cascade", "2"), "");
    ASSERT_EQ(ui::set_config_value(cfg, "horizontal", "2"), "");
    auto cascade = test::modeled_snapshot(cfg);
    ASSERT_TRUE(cascade.modeled.error.empty()) << cascade.modeled.error;
    ASSERT_TRUE(cascade.modeled.output.cascade.has_value());
    // Like with like: the engine's own (truncate) process beside Thm. 4.3's fixed steps, with the same lengths.
    ASSERT_TRUE(cascade.modeled.output.kmatrix.has_value());
    EXPECT_EQ(cascade.modeled.output.kmatrix->mode, analytic::KMatrixMode::truncate);
    EXPECT_EQ(cascade.modeled.input.kmatrix->k[0][1], cfg.gamma());
    EXPECT_EQ(cascade.modeled.input.kmatrix->k[1][2], cfg.spec.gamma[1]);
    EXPECT_GT(cascade.modeled.output.kmatrix->ewif, 0.0);
    EXPECT_TRUE(cascade.modeled.output.horizontal_ewif.has_value());
    im.begin_frame();
    panel.draw(cascade, actions);
    int cascade_vtx = im.end_frame()->TotalVtxCount;
    EXPECT_GT(cascade_vtx, single_vtx) << "two more level boxes and the position strip";
    EXPECT_TRUE(actions.queue.empty());
}

// After a drafter kind change the level shows its assumptions, not the measurement of the drafter it replaced.
TEST(CascadeViewPanel, ALevelShowsOnlyItsOwnDraftersMeasurement) {
    ui::AppConfig cfg;
    ui::UiSnapshot snap = test::modeled_snapshot(cfg);
    snap.measured       = test::sample_measured();
    snap.measured->stats.levels.resize(2);
    snap.measured->stats.levels[0].n_reviewed = 10, snap.measured->stats.levels[0].n_review_accepted = 7;
    snap.measured->stats.levels[1].cost_ratio = 0.2;
    snap.measured_config                      = cfg;
    EXPECT_TRUE(ui::cascade_level_measured(snap, 0));
    snap.config.draft().kind = drafts::DraftKind::ngram;  // the user switched the drafter
    EXPECT_FALSE(ui::cascade_level_measured(snap, 0));
    snap.measured_config.reset();
    snap.config = cfg;
    EXPECT_FALSE(ui::cascade_level_measured(snap, 0)) << "a run whose configuration is unknown";
}
