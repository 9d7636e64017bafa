// Comparing runs: the history as CSV (one row per run, figures and configuration), each run's prompts from its
// report, and the Run history panel drawing the pinned runs' acceptance and speedup overlaid and their prompts.
#include "ui/model/run_compare.h"
#include "ui/model/export_content.h"
#include "ui/panels/run_history_panel.h"
#include "ui/ui_fixtures.h"

#include <gmock/gmock.h>

using namespace speculum;
using ::testing::HasSubstr;

namespace {

// A finished run with a report of two prompts (speedups 1.5 and 2.5), pinned.
ui::RunRecord record(int id, int gamma, double alpha) {
    ui::RunRecord r;
    r.id                      = id;
    r.when                    = "12:00:0" + std::to_string(id);
    r.pinned                  = true;
    r.config.spec.gamma[0]    = gamma;
    r.view                    = test::sample_measured();
    r.view.complete           = true;
    r.view.stats.pos_reached  = {100, 80};
    r.view.stats.pos_accepted = {int64_t(100 * alpha), int64_t(80 * alpha)};
    r.view.repeats.speedup    = {1.8, 1.6, 2.0, 8, 0.95};
    nlohmann::json report     = {{"runs", nlohmann::json::array()}};
    for (auto [pid, task, speedup] : {std::tuple{"qa-1", "qa", 1.5}, {"code-1", "code \"x\"", 2.5}}) {
        engine::RunStats s;
        s.n_steps = 10, s.n_generated = 30, s.n_drafted = 40, s.n_accepted = 20, s.speedup = speedup;
        report["runs"].push_back({{"id", pid}, {"task", task}, {"stats", s}});
    }
    r.view.report = std::make_shared<const nlohmann::json>(report);
    return r;
}

}  // namespace

TEST(RunCompare, HistoryAndPromptsAsRowsAndCsv) {
    const std::vector<ui::RunRecord> history{record(1, 4, 0.8), record(2, 6, 0.6)};
    const std::vector<ui::PromptRow> rows = ui::prompt_rows(history[0]);
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[1].id, "code-1");
    EXPECT_DOUBLE_EQ(rows[1].speedup, 2.5);
    EXPECT_DOUBLE_EQ(rows[1].tokens_per_pass, 3.0);
    EXPECT_DOUBLE_EQ(rows[1].acceptance, 0.5);

    const std::string csv = ui::history_csv(history);
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << "a header and a row per run:\n" << csv;
    EXPECT_THAT(csv, HasSubstr("run,time,pinned,drafter,gamma,speedup,speedup_lo,speedup_hi,interval_coverage,pairs"));
    EXPECT_THAT(csv, HasSubstr("\n2,\"12:00:02\",1,"));
    EXPECT_THAT(csv, HasSubstr(",6,1.8,1.6,2,0.95,8,")) << "gamma 6, the median and its interval";
    EXPECT_THAT(csv, HasSubstr("\"\"gamma\"\":[6]")) << "the configuration, quoted";
    const std::string prompts = ui::prompts_csv(history);
    EXPECT_EQ(std::count(prompts.begin(), prompts.end(), '\n'), 5);
    EXPECT_THAT(prompts, HasSubstr("1,\"code-1\",\"code \"\"x\"\"\",2.5,3,0.5,40"));

    ui::UiSnapshot snap = test::modeled_snapshot();
    EXPECT_THAT(ui::make_export(ui::ExportFormat::history_csv, snap, "").error, HasSubstr("no finished measured run"));
    snap.history = history;
    EXPECT_EQ(ui::make_export(ui::ExportFormat::history_csv, snap, "").text, csv);
    EXPECT_EQ(ui::make_export(ui::ExportFormat::prompts_csv, snap, "").text, prompts);
}

TEST(RunCompare, ThePanelOverlaysPinnedRunsAndListsTheirPrompts) {
    test::HeadlessImGui im;
    ui::RunHistoryPanel panel;
    ui::UiSnapshot snap = test::modeled_snapshot();
    snap.history        = {record(1, 4, 0.8), record(2, 6, 0.6)};
    ui::UiActions actions;
    std::string text;
    ImGui::GetIO().ClipboardUserData  = &text;
    ImGui::GetIO().SetClipboardTextFn = [](void* out, const char* t) { *static_cast<std::string*>(out) = t; };
    auto frame                        = [&] {
        ImGui::LogToClipboard();
        panel.draw(snap, actions, true);
        ImGui::LogFinish();
    };
    ImGuiWindow* w = nullptr;
    for (int i = 0; i < 3; ++i) w = test::draw_once(im, panel.title, frame);
    ASSERT_NE(w, nullptr);
    ImVec2 at;  // open "Per prompt" as a user would
    ASSERT_TRUE(im.find_item(w->GetID("Per prompt"), w->Rect(), frame, &at));
    im.click(at, frame);
    for (int i = 0; i < 2; ++i) test::draw_once(im, panel.title, frame);
    EXPECT_THAT(text, HasSubstr("code-1"));
    EXPECT_THAT(text, HasSubstr("2.50x"));
    EXPECT_THAT(text, HasSubstr("Pinned runs compared"));
    EXPECT_THAT(text, HasSubstr("acceptance per position"));
    EXPECT_THAT(text, HasSubstr("#1 "));
    EXPECT_THAT(text, HasSubstr("#2 "));
    snap.history[1].pinned = false;  // one pinned: nothing to overlay
    for (int i = 0; i < 3; ++i) test::draw_once(im, panel.title, frame);
    EXPECT_THAT(text, ::testing::Not(HasSubstr("Pinned runs compared")));
}
