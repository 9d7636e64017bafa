// Browse buttons' files reach the controller as ActionFilePicked: a speculation_profile.json becomes level 1's modeled
// acceptance per position (kept in the settings, named as the source of alpha, cleared by the editor), a bad profile
// or a missing draft file changes nothing and says why, and a draft file fills its level's path.
#include "ui/model/app_controller.h"
#include "ui/ui_fixtures.h"

#include "core/engine/acceptance_profile.h"
#include "core/file_io.h"
#include "core/resources.h"

#include <gmock/gmock.h>

#include <fstream>

using namespace speculum;
using ::testing::HasSubstr;

namespace {

std::string write_profile(const std::string& name, const std::vector<double>& conditional) {
    engine::AcceptanceProfile p;
    p.conditional = conditional;
    double m      = 1;
    for (double a : conditional) p.marginal.push_back(m *= a);
    p.mean_accept_length                = 2.5;
    p.conditions.drafter                = "small draft";
    p.conditions.dataset                = "prose_continuation.jsonl";
    p.conditions.num_samples            = 8;
    p.conditions.num_speculative_tokens = int32_t(conditional.size());
    const auto path                     = test::tmp_dir() / name;
    std::ofstream(path) << nlohmann::json(p).dump();
    return path.string();
}

}  // namespace

TEST(AppFiles, AnAcceptanceProfileBecomesTheModeledAlphaAndRoundTrips) {
    ui::AppController c;
    const double assumed_ewif = c.snapshot().modeled.output.ewif;
    const std::string path    = write_profile("ui_profile.json", {0.95, 0.9, 0.85, 0.8, 0.75});
    EXPECT_TRUE(c.handle(ui::ActionFilePicked{ui::FileField::acceptance_profile, 0, path}));
    const ui::UiSnapshot& s = c.snapshot();
    ASSERT_TRUE(s.config.modeled.acceptance_profile.has_value());
    EXPECT_EQ(s.modeled.alpha_source, "from ui_profile.json");
    EXPECT_THAT(s.modeled.input.alpha, ::testing::ElementsAre(0.95, 0.9, 0.85, 0.8, 0.75));
    EXPECT_GT(s.modeled.output.ewif, assumed_ewif) << "the profile's acceptance is above the assumed 0.8";
    EXPECT_THAT(s.status_line, HasSubstr("5 positions"));
    // The settings keep it (no file read again), and a settings file with a broken profile names the field.
    const nlohmann::json j = s.config;
    EXPECT_EQ(j.get<ui::AppConfig>(), s.config);
    nlohmann::json bad                                                       = j;
    bad["modeled"]["acceptance_profile"]["profile"]["marginal_accept_rates"] = {0.5, 0.9};
    EXPECT_THROW((void)bad.get<ui::AppConfig>(), std::invalid_argument);
    // The editor's "Use the assumed alpha" clears it.
    ui::AppConfig cfg = s.config;
    cfg.modeled.acceptance_profile.reset();
    c.handle(ui::ActionSetConfig{cfg});
    EXPECT_EQ(c.snapshot().modeled.alpha_source, "assumed");
    EXPECT_DOUBLE_EQ(c.snapshot().modeled.output.ewif, assumed_ewif);
}

TEST(AppFiles, ABadFileChangesNothingAndSaysWhy) {
    ui::AppController c;
    const ui::AppConfig before = c.snapshot().config;
    const auto not_json        = test::tmp_dir() / "ui_profile_bad.json";
    std::ofstream(not_json) << "{\"conditional_accept_rates\": [1.5]}";
    c.handle(ui::ActionFilePicked{ui::FileField::acceptance_profile, 0, not_json.string()});
    EXPECT_EQ(c.snapshot().config, before);
    ASSERT_FALSE(c.snapshot().messages.empty());
    EXPECT_EQ(c.snapshot().messages.back().level, ui::MessageLevel::error);
    EXPECT_THAT(c.snapshot().messages.back().text, HasSubstr("ui_profile_bad.json"));
    EXPECT_THAT(c.snapshot().messages.back().text, HasSubstr("unchanged"));
    c.handle(ui::ActionFilePicked{ui::FileField::draft_model, 0, (test::tmp_dir() / "no_such_draft.gguf").string()});
    EXPECT_EQ(c.snapshot().config, before);
    EXPECT_THAT(c.snapshot().messages.back().text, HasSubstr("not a file"));
}

TEST(AppFiles, ADraftFileFillsItsLevelsPath) {
    ui::AppController c;
    ui::AppConfig cfg = c.snapshot().config;
    cfg.draft().kind  = drafts::DraftKind::model;
    c.handle(ui::ActionSetConfig{cfg});
    const std::string draft = test::synthetic_gguf();
    c.handle(ui::ActionFilePicked{ui::FileField::draft_model, 0, draft});
    EXPECT_EQ(c.snapshot().config.draft().model_path, draft);
    c.handle(ui::ActionFilePicked{ui::FileField::draft_model, 3, draft});  // no such level: ignored
    EXPECT_EQ(c.snapshot().config.spec.levels.size(), 1u);
}

// A reduced head's corpus (Browse next to "head corpus") fills that field, not the draft's model path.
TEST(AppFiles, AHeadCorpusFillsTheReducedHeadsCorpus) {
    ui::AppController c;
    ui::AppConfig cfg      = c.snapshot().config;
    cfg.draft().kind       = drafts::DraftKind::model;
    cfg.draft().head_vocab = 64, cfg.draft().head_vocab_corpus = "datasets/prose_continuation.jsonl";
    c.handle(ui::ActionSetConfig{cfg});
    const std::string model_path = c.snapshot().config.draft().model_path;
    const auto corpus            = test::tmp_dir() / "ui_head_corpus.jsonl";
    std::ofstream(corpus) << "{\"id\": \"a\", \"prompt\": \"the cat\"}\n";
    c.handle(ui::ActionFilePicked{ui::FileField::head_corpus, 0, corpus.string()});
    EXPECT_EQ(c.snapshot().config.draft().head_vocab_corpus, corpus.string());
    EXPECT_EQ(c.snapshot().config.draft().model_path, model_path);
    EXPECT_EQ(c.snapshot().config.draft().head_vocab, 64);
}

// Help › First steps reads its guide from the resources: it ships, and it names the controls it tells the user to use.
TEST(AppFiles, TheFirstStepsGuideShipsWithTheResources) {
    const std::string guide =
        read_input_file(resource_path("help/first_steps.md").string(), 1 << 20, "the first-steps guide");
    for (const char* control : {"Open model...", "auto-measure", "Run now", "View › Tune", "apply", "Build draft GGUF"})
        EXPECT_NE(guide.find(control), std::string::npos) << control;
}
