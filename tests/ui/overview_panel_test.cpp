// The Overview panel draws headlessly from a snapshot, and draws nothing when hidden.
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
