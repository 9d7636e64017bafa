// The Overview panel draws headlessly from a snapshot and emits its action on a scripted click.
#include "ui/headless.h"

#include "ui/dashboard.h"

#include <gtest/gtest.h>

using namespace speculum;

TEST(OverviewPanel, DrawsWindowWithVertices) {
    test::HeadlessImGui im;
    ui::Dashboard dash;
    dash.set_solo(ui::OverviewPanel::title);
    ui::UiSnapshot snap;
    snap.build = build_info();
    ui::UiActions actions;
    im.begin_frame();
    dash.draw(snap, actions);
    ImDrawData* dd = im.end_frame();
    ASSERT_NE(dd, nullptr);
    EXPECT_GT(dd->TotalVtxCount, 100);
    EXPECT_TRUE(actions.queue.empty());
    ImGuiWindow* w = ImGui::FindWindowByName(ui::OverviewPanel::title);
    ASSERT_NE(w, nullptr);
}

TEST(OverviewPanel, HiddenPanelDrawsNothing) {
    test::HeadlessImGui im;
    ui::Dashboard dash;
    dash.overview.visible = false;
    ui::UiActions actions;
    im.begin_frame();
    const ui::UiSnapshot empty;
    dash.draw(empty, actions);
    im.end_frame();
    EXPECT_EQ(ImGui::FindWindowByName(ui::OverviewPanel::title), nullptr);
}

TEST(OverviewPanel, ButtonClickEmitsAction) {
    test::HeadlessImGui im;
    ui::Dashboard dash;
    dash.set_solo(ui::OverviewPanel::title);
    ui::UiSnapshot snap;
    ui::UiActions actions;
    auto frame = [&] { dash.draw(snap, actions); };
    im.begin_frame();
    frame();
    im.end_frame();
    ImGuiWindow* w = ImGui::FindWindowByName(ui::OverviewPanel::title);
    ASSERT_NE(w, nullptr);
    ImVec2 at;
    ASSERT_TRUE(im.find_item(w->GetID("Say hello"), w->Rect(), frame, &at)) << "button never hovered";
    EXPECT_TRUE(actions.queue.empty()) << "hovering alone must not emit";
    im.click(at, frame);
    ASSERT_EQ(actions.queue.size(), 1u);
    ASSERT_TRUE(std::holds_alternative<ui::ActionShowMessage>(actions.queue[0]));
}
