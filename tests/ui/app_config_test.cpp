// AppConfig (the persisted UI settings): JSON round-trip for the defaults and randomized configs, errors naming the
// key for unknown keys and wrong types, missing keys keep defaults, validate() lists every problem, --set keys.
#include "ui/model/app_config.h"

#include <gtest/gtest.h>

#include <random>

using namespace speculum;

namespace {

ui::AppConfig round_trip(const ui::AppConfig& c) {
    nlohmann::json j = c;
    return nlohmann::json::parse(j.dump()).get<ui::AppConfig>();
}

std::string error_of(const std::string& text) {
    try {
        (void)nlohmann::json::parse(text).get<ui::AppConfig>();
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

ui::AppConfig random_config(std::mt19937& rng) {
    auto uni  = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    ui::AppConfig c;
    c.draft().kind              = drafts::DraftKind(pick(0, 2));
    c.draft().prune.ratio       = float(uni(0, 0.9));
    c.draft().prune.method      = drafts::PruneMethod(pick(0, 1));
    c.draft().weight_trunc_bits = pick(0, 7);
    c.draft().kv_trunc_bits     = pick(0, 7);
    c.draft().kv_drop_ratio     = float(uni(0, 0.9));
    c.draft().exit_layer        = pick(-1, 7);
    c.draft().skip_attn         = {pick(0, 3)};
    c.draft().model_path        = "draft " + std::to_string(pick(0, 99)) + ".gguf";
    c.spec.gamma[0]             = pick(1, 32);
    c.spec.p_min                = float(uni(0, 1));
    c.spec.sampling.temperature = float(uni(0, 2));
    c.level1().alpha            = uni(0.01, 0.99);
    c.level1().c                = uni(0, 1);
    ui::set_tree_mode(c, ui::TreeMode(pick(0, 5)));
    c.spec.tree.branching         = {pick(1, 4), pick(1, 4)};
    c.spec.tree.node_budget       = pick(1, 255);
    c.spec.tree.max_depth         = pick(1, 32);
    c.spec.tree.prior             = {uni(0, 0.5), uni(0, 0.3)};
    c.spec.adaptive_gamma.enabled = pick(0, 1) == 1;
    for (int i = pick(0, 3); i > 0; --i) {
        drafts::DraftSpec d;
        d.kind = drafts::DraftKind(pick(0, 2));
        c.spec.levels.push_back(d);
        c.spec.gamma.push_back(pick(1, 16));
        c.modeled.levels.push_back({uni(0.1, 0.9), uni(0, 1)});
    }
    for (int i = pick(0, 3); i > 0; --i) c.modeled.horizontal.push_back({uni(0.1, 0.9), uni(0, 1), pick(1, 8)});
    c.modeled.hardware_profile = pick(0, 1) ? "rtx4090" : "";
    c.modeled.context          = pick(1, 32768);
    c.spec.max_new_tokens      = pick(1, 1024);
    c.spec.max_prompts         = pick(1, 64);
    return c;
}

}  // namespace

TEST(AppConfigJson, DefaultRoundTrips) {
    const ui::AppConfig defaults;
    EXPECT_EQ(round_trip(defaults), defaults);
    EXPECT_NO_THROW(defaults.validate());
}

TEST(AppConfigJson, RandomConfigsRoundTrip) {
    std::mt19937 rng(1234);
    for (int i = 0; i < 200; ++i) {
        ui::AppConfig c = random_config(rng);
        ASSERT_EQ(round_trip(c), c) << nlohmann::json(c).dump();
    }
}

TEST(AppConfigJson, MissingKeysKeepDefaultsUnknownKeysAndWrongTypesNameTheKey) {
    ui::AppConfig c =
        nlohmann::json::parse(R"({"spec": {"gamma": [7]}, "modeled": {"context": 99}})").get<ui::AppConfig>();
    ui::AppConfig expected;  // "spec" is SpecConfig's own strict JSON: its missing keys are SpecConfig's defaults
    expected.modeled.context = 99;
    EXPECT_EQ(c.modeled, expected.modeled);
    EXPECT_EQ(c.spec.gamma, (std::vector<int32_t>{7}));
    EXPECT_EQ(c.spec.levels, std::vector<drafts::DraftSpec>{ui::default_draft()}) << "level 1 is always there";
    EXPECT_EQ(error_of(R"({"spec": {}, "gama": 7})"), "ui.gama: is not a known key");
    EXPECT_EQ(error_of(R"({"modeled": {"context": "7"}})"), "ui.modeled.context: expected an integer, got string");
    EXPECT_EQ(error_of(R"({"modeled": {"levels": [{"alpha": 0.5, "cc": 1}]}})"),
              "ui.modeled.levels[0].cc: is not a known key");
    EXPECT_EQ(error_of(R"({"modeled": {"horizontal": [{"count": true}]}})"),
              "ui.modeled.horizontal[0].count: expected an integer, got boolean");
    EXPECT_EQ(error_of(R"({"preferences": {"tree_prior": "guessed"}})"),
              "ui.preferences.tree_prior: \"guessed\" is not one of \"assumed\", \"measured\"");
    EXPECT_NE(error_of(R"({"spec": {"levels": [{"prune": {"ratio": "x"}}]}})").find("ui.spec: "), std::string::npos);
    EXPECT_EQ(error_of(R"([1, 2])"), "ui: expected a JSON object, got array");
}

// Settings written before SpecConfig was the app's state: every key of that flat layout still loads, into the
// SpecConfig field or the modeled assumption it was.
TEST(AppConfigJson, TheFlatLayoutOfEarlierVersionsStillLoads) {
    const char* old_settings = R"({
        "draft": {"kind": "self", "prune": {"ratio": 0.3}, "weight_trunc_bits": 4},
        "gamma": 5, "p_min": 0.25, "temperature": 0.5, "alpha": 0.7, "cost_ratio": 0.2,
        "tree": {"mode": "optimal", "branching": [2, 1], "budget": 20, "max_depth": 5, "rank_acceptance": [0.5, 0.2]},
        "cascade": [{"drafter": "self", "alpha": 0.6, "c": 0.1, "steps": 3},
                    {"drafter": "maxgram", "alpha": 0.4, "c": 0.0, "steps": 8}],
        "horizontal": [{"alpha": 0.6, "c": 0.02, "count": 2}],
        "hardware_profile": "rtx4090", "context": 1024, "measure_tokens": 32, "measure_prompts": 3})";
    const ui::AppConfig c    = nlohmann::json::parse(old_settings).get<ui::AppConfig>();
    EXPECT_EQ(c.draft().kind, drafts::DraftKind::self);
    EXPECT_FLOAT_EQ(c.draft().prune.ratio, 0.3f);
    EXPECT_EQ(c.draft().weight_trunc_bits, 4);
    EXPECT_EQ(c.spec.gamma, (std::vector<int32_t>{5, 3, 8}));
    EXPECT_FLOAT_EQ(c.spec.p_min, 0.25f);
    EXPECT_FLOAT_EQ(c.spec.sampling.temperature, 0.5f);
    EXPECT_EQ(c.modeled.levels, (std::vector<ui::LevelAssumption>{{0.7, 0.2}, {0.6, 0.1}, {0.4, 0.0}}));
    EXPECT_EQ(ui::tree_mode(c), ui::TreeMode::optimal_measured);
    EXPECT_EQ(c.spec.tree.node_budget, 19) << "the flat layout's budget counted the root";
    EXPECT_EQ(c.spec.tree.max_depth, 5);
    EXPECT_EQ(c.spec.tree.branching, (std::vector<int32_t>{2, 1}));
    EXPECT_EQ(c.spec.tree.prior, (std::vector<double>{0.5, 0.2}));
    ASSERT_EQ(c.spec.levels.size(), 3u);
    EXPECT_EQ(c.spec.levels[1].kind, drafts::DraftKind::self);
    EXPECT_EQ(c.spec.levels[1].exit_layer, 0) << "the editor's self level was the target's first layer";
    EXPECT_EQ(c.spec.levels[2].kind, drafts::DraftKind::maxgram);
    EXPECT_EQ(c.modeled.horizontal.size(), 1u);
    EXPECT_EQ(c.modeled.hardware_profile, "rtx4090");
    EXPECT_EQ(c.modeled.context, 1024);
    EXPECT_EQ(c.spec.max_new_tokens, 32);
    EXPECT_EQ(c.spec.max_prompts, 3);
    EXPECT_EQ(round_trip(c), c) << "and it is saved in the current layout";
    EXPECT_EQ(error_of(R"({"tree": {"mode": "forest"}})"),
              "ui.tree.mode: \"forest\" is not one of \"chain\", \"branching\", \"budget\", \"optimal\"");
    EXPECT_EQ(error_of(R"({"cascade": [{"drafter": "maxgram", "stepz": 3}]})"),
              "ui.cascade[0].stepz: is not a known key");
}

