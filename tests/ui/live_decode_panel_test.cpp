// Live decode panel: explicit empty state without a run; a token stream and a timeline with one.
#include "ui/ui_fixtures.h"

#include "ui/panels/live_decode_panel.h"

using namespace speculum;

TEST(LiveDecodePanel, EmptyThenStreaming) {
    test::HeadlessImGui im;
    ui::LiveDecodePanel panel;
    ui::UiActions actions;
    ui::UiSnapshot snap = test::modeled_snapshot();
    im.begin_frame();
    panel.draw(snap, actions);
    int empty_vtx = im.end_frame()->TotalVtxCount;
    ASSERT_NE(ImGui::FindWindowByName(panel.title), nullptr);
    snap.measured           = test::sample_measured();
    snap.measured->complete = false;
    snap.measured->tokens.push_back({"line one\nline two", 1, ui::TokenOrigin::bonus, 10});
    im.begin_frame();
    panel.draw(snap, actions);
    int stream_vtx = im.end_frame()->TotalVtxCount;
    EXPECT_GT(stream_vtx, empty_vtx + 500) << "30 tokens of text, underlines and timeline cells";
    EXPECT_TRUE(actions.queue.empty());
}

// Hovering the step timeline reads the step out (its committed tokens by origin) in a tooltip.
TEST(LiveDecodePanel, HoverReadsTheTimelineStepOut) {
    test::HeadlessImGui im;
    ui::LiveDecodePanel panel;
    ui::UiActions actions;
    ui::UiSnapshot snap = test::modeled_snapshot();
    snap.measured       = test::sample_measured();
    auto frame          = [&] { panel.draw(snap, actions); };
    ImGuiWindow* w      = test::draw_once(im, panel.title, frame);
    ASSERT_NE(w, nullptr);
    ImVec2 at;
    ASSERT_TRUE(im.find_item(w->GetID("timeline"), w->Rect(), frame, &at)) << "the timeline is never hovered";
    im.mouse(w->Rect().Max.x + 50, w->Rect().Max.y + 50, false);  // away from the panel: no tooltip
    test::draw_once(im, panel.title, frame);
    ImGuiWindow* before = ImGui::FindWindowByName("##Tooltip_00");
    EXPECT_TRUE(before == nullptr || !before->Active) << "no tooltip away from the timeline";
    im.mouse(at.x, at.y, false);
    test::draw_once(im, panel.title, frame);
    ImGuiWindow* tip = ImGui::FindWindowByName("##Tooltip_00");
    ASSERT_NE(tip, nullptr) << "a tooltip is shown";
    EXPECT_TRUE(tip->Active || tip->WasActive);
}
