// The engine behind the UI: AppConfig -> SpecConfig mapping, a real measured run on a synthetic model (token-id
// prompt) and on the bundled target over a dataset (text), streamed through the controller into the snapshot.
#include "ui/model/engine_measurer.h"

#include "ui/ui_fixtures.h"

#include "core/model/model.h"
#include "core/resources.h"

#include <numeric>

using namespace speculum;

namespace {

std::string bundled(const char* relative) {
    std::error_code ec;
    auto res = resources_dir();
    return res && std::filesystem::exists(*res / relative, ec) ? (*res / relative).string() : "";
}

}  // namespace

TEST(SpecConfigFromApp, MapsDraftTreeCascadeAndRunSize) {
    ui::AppConfig c;
    c.draft().kind              = drafts::DraftKind::self;
    c.draft().exit_layer        = 1;
    c.spec.gamma[0]             = 6;
    c.spec.sampling.temperature = 0.5f;
    c.spec.p_min                = 0.25f;
    c.spec.max_new_tokens       = 24;
    c.spec.max_prompts          = 3;
    engine::SpecConfig s        = ui::spec_config_from_app(c, {"prompts.jsonl", "code", {}});
    ASSERT_EQ(s.levels.size(), 1u);
    EXPECT_EQ(s.levels[0], c.draft());
    EXPECT_EQ(s.gamma, std::vector<int32_t>{6});
    EXPECT_EQ(s.verification, engine::Verification::chain);
    EXPECT_FLOAT_EQ(s.sampling.temperature, 0.5f);
    EXPECT_FLOAT_EQ(s.p_min, 0.25f);
    EXPECT_EQ(s.max_new_tokens, 24);
    EXPECT_EQ(s.max_prompts, 3);
    EXPECT_EQ(s.dataset, "prompts.jsonl");
    EXPECT_EQ(s.task, "code");
    EXPECT_TRUE(s.baseline);
    EXPECT_EQ(ui::spec_config_from_app(c, {}).prompt, ui::kBuiltinPrompt) << "no dataset: the built-in prompt";

    set_tree_mode(c, ui::TreeMode::budget);
    c.spec.tree.node_budget = 11;
    c.spec.tree.max_depth   = 5;
    s                       = ui::spec_config_from_app(c, {});
    EXPECT_EQ(s.verification, engine::Verification::tree);
    EXPECT_EQ(s.tree.kind, engine::TreeKind::sequoia);
    EXPECT_EQ(s.tree.node_budget, 11);
    EXPECT_EQ(s.tree.max_depth, 5);
    EXPECT_EQ(s.tree.prior, c.spec.tree.prior);
    set_tree_mode(c, ui::TreeMode::optimal_measured);
    EXPECT_EQ(ui::spec_config_from_app(c, {"", "", {0.7, 0.1}}).tree.prior, (std::vector<double>{0.7, 0.1}))
        << "optimal: the measured acceptance by rank is the prior";
    set_tree_mode(c, ui::TreeMode::branching);
    c.spec.tree.branching = {3, 2};
    s                     = ui::spec_config_from_app(c, {});
    EXPECT_EQ(s.tree.kind, engine::TreeKind::static_shape);
    EXPECT_EQ(s.tree.branching, (std::vector<int32_t>{3, 2}));

    ASSERT_EQ(ui::set_config_value(c, "cascade", "1"), "");  // a Max-Gram level, 10 tokens
    c.spec.sampling.temperature = 0;                         // cascades verify greedily
    EXPECT_THROW(ui::spec_config_from_app(c, {}), std::invalid_argument) << "a tree takes one draft level";
    set_tree_mode(c, ui::TreeMode::chain);
    s = ui::spec_config_from_app(c, {});
    ASSERT_EQ(s.levels.size(), 2u);
    EXPECT_EQ(s.levels[1].kind, drafts::DraftKind::maxgram);
    EXPECT_EQ(s.gamma, (std::vector<int32_t>{6, 10}));
    EXPECT_NO_THROW(s.validate(8));

    ui::AppConfig bundled_draft;  // the default: a separate model with an empty path = the bundled draft
    if (!bundled(kBundledDraftModel).empty()) {
        EXPECT_EQ(ui::spec_config_from_app(bundled_draft, {}).levels[0].model_path, bundled(kBundledDraftModel));
    }
    if (!bundled(kBundledMidModel).empty() && !bundled(kBundledDraftModel).empty()) {
        ui::AppConfig family;  // mid-level draft, and a model level under it: the small draft (small -> mid -> target)
        family.draft().model_path = bundled(kBundledMidModel);
        drafts::DraftSpec below;  // a model level without a path: resolved when measuring
        below.kind = drafts::DraftKind::model;
        family.spec.levels.push_back(below);
        family.spec.gamma.push_back(3);
        ui::normalize(family);
        s = ui::spec_config_from_app(family, {});
        ASSERT_EQ(s.levels.size(), 2u);
        EXPECT_EQ(s.levels[0].model_path, bundled(kBundledMidModel));
        EXPECT_EQ(s.levels[1].model_path, bundled(kBundledDraftModel));
        EXPECT_EQ(s.gamma, (std::vector<int32_t>{family.gamma(), 3}));
    }

    ui::AppConfig wanda;
    wanda.draft().kind         = drafts::DraftKind::self;
    wanda.draft().prune.ratio  = 0.5f;
    wanda.draft().prune.method = drafts::PruneMethod::wanda;
    EXPECT_THROW(ui::spec_config_from_app(wanda, {}), std::invalid_argument) << "Wanda needs calibration text";
    EXPECT_EQ(ui::spec_config_from_app(wanda, {"p.jsonl", "", {}}).levels[0].prune.calibration, "p.jsonl");
}

