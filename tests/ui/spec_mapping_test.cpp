// SpecConfig is the app's configuration: any SpecConfig loads into the editor whole and comes back unchanged (only
// the prompts stay with the opened dataset), through the persisted settings too; `--set` takes SpecConfig JSON
// pointers, its short keys are aliases of them, and the design-space axes vary the same fields.
#include "ui/model/spec_mapping.h"
#include "core/sweep/spec_predict_evaluator.h"
#include "ui/model/app_sweep.h"
#include "ui/model/modeled.h"

#include <gtest/gtest.h>

#include <random>

using namespace speculum;

namespace {

// A valid SpecConfig with what the old editor could not hold too: adaptive γ, lenience, a K-matrix, top-k and
// chain-with-second-choice trees, sampling beyond the temperature, other recipes for lower levels.
engine::SpecConfig random_spec(std::mt19937& rng) {
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    engine::SpecConfig s;
    drafts::DraftSpec l1;
    l1.kind = drafts::DraftKind(pick(0, 3));
    if (l1.kind == drafts::DraftKind::self) {
        l1.prune.ratio       = float(pick(0, 9)) / 10.0f;
        l1.prune.method      = drafts::PruneMethod(pick(0, 1));
        l1.weight_trunc_bits = pick(0, 7);
        l1.kv_trunc_bits     = pick(0, 7);
        l1.exit_layer        = pick(-1, 3);
    } else if (l1.kind == drafts::DraftKind::model) {
        l1.model_path = "draft" + std::to_string(pick(0, 9)) + ".gguf";
    } else if (l1.kind == drafts::DraftKind::ngram) {
        l1.ngram.method             = drafts::kNgramMethods[size_t(pick(0, int(drafts::kNgramMethods.size()) - 1))];
        l1.ngram.size_n             = pick(1, 16);
        l1.ngram.lookup_max         = pick(5, 8);
        l1.ngram.suffix_spec_factor = float(pick(1, 8)) / 2.0f;
    }
    s.levels = {l1};
    s.gamma  = {pick(1, 16)};
    if (l1.kind != drafts::DraftKind::maxgram && pick(0, 1)) {  // n-gram drafters take trees too
        s.verification     = engine::Verification::tree;
        s.tree.kind        = engine::TreeKind(pick(0, 3));
        s.tree.branching   = {pick(1, 4), pick(1, 4)};
        s.tree.top_k       = pick(1, 4);
        s.tree.depth       = pick(1, 5);
        s.tree.node_budget = pick(2, 64);
        s.tree.max_depth   = pick(1, 8);
    } else if (!drafts::is_statistical(l1.kind)) {
        for (int i = pick(0, 2); i > 0; --i) {
            drafts::DraftSpec d;
            d.kind = i == 1 && pick(0, 1) ? (pick(0, 1) ? drafts::DraftKind::maxgram : drafts::DraftKind::ngram)
                                          : drafts::DraftKind::self;
            if (d.kind == drafts::DraftKind::ngram) d.ngram.method = drafts::NgramMethod::prompt_lookup;
            d.exit_layer = d.kind == drafts::DraftKind::self ? pick(0, 2) : -1;
            s.levels.push_back(d);
            s.gamma.push_back(pick(1, 8));
        }
        if (s.levels.size() > 1 && pick(0, 1))
            s.lenience = std::vector<float>(s.levels.size(), 1.0f), s.lenience[1] = 0.5f;
    }
    s.adaptive_gamma.enabled = pick(0, 1) == 1;
    s.sampling.temperature   = float(pick(0, 4)) / 4.0f;
    s.sampling.top_k         = pick(0, 40);
    s.p_min                  = float(pick(0, 9)) / 10.0f;
    s.max_new_tokens         = pick(1, 256);
    s.max_prompts            = pick(1, 8);
    return s;
}

}  // namespace

TEST(SpecMapping, EverySpecConfigLoadsWholeAndRoundTrips) {
    std::mt19937 rng(77);
    int valid = 0;
    for (int i = 0; i < 300; ++i) {
        const engine::SpecConfig s = random_spec(rng);
        try {
            s.validate();
        } catch (const std::invalid_argument&) {
            continue;  // a combination the engine refuses (e.g. lenience with adaptive gamma)
        }
        ++valid;
        ui::AppConfig cfg;
        std::vector<std::string> notes;
        ui::app_config_from_spec(s, cfg, notes);
        EXPECT_TRUE(notes.empty()) << notes.front();
        ASSERT_EQ(cfg.spec, s) << nlohmann::json(s).dump();
        EXPECT_EQ(cfg.modeled.levels.size(), s.levels.size()) << "every level has its modeled assumptions";
        EXPECT_TRUE(cfg.problems().empty()) << cfg.problems().front();
        // Through the persisted settings, and through SpecConfig's own JSON (what a manifest or a sweep row stores).
        ASSERT_EQ(nlohmann::json(cfg).get<ui::AppConfig>(), cfg);
        ASSERT_EQ(nlohmann::json(s).get<engine::SpecConfig>(), s);
        // A measured run resolves paths and prompts and changes nothing else.
        engine::SpecConfig run = ui::spec_config_from_app(cfg, {"p.jsonl", "", {}});
        run.dataset.clear(), run.levels[0].prune.calibration = s.levels[0].prune.calibration;
        for (size_t l = 0; l < run.levels.size(); ++l) {
            if (s.levels[l].kind == drafts::DraftKind::model) {
                EXPECT_EQ(run.levels[l].model_path, s.levels[l].model_path);
            }
            run.levels[l] = s.levels[l];  // and a label naming the model
        }
        EXPECT_EQ(run, s);
    }
    EXPECT_GT(valid, 100);
}