TEST(AppConfigValidate, ListsEveryProblem) {
    ui::AppConfig c;
    c.spec.gamma[0]                  = 0;
    c.spec.max_new_tokens            = 0;
    c.level1().alpha                 = 1.5;
    const std::vector<std::string> p = c.problems();
    ASSERT_EQ(p.size(), 3u);
    EXPECT_NE(p[0].find("gamma[0]"), std::string::npos) << p[0];
    EXPECT_EQ(p[1], "modeled/levels/0/alpha must be in (0, 1), got 1.5");
    EXPECT_EQ(p[2], "/max_new_tokens must be in [1, 1024] in the app, got 0");
    EXPECT_THROW(c.validate(), std::invalid_argument);
}

TEST(AppConfigSet, MeasureKeys) {
    ui::AppConfig c;
    EXPECT_EQ(ui::set_config_value(c, "measure_tokens", "32"), "");
    EXPECT_EQ(ui::set_config_value(c, "measure_prompts", "3"), "");
    EXPECT_EQ(c.spec.max_new_tokens, 32);
    EXPECT_EQ(c.spec.max_prompts, 3);
    EXPECT_EQ(ui::set_config_value(c, "measure_tokens", "many").rfind("measure_tokens: /max_new_tokens: ", 0), 0u);
    EXPECT_EQ(c.spec.max_new_tokens, 32) << "a refused value changes nothing";
}