TEST(EngineMeasurer, MeasuresASyntheticModelWithTokenIdPrompt) {
    auto model = std::make_shared<const model::Model>(model::Model::load(test::synthetic_gguf()));
    ui::AppController::MeasureRequest req;
    req.config.draft().kind        = drafts::DraftKind::self;
    req.config.draft().exit_layer  = 0;  // 1 of the 2 layers drafts
    req.config.spec.gamma[0]       = 3;
    req.config.spec.max_new_tokens = 16;
    req.model                      = model;
    int partials                   = 0;
    double last_progress           = 0;
    ui::MeasuredView v             = ui::measure_with_engine(
                    req, {}, [&](double f, const std::string&) { last_progress = f; },
                    [&](const ui::MeasuredView&) { ++partials; });
    EXPECT_NE(v.source.find("no tokenizer"), std::string::npos) << v.source;
    ASSERT_EQ(v.prompts.size(), 1u);
    EXPECT_EQ(v.n_generated, 16);
    ASSERT_EQ(v.tokens.size(), 16u) << "one TokenPiece per committed token";
    EXPECT_GT(v.n_steps, 0);
    EXPECT_LE(v.n_steps, 16);
    EXPECT_EQ(v.tokens.back().step, v.n_steps - 1);
    ASSERT_GE(v.stats.pos_reached.size(), 1u);
    ASSERT_LE(v.stats.pos_reached.size(), 3u) << "at most gamma positions (as deep as any step got)";
    EXPECT_LE(v.stats.pos_reached[0], v.n_steps);
    EXPECT_GE(v.stats.pos_reached[0], v.n_steps - 1) << "position 1 is reviewed at every step (but a last 1-token one)";
    EXPECT_EQ(std::accumulate(v.stats.accepted_len_hist.begin(), v.stats.accepted_len_hist.end(), int64_t{0}),
              v.n_steps);
    EXPECT_GT(v.stats.tokens_per_s, 0);
    EXPECT_GT(v.stats.baseline_tokens_per_s, 0);
    EXPECT_NEAR(v.stats.speedup, v.stats.tokens_per_s / v.stats.baseline_tokens_per_s, 1e-9);
    EXPECT_EQ(v.lossless_checked, 1);
    EXPECT_EQ(v.lossless_mismatches, 0) << "greedy speculative decoding reproduces the target's own output";
    EXPECT_DOUBLE_EQ(last_progress, 1.0);
    (void)partials;  // a 16-token run may finish inside one 50 ms window

    CancelToken cancel;
    cancel.cancel();
    EXPECT_THROW(ui::measure_with_engine(req, cancel, {}, {}), Cancelled);
    req.config.spec.p_min = 1.0f;
    EXPECT_THROW(ui::measure_with_engine(req, {}, {}, {}), std::invalid_argument) << "the engine refuses p_min = 1";
}

TEST(EngineMeasurer, ControllerStreamsABundledModelRunOverADataset) {
    const std::string target = bundled(kBundledTargetModel);
    auto ds                  = datasets_dir();
    if (target.empty() || !ds) GTEST_SKIP() << "bundled model or datasets not found";
    ui::AppController c;
    c.set_measurer(ui::measure_with_engine);
    ui::AppConfig cfg       = c.snapshot().config;  // the default draft: the bundled draft model
    cfg.spec.gamma[0]       = 4;
    cfg.spec.max_new_tokens = 24;
    cfg.spec.max_prompts    = 2;
    c.set_config(cfg);
    c.open_model(target);
    c.open_dataset((*ds / "code_completion.jsonl").string());
    ASSERT_TRUE(test::poll_until(c, [&] { return c.model() && c.snapshot().dataset; }));
    c.handle(ui::ActionRunMeasured{});  // no need to wait out the debounce
    ASSERT_TRUE(test::poll_until(
        c, [&] { return c.snapshot().measured_runs == 1 && !c.busy(); }, std::chrono::seconds(60)));
    const ui::MeasuredView& v = *c.snapshot().measured;
    EXPECT_TRUE(v.complete);
    EXPECT_EQ(c.snapshot().measured_config, cfg);
    ASSERT_EQ(v.prompts.size(), 2u);
    EXPECT_EQ(v.prompts[0].task, "code_completion");
    EXPECT_NE(v.source.find("code_completion.jsonl"), std::string::npos);
    EXPECT_EQ(v.n_generated, 48);
    EXPECT_EQ(v.tokens.size(), 48u);
    EXPECT_EQ(v.tokens.back().prompt, 1);
    std::string text;
    for (const auto& t : v.tokens) text += t.text;
    EXPECT_GT(text.size(), 48u) << "detokenized pieces (about 3 bytes per token)";
    EXPECT_EQ(v.stats.pos_reached.size(), 4u);
    EXPECT_GT(v.stats.speedup, 0);
    EXPECT_EQ(v.lossless_mismatches, 0);
    EXPECT_EQ(v.drafter, "bundled draft model");
    EXPECT_EQ(c.snapshot().modeled.alpha_source, "measured") << "the modeled panels take the measured alpha_i";
    for (const auto& m : c.snapshot().messages) EXPECT_EQ(m.level, ui::MessageLevel::info) << m.text;
}
