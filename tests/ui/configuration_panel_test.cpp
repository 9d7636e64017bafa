// Configuration panel: values round-trip without input, a slider drag emits the matching ActionSetConfig, the
// tree and cascade editors edit the config, and problems are listed.
#include "ui/ui_fixtures.h"

#include "ui/panels/configuration_panel.h"

using namespace speculum;

TEST(ConfigurationPanel, DrawsWithoutEmittingWhenUntouched) {
    test::HeadlessImGui im;
    ui::ConfigurationPanel panel;
    ui::AppConfig cfg;
    cfg.spec.gamma[0]       = 7;
    cfg.level1().alpha      = 0.65;
    cfg.draft().kind        = drafts::DraftKind::self;
    cfg.draft().prune.ratio = 0.3f;
    set_tree_mode(cfg, ui::TreeMode::branching);
    ASSERT_EQ(ui::set_config_value(cfg, "cascade", "1"), "");
    ui::UiSnapshot snap = test::modeled_snapshot(cfg);
    ui::UiActions actions;
    for (int i = 0; i < 3; ++i)
        ASSERT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
    EXPECT_TRUE(actions.queue.empty()) << "drawing a config must not change it (values round-trip through the widgets)";
}

TEST(ConfigurationPanel, GammaSliderEmitsSetConfig) {
    test::HeadlessImGui im;
    ui::ConfigurationPanel panel;
    ui::UiSnapshot snap = test::modeled_snapshot();
    ui::UiActions actions;
    auto frame     = [&] { panel.draw(snap, actions); };
    ImGuiWindow* w = test::draw_once(im, panel.title, frame);
    ASSERT_NE(w, nullptr);
    ImVec2 at;
    ASSERT_TRUE(im.find_item(w->GetID("gamma"), w->Rect(), frame, &at)) << "gamma slider never hovered";
    ASSERT_TRUE(actions.queue.empty());
    im.click(at, frame);  // a click on the slider's left end sets a small γ
    ASSERT_FALSE(actions.queue.empty());
    auto* set = std::get_if<ui::ActionSetConfig>(&actions.queue.back());
    ASSERT_NE(set, nullptr);
    EXPECT_NE(set->config.gamma(), snap.config.gamma());
    ui::AppConfig expected = snap.config;
    expected.spec.gamma[0] = set->config.gamma();
    EXPECT_EQ(set->config, expected) << "only gamma may change";
}

// An n-gram level 1: every method's parameters round-trip through the widgets, and its key-length slider edits only
// that parameter.
TEST(ConfigurationPanel, NgramDrafterEditsItsMethodsParameters) {
    test::HeadlessImGui im;
    for (drafts::NgramMethod m : drafts::kNgramMethods) {
        SCOPED_TRACE(drafts::to_string(m));
        ui::ConfigurationPanel panel;
        ui::AppConfig cfg;
        cfg.draft()              = {};
        cfg.draft().kind         = drafts::DraftKind::ngram;
        cfg.draft().ngram.method = m;
        cfg.draft().ngram.size_n = 3;
        ui::UiSnapshot snap      = test::modeled_snapshot(cfg);
        ASSERT_TRUE(snap.config_problems.empty()) << snap.config_problems.front();
        ui::UiActions actions;
        auto frame = [&] { panel.draw(snap, actions); };
        for (int i = 0; i < 3; ++i) ASSERT_NE(test::draw_once(im, panel.title, frame), nullptr);
        EXPECT_TRUE(actions.queue.empty()) << "drawing must not change the config";
        if (m != drafts::NgramMethod::simple) continue;
        ImGuiWindow* w = test::draw_once(im, panel.title, frame);
        ImVec2 at;
        ASSERT_TRUE(im.find_item(w->GetID("key n"), w->Rect(), frame, &at)) << "the key-length slider is never hovered";
        im.click(at, frame);
        ASSERT_FALSE(actions.queue.empty());
        auto* set = std::get_if<ui::ActionSetConfig>(&actions.queue.back());
        ASSERT_NE(set, nullptr);
        EXPECT_NE(set->config.draft().ngram.size_n, 3);
        ui::AppConfig expected        = snap.config;
        expected.draft().ngram.size_n = set->config.draft().ngram.size_n;
        EXPECT_EQ(set->config, expected) << "only the key length may change";
    }
}

