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

// Figures that need a word get one: nothing drafted, a draft costlier than the target (the identity self-draft named
// as the target itself), a loaded CPU; and every interval states its coverage the same way.
// One acceptance figure, accepted ÷ drafted, worded the same wherever it is shown.
TEST(RunExplanations, AcceptanceIsAcceptedOverDrafted) {
    engine::RunStats s;
    s.n_drafted = 600, s.n_accepted = 330;
    EXPECT_EQ(ui::acceptance_text(s), "acceptance 55 % (330 of 600 drafted tokens accepted)");
    EXPECT_EQ(ui::acceptance_text(0, 0), "acceptance: no token drafted");
}

TEST(RunExplanations, ZeroDraftedCostlyDraftsAndALoadedCpuEachGetAPlainMessage) {
    ui::MeasuredView v;
    v.stats.n_steps   = 40;
    v.stats.n_drafted = 0;
    drafts::DraftSpec ngram;
    ngram.kind = drafts::DraftKind::ngram;
    auto lines = ui::run_explanations(v, ngram);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("0 tokens were drafted in 40 target passes"), std::string::npos);

    v.stats.n_drafted    = 160;
    v.repeats.cost_ratio = {1.37, 1.30, 1.45, 8, 0.95};
    const drafts::DraftSpec itself;  // a self-draft with nothing taken away
    lines = ui::run_explanations(v, itself);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("1.37 target steps"), std::string::npos);
    EXPECT_NE(lines[0].find("the target itself"), std::string::npos);
    drafts::DraftSpec pruned;
    pruned.prune.ratio = 0.3f;
    EXPECT_EQ(ui::run_explanations(v, pruned)[0].find("the target itself"), std::string::npos);

    v.repeats.cost_ratio = {0.2, 0.19, 0.21, 8, 0.95};
    v.repeats.other_load = 0.6;
    lines                = ui::run_explanations(v, pruned);
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_NE(lines[0].find("60 % of the CPU"), std::string::npos);
    v.repeats.other_load.reset();
    EXPECT_TRUE(ui::run_explanations(v, pruned).empty());

    EXPECT_EQ(ui::interval_text(0.969, 6), "95 % interval");
    EXPECT_EQ(ui::interval_text(0.5, 2), "50 % interval (2 pairs; a 95 % interval of the median needs 6)");
}
