// The panel layout is proportional to the window: shrinking and re-growing the display puts every panel back at
// the same fractions (none left overlapping), a panel the user moved keeps its place relative to the window, and
// View > Reset layout puts every panel at its default place.
#include "ui/ui_fixtures.h"

#include "ui/dashboard.h"
#include "ui/widgets.h"

using namespace speculum;

namespace {

void frames(test::HeadlessImGui& im, ui::Dashboard& d, const ui::UiSnapshot& snap, int n = 2) {
    ui::UiActions actions;
    for (int i = 0; i < n; ++i) {
        im.begin_frame();
        d.draw(snap, actions);
        im.end_frame();
    }
}

ImRect rect_of(const char* title) {
    ImGuiWindow* w = ImGui::FindWindowByName(title);
    return w ? w->Rect() : ImRect();
}

}  // namespace

TEST(Layout, ProportionalToTheWindowAndResettable) {
    test::HeadlessImGui im;
    ui::reset_layout();
    ui::Dashboard d;
    const ui::UiSnapshot snap  = test::modeled_snapshot();
    ImGui::GetIO().DisplaySize = ImVec2(1280, 800);
    frames(im, d, snap);
    const ImRect config0 = rect_of(d.configuration.title);
    ASSERT_GT(config0.GetWidth(), 0.0f);

    // The user drags the Speedup panel somewhere else.
    ImGui::SetWindowPos(d.speedup.title, ImVec2(646, 406));
    frames(im, d, snap);
    const ImRect moved = rect_of(d.speedup.title);
    EXPECT_NEAR(moved.Min.x, 646.0f, 0.5f);

    // Shrink to half: every panel at the same fractions of the smaller window.
    ImGui::GetIO().DisplaySize = ImVec2(640, 400);
    frames(im, d, snap);
    const ImRect small = rect_of(d.speedup.title);
    EXPECT_NEAR(small.Min.x, (646.0f - 6) / 1280 * 640 + 6, 1.0f);
    EXPECT_NEAR(small.Min.y, (406.0f - 6) / 800 * 400 + 6, 1.0f);
    EXPECT_NEAR(rect_of(d.configuration.title).GetHeight() + 12, (config0.GetHeight() + 12) / 2, 1.0f);

    // Re-grow: back where they were, the moved panel included.
    ImGui::GetIO().DisplaySize = ImVec2(1280, 800);
    frames(im, d, snap);
    EXPECT_NEAR(rect_of(d.speedup.title).Min.x, moved.Min.x, 1.0f);
    EXPECT_NEAR(rect_of(d.speedup.title).Min.y, moved.Min.y, 1.0f);
    EXPECT_NEAR(rect_of(d.configuration.title).GetHeight(), config0.GetHeight(), 1.0f);

    // Reset: the moved panel goes back to its default place (the Speedup panel's: a quarter across, a third down).
    ui::reset_layout();
    frames(im, d, snap);
    EXPECT_NEAR(rect_of(d.speedup.title).Min.x, 0.25f * 1280 + 6, 1.0f);
    EXPECT_NEAR(rect_of(d.speedup.title).Min.y, 0.34f * 800 + 6, 1.0f);
}

// The [modeled]/[measured] tags are never cut off at the right edge: a tag that does not fit goes to the next line.
TEST(Layout, TagsWrapInsteadOfBeingCut) {
    test::HeadlessImGui im;
    ImRect tag, window;
    im.begin_frame();
    ImGui::SetNextWindowPos(ImVec2(10, 10));
    ImGui::SetNextWindowSize(ImVec2(220, 200));
    ImGui::Begin("narrow");
    ImGui::TextUnformatted("a line of text as wide as the window");
    ui::modeled_tag();
    tag    = ImRect(ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
    window = ImGui::GetCurrentWindow()->Rect();
    ImGui::End();
    im.end_frame();
    EXPECT_LE(tag.Max.x, window.Max.x) << "the tag fits inside the window";
    EXPECT_GT(tag.Min.y, window.Min.y + ImGui::GetTextLineHeightWithSpacing()) << "on the next line";
}
