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

// A line wider than the space left is cut with "..." (the whole text in a tooltip), never drawn past the edge.
TEST(Layout, TextFitCutsALongLineAtTheEdge) {
    test::HeadlessImGui im;
    im.begin_frame();
    ImGui::SetNextWindowPos(ImVec2(10, 10));
    ImGui::SetNextWindowSize(ImVec2(200, 200));
    ImGui::Begin("fit");
    const float avail = ImGui::GetContentRegionAvail().x;
    const std::string long_line(200, 'w');
    const std::string cut = ui::fit_text(long_line, avail);
    ui::text_fit("%s", long_line.c_str());
    const ImRect item(ImGui::GetItemRectMin(), ImGui::GetItemRectMax());
    const ImRect window = ImGui::GetCurrentWindow()->Rect();
    EXPECT_EQ(ui::fit_text("short", avail), "short");
    // Multi-byte characters are never split.
    const std::string cut_utf8 = ui::fit_text(std::string(100, 'a') + "\xc3\xa9\xc3\xa9\xc3\xa9" + long_line, avail);
    ImGui::End();
    im.end_frame();
    ASSERT_GT(cut.size(), 3u);
    EXPECT_EQ(cut.substr(cut.size() - 3), "...");
    EXPECT_LT(cut.size(), long_line.size());
    EXPECT_LE(item.Max.x, window.Max.x);
    EXPECT_EQ(cut_utf8.substr(cut_utf8.size() - 3), "...");
    const std::string body = cut_utf8.substr(0, cut_utf8.size() - 3);
    EXPECT_NE(static_cast<unsigned char>(body.back()), 0xc3) << "a cut inside a character";
}

// At the size the doc pictures use, with a measured run and long names, no panel's contents are wider than the
// panel: every line wraps, is cut with a tooltip, or fits.
TEST(Layout, NoPanelRunsPastItsRightEdge) {
    test::HeadlessImGui im;
    ui::reset_layout();
    ui::Dashboard d;
    ui::UiSnapshot snap = test::modeled_snapshot();
    ui::MeasuredView m  = test::sample_measured();
    m.drafter           = "bundled draft model (speculum-draft-f16.gguf, 10.2 M parameters)";
    m.source            = "prose_continuation.jsonl, task prose, 24 of 64 prompts";
    m.stats.levels.resize(2);
    m.stats.levels[0].n_forward = 100, m.stats.levels[0].bytes_weights = 7350000000ull;
    m.stats.levels[0].flops = 9.1e9, m.stats.levels[0].cost_ratio = 1;
    m.stats.levels[1].n_forward = 300, m.stats.levels[1].bytes_weights = 6120000000ull;
    m.stats.levels[1].flops = 6.2e9, m.stats.levels[1].cost_ratio = 0.078;
    snap.measured  = m;
    snap.llc_bytes = uint64_t(32) << 20;
    for (const ui::Dashboard::PanelEntry& p : d.panels()) *p.visible = true;  // the hidden ones too
    for (const ImVec2 size : {ImVec2(1400, 814), ImVec2(1280, 720)}) {
        ImGui::GetIO().DisplaySize = size;
        frames(im, d, snap, 3);
        for (const ui::Dashboard::PanelEntry& p : d.panels()) {
            if (!*p.visible) continue;
            ImGuiWindow* w = ImGui::FindWindowByName(p.title);
            ASSERT_NE(w, nullptr) << p.title;
            if (w->Collapsed) continue;
            EXPECT_LE(w->ContentSize.x, w->ContentRegionRect.GetWidth() + 1.0f)
                << p.title << " at " << size.x << "x" << size.y << ": contents " << w->ContentSize.x << " px wide in "
                << w->ContentRegionRect.GetWidth() << " px";
        }
    }
}
