// Acceptance panel: empty (modeled only) and measured states; Wilson intervals.
#include "ui/ui_fixtures.h"

#include "ui/panels/acceptance_panel.h"

using namespace speculum;

TEST(Wilson, KnownValuesAndEdges) {
    auto w = ui::wilson_interval(80, 100);
    EXPECT_NEAR(w.lo, 0.7112, 1e-3);
    EXPECT_NEAR(w.hi, 0.8666, 1e-3);
    auto none = ui::wilson_interval(0, 0);
    EXPECT_EQ(none.lo, 0.0);
    EXPECT_EQ(none.hi, 1.0);
    auto all = ui::wilson_interval(10, 10);
    EXPECT_LT(all.lo, 1.0);
    EXPECT_DOUBLE_EQ(all.hi, 1.0);
}

TEST(MeasuredView, AlphaAndMeanLengthComeFromTheRunStats) {
    auto m = test::sample_measured();
    EXPECT_EQ(m.stats.alpha(), (std::vector<double>{0.8, 0.75, 40.0 / 60, 0.5}));
    EXPECT_DOUBLE_EQ(m.stats.mean_accepted_length(), 3.0);  // 300 tokens in 100 target passes
}

TEST(AcceptancePanel, DrawsModeledOnlyThenMeasured) {
    test::HeadlessImGui im;
    ui::AcceptancePanel panel;
    ui::UiActions actions;
    ui::UiSnapshot snap = test::modeled_snapshot();
    im.begin_frame();
    panel.draw(snap, actions);
    int modeled_vtx = im.end_frame()->TotalVtxCount;
    ASSERT_NE(ImGui::FindWindowByName(panel.title), nullptr);
    snap.measured                             = test::sample_measured();
    snap.measured->stats.rank_counts.offered  = {{50, 20}};
    snap.measured->stats.rank_counts.accepted = {{30, 5}};
    im.begin_frame();
    panel.draw(snap, actions);
    int measured_vtx = im.end_frame()->TotalVtxCount;
    EXPECT_GT(measured_vtx, modeled_vtx) << "measured bars, whiskers and the rank chart add geometry";
    EXPECT_TRUE(actions.queue.empty());
}

// Hovering a bar reads its figures out: measured α with its Wilson interval and the modeled value.
TEST(AcceptancePanel, HoverReadsTheBarOut) {
    test::HeadlessImGui im;
    ui::AcceptancePanel panel;
    ui::UiActions actions;
    ui::UiSnapshot snap = test::modeled_snapshot();
    snap.measured       = test::sample_measured();
    ImGuiWindow* w      = test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); });
    ASSERT_NE(w, nullptr);
    ImVec2 at;
    auto frame = [&] { panel.draw(snap, actions); };
    ASSERT_TRUE(im.find_item(w->GetID("positions"), w->Rect(), frame, &at)) << "the chart is never hovered";
    im.mouse(at.x, at.y, false);
    test::draw_once(im, panel.title, frame);
    ImGuiWindow* tip = ImGui::FindWindowByName("##Tooltip_00");
    ASSERT_NE(tip, nullptr) << "a tooltip is shown";
    EXPECT_TRUE(tip->Active || tip->WasActive);
}