TEST(SpecMapping, TheSpecsPromptsStayWithTheOpenedDataset) {
    engine::SpecConfig s = ui::AppConfig{}.spec;
    s.dataset            = "suite.jsonl";
    s.task               = "code";
    ui::AppConfig cfg;
    std::vector<std::string> notes;
    ui::app_config_from_spec(s, cfg, notes);
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_NE(notes[0].find("suite.jsonl"), std::string::npos);
    EXPECT_TRUE(cfg.spec.dataset.empty());
    EXPECT_EQ(cfg, ui::AppConfig{});
}

TEST(SpecMapping, SetTakesSpecConfigPointersAndShortKeysAreTheirAliases) {
    const struct {
        const char* key;
        const char* value;
    } cases[] = {{"gamma", "6"},
                 {"p_min", "0.25"},
                 {"temperature", "0.5"},
                 {"drafter", "self"},
                 {"draft_model", "x.gguf"},
                 {"prune", "0.3"},
                 {"prune_method", "wanda"},
                 {"trunc_bits", "4"},
                 {"kv_trunc_bits", "3"},
                 {"kv_drop", "0.2"},
                 {"exit_layer", "2"},
                 {"measure_tokens", "64"},
                 {"measure_prompts", "3"}};
    for (const auto& k : cases) {
        const char* pointer = ui::config_key_pointer(k.key);
        ASSERT_NE(pointer, nullptr) << k.key;
        ui::AppConfig by_key, by_pointer;
        if (std::string(k.key) != "drafter" && std::string(k.key) != "draft_model")
            by_key.draft().kind = by_pointer.draft().kind = drafts::DraftKind::self;
        ASSERT_EQ(ui::set_config_value(by_key, k.key, k.value), "") << k.key;
        ASSERT_EQ(ui::set_config_value(by_pointer, pointer, k.value), "") << pointer;
        EXPECT_EQ(by_key, by_pointer) << k.key << " = " << pointer;
        EXPECT_NE(by_key, ui::AppConfig{}) << k.key << " changed nothing";
    }
    EXPECT_EQ(ui::config_key_pointer("alpha"), nullptr) << "a modeled assumption, not a SpecConfig field";

    ui::AppConfig c;
    EXPECT_NE(ui::set_config_value(c, "/levels/0/no_such_field", "1").find("no such field"), std::string::npos);
    EXPECT_NE(ui::set_config_value(c, "/levels/0/prune/ratio", "\"half\"").find("/levels/0/prune/ratio"),
              std::string::npos);
    EXPECT_NE(ui::set_config_value(c, "/gamma/0", "0").find("/gamma/0"), std::string::npos) << "SpecConfig's range";
    EXPECT_EQ(c, ui::AppConfig{}) << "a refused --set changes nothing";
    EXPECT_EQ(ui::set_config_value(c, "/adaptive_gamma/enabled", "true"), "") << "the app holds every SpecConfig field";
    EXPECT_TRUE(c.spec.adaptive_gamma.enabled);
}

// Every value of every Design space axis is a valid value of the field its pointer names: a SpecConfig field (as
// `--set` sets it) or a modeled assumption the spec-predict evaluator accepts.
TEST(SpecMapping, DesignSpaceAxesVaryTheFieldsTheirPointersName) {
    ui::AppConfig base;
    base.draft().kind = drafts::DraftKind::self;
    set_tree_mode(base, ui::TreeMode::budget);
    sweep::SpecPredictEvaluator ev;
    for (const ui::AppSweepAxis& a : ui::app_sweep_axes()) {
        const std::string pointer = a.pointer;
        for (double v : a.values) {
            char text[32];
            std::snprintf(text, sizeof text, a.integer ? "%.0f" : "%.17g", v);
            if (pointer.rfind("/modeled/", 0) == 0) {
                sweep::SpecModeled m;
                m.figures                                = ui::modeled_figures(base, nullptr);
                nlohmann::json j                         = sweep::spec_predict_config(base.spec, m);
                j[nlohmann::json::json_pointer(pointer)] = v;
                EXPECT_NO_THROW(ev.validate(j)) << pointer << " = " << text;
                continue;
            }
            ui::AppConfig by_pointer = base;
            ASSERT_EQ(ui::set_config_value(by_pointer, pointer, text), "") << pointer << " = " << text;
            const nlohmann::json set = nlohmann::json(by_pointer.spec).at(nlohmann::json::json_pointer(pointer));
            EXPECT_NEAR(set.get<double>(), v, 1e-6) << pointer << " = " << text;
        }
    }
}
