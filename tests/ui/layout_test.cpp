// The panel layout is proportional to the window: shrinking and re-growing the display puts every panel back at
// the same fractions (none left overlapping), a panel the user moved keeps its place relative to the window, and
// View > Reset layout puts every panel at its default place.
#include "ui/text_layout.h"
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

// A measured run with long names and two levels in multi-GB units (the widest figures the panels show).
ui::MeasuredView long_names_measured() {
    ui::MeasuredView m = test::sample_measured();
    m.drafter          = "bundled draft model (speculum-draft-f16.gguf, 10.2 M parameters)";
    m.source           = "prose_continuation.jsonl, task prose, 24 of 64 prompts";
    m.stats.levels.resize(2);
    m.stats.levels[0].n_forward = 100, m.stats.levels[0].bytes_weights = 7350000000ull;
    m.stats.levels[0].flops = 9.1e9, m.stats.levels[0].cost_ratio = 1;
    m.stats.levels[1].n_forward = 300, m.stats.levels[1].bytes_weights = 6120000000ull;
    m.stats.levels[1].flops = 6.2e9, m.stats.levels[1].cost_ratio = 0.078;
    return m;
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
    ui::MeasuredView m  = long_names_measured();
    snap.measured       = m;
    snap.llc_bytes      = uint64_t(32) << 20;
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

namespace {

// A snapshot with every panel's content: the bundled-size synthetic model open (its summary), a measured run with
// its levels and A/B pairs, two pinned runs in the history (the overlay), long names.
ui::UiSnapshot full_snapshot() {
    ui::AppController c;
    c.open_model(test::synthetic_gguf());
    EXPECT_TRUE(test::poll_until(c, [&] { return c.model() != nullptr && !c.busy(); }));
    ui::AppConfig cfg            = c.snapshot().config;
    cfg.modeled.hardware_profile = "rtx4090";      // the Hardware panel's roofline and its figures
    ui::set_tree_mode(cfg, ui::TreeMode::budget);  // the Tree view's tree and its E[accepted length]
    c.set_config(cfg);
    ui::UiSnapshot snap = c.snapshot();
    EXPECT_GE(snap.profile_index, 0);
    ui::MeasuredView m              = long_names_measured();
    m.repeats.passes                = 6;
    m.repeats.speedup_pairs         = {2.31, 2.44, 2.12, 2.52, 2.38, 2.29};
    m.repeats.speedup               = {2.345, 2.12, 2.52, 6, 0.969};
    m.repeats.tokens_per_s          = {120.5, 110, 130, 6, 0.969};
    m.repeats.baseline_tokens_per_s = {50.2, 48, 52, 6, 0.969};
    m.prompts                       = {{"prose_continuation-000", "prose", "Once upon a time"}};
    m.prompts_total                 = 24;
    snap.measured                   = m;
    snap.measured_config            = snap.config;
    snap.measured_runs              = 2;
    for (int id : {1, 2}) {
        ui::RunRecord r;
        r.id = id, r.when = "10:11:1" + std::to_string(id), r.pinned = true, r.config = snap.config, r.view = m;
        r.config.spec.gamma[0] = 3 + id;
        snap.history.push_back(r);
    }
    snap.llc_bytes = uint64_t(32) << 20;
    return snap;
}

}  // namespace

// At 1280x720, the doc pictures' size and 1920x1080, with every panel shown over a full snapshot, no text the panels
// draw is cut at a clip edge (left or right: a vertical cut is a scrolled view's edge), drawn over other text, or a
// number split across two wrapped lines ("3." then "75"). Read back from the glyphs in ImGui's draw data
// (tests/ui/text_layout.h).
TEST(Layout, NoTextIsCutOrOverlapsOrSplitsANumber) {
    test::HeadlessImGui im;
    const ui::UiSnapshot snap = full_snapshot();
    std::vector<std::string> problems;
    for (const ImVec2 size : {ImVec2(1280, 720), ImVec2(1400, 814), ImVec2(1920, 1080)}) {
        ui::reset_layout();
        ui::Dashboard d;
        for (const ui::Dashboard::PanelEntry& p : d.panels()) *p.visible = true;
        ImGui::GetIO().DisplaySize = size;
        ImDrawData* dd             = nullptr;
        ui::UiActions actions;
        for (int i = 0; i < 3; ++i) {
            im.begin_frame();
            d.draw(snap, actions);
            dd = im.end_frame();
        }
        const std::string at                  = std::to_string(int(size.x)) + "x" + std::to_string(int(size.y)) + " ";
        const std::vector<test::TextRun> runs = test::text_runs(dd, ImGui::GetIO().Fonts->Fonts[0]);
        ASSERT_GT(runs.size(), 100u) << "the panels drew their text";
        if (std::getenv("SPECULUM_DUMP_TEXT"))
            for (const test::TextRun& r : runs)
                std::printf("%s [%s] %.0f,%.0f-%.0f,%.0f clip %.0f-%.0f\n", r.window.c_str(), r.text.c_str(), r.r.Min.x,
                            r.r.Min.y, r.r.Max.x, r.r.Max.y, r.glyphs[0].clip.Min.x, r.glyphs[0].clip.Max.x);
        for (std::string& p : test::text_problems(runs, at)) problems.push_back(std::move(p));
        for (std::string& p : test::table_problems(at)) problems.push_back(std::move(p));
    }
    for (const std::string& p : problems) ADD_FAILURE() << p;
}

// The check above can fail: a window with text cut at its clip edge, two texts drawn at one place, and a number
// wrapped after its period.
TEST(Layout, TheTextCheckFindsCutOverlappingAndSplitText) {
    test::HeadlessImGui im;
    std::vector<std::string> problems;
    for (int frame = 0; frame < 2; ++frame) {
        im.begin_frame();
        ImGui::SetNextWindowPos(ImVec2(10, 10));
        ImGui::SetNextWindowSize(ImVec2(300, 300));
        ImGui::Begin("faulty");
        ImGui::TextUnformatted("fits");
        const ImVec2 p = ImGui::GetCursorScreenPos();
        ImGui::PushClipRect(p, ImVec2(p.x + 17, p.y + 100), true);  // through the "n" of "Cancel"
        ImGui::TextUnformatted("Cancel the run");
        ImGui::PopClipRect();
        ImGui::SetCursorScreenPos(ImVec2(p.x, p.y + 40));
        ImGui::TextUnformatted("one");
        ImGui::SetCursorScreenPos(ImVec2(p.x + 7, p.y + 40));
        ImGui::TextUnformatted("two");
        ImGui::SetCursorScreenPos(ImVec2(p.x, p.y + 80));
        ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + 7 * 21 + 3);  // "E[accepted length] 3." fits, "3.75" not
        ImGui::TextWrapped("E[accepted length] 3.75");
        ImGui::PopTextWrapPos();
        if (ImGui::BeginTable("runs", 2, ImGuiTableFlags_SizingFixedFit, ImVec2(60, 0))) {
            ImGui::TableSetupColumn("pin", ImGuiTableColumnFlags_WidthFixed, 8.0f);
            ImGui::TableSetupColumn("draft");
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted("bundled draft model");
            ImGui::EndTable();
        }
        ImGui::End();
        ImDrawData* dd = im.end_frame();
        if (frame == 1) {
            problems = test::text_problems(test::text_runs(dd, ImGui::GetIO().Fonts->Fonts[0]), "");
            for (std::string& t : test::table_problems("")) problems.push_back(t);
        }
    }
    auto found = [&](const std::string& what) {
        for (const std::string& p : problems)
            if (p.find(what) != std::string::npos) return true;
        return false;
    };
    EXPECT_TRUE(found("cut at the edge: \"Can")) << ::testing::PrintToString(problems);
    EXPECT_TRUE(found("\"one\" drawn over \"two\"")) << ::testing::PrintToString(problems);
    EXPECT_TRUE(found("a number split over two lines")) << ::testing::PrintToString(problems);
    EXPECT_TRUE(found("table column \"pin\"")) << ::testing::PrintToString(problems);
    EXPECT_FALSE(found("fits"));
}

// The panels' wrap breaks only at spaces: a number stays whole, paragraphs stay apart, a word wider than the line
// stays whole on its own line.
TEST(Layout, WrapBreaksOnlyAtSpaces) {
    test::HeadlessImGui im;
    im.begin_frame();
    const float w = ImGui::CalcTextSize("E[accepted length] 3.").x;
    EXPECT_EQ(ui::wrap_at_spaces("E[accepted length] 3.75", w), "E[accepted length]\n3.75");
    EXPECT_EQ(ui::wrap_at_spaces("a b\nc d", 1000), "a b\nc d");
    EXPECT_EQ(ui::wrap_at_spaces("tiny /a/very/long/path/that/does/not/fit.gguf end", ImGui::CalcTextSize("tiny").x),
              "tiny\n/a/very/long/path/that/does/not/fit.gguf\nend");
    EXPECT_EQ(ui::wrap_at_spaces("", 100), "");
    im.end_frame();
}
