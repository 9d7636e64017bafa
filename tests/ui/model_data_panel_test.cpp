// Model and data panel: empty state, the summary of a real (synthetic) GGUF, open intents, and task selection.
#include "ui/ui_fixtures.h"

#include "core/model/gguf.h"
#include "ui/panels/model_data_panel.h"

using namespace speculum;

TEST(ModelSummary, SummarizesSyntheticGguf) {
    model::GgufFile file = model::GgufFile::open(test::synthetic_gguf());
    ui::ModelSummary s   = ui::summarize_gguf(file);
    ASSERT_TRUE(s.hparams.has_value()) << s.hparams_error;
    EXPECT_EQ(s.hparams->arch, "llama");
    EXPECT_EQ(s.hparams->n_layer, 2);
    EXPECT_GT(s.n_params, 256 * 64);
    ASSERT_FALSE(s.types.empty());
    int64_t count = 0;
    for (const auto& t : s.types) count += t.count;
    EXPECT_EQ(count, s.n_tensors);
    EXPECT_GT(s.weight_bits, 8.0);  // f16 matrices and f32 norms
    EXPECT_EQ(ui::format_bytes(1500), "1.5 kB");
    EXPECT_EQ(ui::format_count(7'240'000'000), "7.24 B");
}

TEST(ModelDataPanel, EmptyStateAndOpenButtonEmitsDialogIntent) {
    test::HeadlessImGui im;
    ui::ModelDataPanel panel;
    ui::UiSnapshot snap = test::modeled_snapshot();
    snap.bundled_models = {"/models/tiny.gguf"};
    ui::UiActions actions;
    auto frame     = [&] { panel.draw(snap, actions); };
    ImGuiWindow* w = test::draw_once(im, panel.title, frame);
    ASSERT_NE(w, nullptr);
    ImVec2 at;
    ASSERT_TRUE(im.find_item(w->GetID("Open model..."), w->Rect(), frame, &at));
    im.click(at, frame);
    ASSERT_EQ(actions.queue.size(), 1u);
    EXPECT_TRUE(std::holds_alternative<ui::ActionOpenModelDialog>(actions.queue[0]));
    actions.queue.clear();
    ASSERT_TRUE(im.find_item(w->GetID("tiny.gguf"), w->Rect(), frame, &at));
    im.click(at, frame);
    ASSERT_EQ(actions.queue.size(), 1u);
    auto* open = std::get_if<ui::ActionOpenModel>(&actions.queue[0]);
    ASSERT_NE(open, nullptr);
    EXPECT_EQ(open->path, "/models/tiny.gguf");
}

TEST(ModelDataPanel, DrawsSummaryDatasetAndMessages) {
    test::HeadlessImGui im;
    ui::ModelDataPanel panel;
    ui::UiSnapshot snap = test::modeled_snapshot();
    snap.model          = ui::summarize_gguf(model::GgufFile::open(test::synthetic_gguf()));
    snap.model_state    = ui::ModelState::loaded;
    snap.dataset        = ui::DatasetSummary{"/d/x.jsonl", 3, {"code", "qa"}, {2, 1}, ""};
    snap.messages       = {{ui::MessageLevel::error, "bad.gguf: not a GGUF file"}};
    snap.jobs           = {{7, "Loading model tiny.gguf", 0.5, "layer 1/2"}};
    ui::UiActions actions;
    const ui::UiSnapshot empty = test::modeled_snapshot();
    // Content height (the window clips what does not fit): measured after two frames of each snapshot.
    auto content_height = [&](const ui::UiSnapshot& s) {
        for (int i = 0; i < 3; ++i) test::draw_once(im, panel.title, [&] { panel.draw(s, actions); });
        return ImGui::FindWindowByName(panel.title)->ContentSize.y;
    };
    float empty_h = content_height(empty), full_h = content_height(snap);
    EXPECT_GT(full_h, empty_h + 150) << "progress, summary table, tensor types and messages add rows";
    EXPECT_TRUE(actions.queue.empty());
}

// The summary a user checks first: every value whole (a long path wraps, never "..."), the tokenizer, the memory the
// process holds, and what Speculum can draft for the model (its own MTP layers when it has them).
TEST(ModelDataPanel, TheSummaryIsWholeAndSaysWhatCanDraftForTheModel) {
    test::HeadlessImGui im;
    ui::ModelDataPanel panel;
    ui::UiSnapshot snap = test::modeled_snapshot();
    snap.model          = ui::summarize_gguf(model::GgufFile::open(test::synthetic_gguf()));
    snap.model->path    = "/home/researcher/models/a-rather-long-folder-name/qwen3.6-27b-instruct-q4_k_m-imatrix.gguf";
    snap.model->tokenizer        = "gpt2, 151936 tokens";
    snap.model->hparams->n_nextn = 1;
    snap.model_state             = ui::ModelState::loaded;
    snap.resident_bytes          = 123'000'000;
    ui::UiActions actions;
    // ImGui's log of the rendered text, delivered through the clipboard hook when the frame's log ends.
    std::string text;
    ImGui::GetIO().ClipboardUserData  = &text;
    ImGui::GetIO().SetClipboardTextFn = [](void* out, const char* t) { *static_cast<std::string*>(out) = t; };
    for (int i = 0; i < 3; ++i)
        test::draw_once(im, panel.title, [&] {
            ImGui::LogToClipboard();
            panel.draw(snap, actions, true);  // over the whole display: nothing clipped away
            ImGui::LogFinish();
        });
    EXPECT_NE(text.find("qwen3.6-27b-instruct-q4_k_m-imatrix.gguf"), std::string::npos) << text;
    EXPECT_NE(text.find("gpt2, 151936 tokens"), std::string::npos);
    EXPECT_NE(text.find("123.0 MB resident"), std::string::npos) << text;
    EXPECT_NE(text.find("its own MTP layer: the MTP head drafter"), std::string::npos);
    EXPECT_NE(text.find("self-drafts from its weights"), std::string::npos);
    EXPECT_NE(text.find("suggested: Tune"), std::string::npos);
    const std::vector<std::string> none = ui::drafting_options(ui::ModelSummary{});
    EXPECT_TRUE(none.empty()) << "a model Speculum cannot run gets no drafting options";
}