TEST(ConfigurationPanel, ShowsProblems) {
    test::HeadlessImGui im;
    ui::ConfigurationPanel panel;
    ui::AppConfig cfg;
    cfg.spec.gamma[0]   = 0;
    ui::UiSnapshot snap = test::modeled_snapshot(cfg);
    ASSERT_FALSE(snap.config_problems.empty());
    EXPECT_NE(snap.config_problems[0].find("gamma"), std::string::npos);
    EXPECT_FALSE(snap.modeled.error.empty());
    ui::UiActions actions;
    EXPECT_NE(test::draw_once(im, panel.title, [&] { panel.draw(snap, actions); }), nullptr);
}

TEST(AppConfig, SetConfigValueParsesAndRejects) {
    ui::AppConfig cfg;
    EXPECT_EQ(ui::set_config_value(cfg, "gamma", "6"), "");
    EXPECT_EQ(cfg.gamma(), 6);
    EXPECT_EQ(ui::set_config_value(cfg, "branching", "3x2x1"), "");
    EXPECT_EQ(cfg.spec.tree.branching, (std::vector<int>{3, 2, 1}));
    EXPECT_EQ(ui::set_config_value(cfg, "cascade", "2"), "");
    EXPECT_EQ(cfg.spec.levels.size(), 3u) << "level 1 and two Max-Gram levels below it";
    EXPECT_NE(ui::set_config_value(cfg, "gamma", "six"), "");
    EXPECT_NE(ui::set_config_value(cfg, "nope", "1"), "");
    EXPECT_NE(ui::set_config_value(cfg, "tree", "forest"), "");
}

// The reduced LM head (FR-Spec) of a draft model: opening its node and moving "head tokens" sets the head and takes
// the open prompt suite as its corpus, and changes nothing else; the run's name says it.
TEST(ConfigurationPanel, TheReducedHeadTakesTheOpenPromptSuite) {
    test::HeadlessImGui im;
    ui::ConfigurationPanel panel;
    ui::AppConfig cfg;
    cfg.draft()         = {};
    cfg.draft().kind    = drafts::DraftKind::model;
    ui::UiSnapshot snap = test::modeled_snapshot(cfg);
    snap.dataset        = ui::DatasetSummary{};
    snap.dataset->path  = "datasets/prose_continuation.jsonl";
    ui::UiActions actions;
    auto frame     = [&] { panel.draw(snap, actions); };
    ImGuiWindow* w = test::draw_once(im, panel.title, frame);
    ASSERT_NE(w, nullptr);
    const ImGuiID node = w->GetID("reduced LM head (FR-Spec)");
    ImVec2 at;
    ASSERT_TRUE(im.find_item(node, w->Rect(), frame, &at)) << "the reduced-head node is never hovered";
    im.click(at, frame);
    ASSERT_TRUE(actions.queue.empty()) << "opening the node changes nothing";
    ASSERT_TRUE(im.find_item(ImHashStr("head tokens", 0, node), w->Rect(), frame, &at)) << "no head tokens slider";
    im.click(at, frame);
    ASSERT_FALSE(actions.queue.empty());
    auto* set = std::get_if<ui::ActionSetConfig>(&actions.queue.back());
    ASSERT_NE(set, nullptr);
    EXPECT_GT(set->config.draft().head_vocab, 0);
    EXPECT_EQ(set->config.draft().head_vocab_corpus, "datasets/prose_continuation.jsonl");
    EXPECT_TRUE(set->config.problems().empty()) << set->config.problems().front();
    ui::AppConfig expected             = snap.config;
    expected.draft().head_vocab        = set->config.draft().head_vocab;
    expected.draft().head_vocab_corpus = set->config.draft().head_vocab_corpus;
    EXPECT_EQ(set->config, expected) << "only the head may change";
    EXPECT_NE(ui::describe_draft(set->config.draft()).find("+ head "), std::string::npos);
}