TEST(AppConfigSet, ModeledKeysAndTreeShapes) {
    ui::AppConfig c;
    EXPECT_EQ(ui::set_config_value(c, "alpha", "0.6"), "");
    EXPECT_EQ(ui::set_config_value(c, "c", "0.1"), "");
    EXPECT_EQ(c.level1(), (ui::LevelAssumption{0.6, 0.1}));
    EXPECT_EQ(ui::set_config_value(c, "cascade", "2"), "");
    EXPECT_EQ(c.spec.levels.size(), 3u);
    EXPECT_EQ(c.modeled.levels.size(), 3u);
    EXPECT_EQ(ui::set_config_value(c, "cascade", "0"), "");
    for (const char* t : {"chain", "branching", "top_k", "budget", "optimal", "chain_second"}) {
        EXPECT_EQ(ui::set_config_value(c, "tree", t), "") << t;
        EXPECT_TRUE(c.problems().empty()) << t << ": " << c.problems().front();
    }
    EXPECT_EQ(ui::set_config_value(c, "budget", "12"), "");
    EXPECT_EQ(c.spec.tree.node_budget, 11);
    EXPECT_NE(ui::set_config_value(c, "tree", "forest"), "");
}

// A level's kind gives its starting assumption: statistical drafters cost nothing, heads about an eighth of the
// target, models the default.
TEST(AppConfig, EachDraftKindStartsFromItsOwnAssumedCost) {
    using speculum::drafts::DraftKind;
    EXPECT_EQ(speculum::ui::default_assumption(DraftKind::ngram).c, 0.0);
    EXPECT_EQ(speculum::ui::default_assumption(DraftKind::maxgram).c, 0.0);
    EXPECT_DOUBLE_EQ(speculum::ui::default_assumption(DraftKind::eagle3).c, 0.12);
    EXPECT_DOUBLE_EQ(speculum::ui::default_assumption(DraftKind::mtp).c, 0.12);
    EXPECT_EQ(speculum::ui::default_assumption(DraftKind::model), speculum::ui::LevelAssumption{});
    speculum::ui::AppConfig c;
    c.spec.levels.push_back(c.spec.levels.front());
    c.spec.levels.back().kind = DraftKind::ngram;
    c.spec.gamma.push_back(2);
    speculum::ui::normalize(c);
    ASSERT_EQ(c.modeled.levels.size(), 2u);
    EXPECT_EQ(c.modeled.levels[1].c, 0.0) << "a new statistical level assumes no cost";
}

// Long work says how long the rest takes at the pace so far, and nothing before there is a pace to go on.
TEST(AppConfig, TimeLeftIsTheRestAtThePaceSoFar) {
    EXPECT_EQ(ui::time_left_text(0.25, 60), "about 3 min left");
    EXPECT_EQ(ui::time_left_text(0.5, 20), "about 20 s left");
    EXPECT_EQ(ui::time_left_text(0.01, 60), "") << "under 2 % done";
    EXPECT_EQ(ui::time_left_text(0.5, 1), "") << "under 2 s";
    EXPECT_EQ(ui::time_left_text(1.0, 60), "") << "done";
    EXPECT_EQ(ui::time_left_text(0.1, 3600), "about 9.0 h left");
}
