// Speedup panel: modeled figures follow the config, errors replace them, measured figures show when present.
#include "ui/ui_fixtures.h"

#include "ui/panels/speedup_panel.h"

using namespace speculum;

TEST(SpeedupPanel, ModeledFiguresFollowConfig) {
    ui::AppConfig a, b;
    b.level1().alpha = 0.9;
    auto sa = test::modeled_snapshot(a), sb = test::modeled_snapshot(b);
    EXPECT_GT(sb.modeled.output.ewif, sa.modeled.output.ewif) << "higher acceptance, higher modeled speedup";
    EXPECT_EQ(sa.modeled.alpha_source, "assumed");
    ASSERT_EQ(ui::set_config_value(b, "cascade", "1"), "");
    EXPECT_TRUE(test::modeled_snapshot(b).modeled.output.cascade.has_value());
}

TEST(SpeedupPanel, DrawsModeledMeasuredAndErrorStates) {
    test::HeadlessImGui im;
    ui::SpeedupPanel panel;
    ui::UiActions actions;
    ui::UiSnapshot snap = test::modeled_snapshot();
    EXPECT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
    snap.measured = test::sample_measured();
    snap.modeled  = ui::compute_modeled(snap.config, nullptr, nullptr, &*snap.measured);
    EXPECT_EQ(snap.modeled.alpha_source, "measured");
    EXPECT_DOUBLE_EQ(snap.modeled.input.alpha[0], 0.8);
    EXPECT_EQ(snap.modeled.c_source, "assumed") << "the sample run measured no cost ratio";
    snap.measured->stats.levels = test::measured_with_cost(0.3, 2.4).stats.levels;
    snap.modeled                = ui::compute_modeled(snap.config, nullptr, nullptr, &*snap.measured);
    EXPECT_EQ(snap.modeled.c_source, "measured");
    EXPECT_DOUBLE_EQ(snap.modeled.input.c, 0.3);
    EXPECT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
    ui::AppConfig bad;
    bad.level1().alpha = 1.5;
    snap               = test::modeled_snapshot(bad);
    EXPECT_FALSE(snap.modeled.error.empty());
    EXPECT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
    EXPECT_TRUE(actions.queue.empty());
}
