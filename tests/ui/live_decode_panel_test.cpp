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
