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
    c.draft.kind              = drafts::DraftKind(pick(0, 2));
    c.draft.prune.ratio       = float(uni(0, 0.9));
    c.draft.prune.method      = drafts::PruneMethod(pick(0, 1));
    c.draft.weight_trunc_bits = pick(0, 7);
    c.draft.kv_trunc_bits     = pick(0, 7);
    c.draft.kv_drop_ratio     = float(uni(0, 0.9));
    c.draft.exit_layer        = pick(-1, 7);
    c.draft.skip_attn         = {pick(0, 3)};
    c.draft.model_path        = "draft " + std::to_string(pick(0, 99)) + ".gguf";
    c.gamma                   = pick(1, 32);
    c.p_min                   = float(uni(0, 1));
    c.temperature             = float(uni(0, 2));
    c.alpha                   = uni(0.01, 0.99);
    c.cost_ratio              = uni(0, 1);
    c.tree.mode               = ui::TreeMode(pick(0, 3));
    c.tree.branching          = {pick(1, 4), pick(1, 4)};
    c.tree.budget             = pick(1, 256);
    c.tree.max_depth          = pick(1, 32);
    c.tree.rank_acceptance    = {uni(0, 0.5), uni(0, 0.3)};
    for (int i = pick(0, 3); i > 0; --i)
        c.cascade.push_back({drafts::DraftKind(pick(0, 2)), uni(0.1, 0.9), uni(0, 1), pick(1, 16)});
    for (int i = pick(0, 3); i > 0; --i) c.horizontal.push_back({uni(0.1, 0.9), uni(0, 1), pick(1, 8)});
    c.hardware_profile = pick(0, 1) ? "rtx4090" : "";
    c.context          = pick(1, 32768);
    c.measure_tokens   = pick(1, 1024);
    c.measure_prompts  = pick(1, 64);
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
    ui::AppConfig c = nlohmann::json::parse(R"({"gamma": 7, "tree": {"budget": 20}})").get<ui::AppConfig>();
    ui::AppConfig expected;
    expected.gamma       = 7;
    expected.tree.budget = 20;
    EXPECT_EQ(c, expected);
    EXPECT_EQ(error_of(R"({"gama": 7})"), "ui.gama: is not a known key");
    EXPECT_EQ(error_of(R"({"gamma": "7"})"), "ui.gamma: expected an integer, got \"7\"");
    EXPECT_EQ(error_of(R"({"gamma": 7.5})"), "ui.gamma: expected an integer, got 7.5");
    EXPECT_EQ(error_of(R"({"tree": {"mode": "forest"}})"),
              "ui.tree.mode: expected \"chain\", \"branching\", \"budget\" or \"optimal\", got \"forest\"");
    EXPECT_EQ(error_of(R"({"cascade": [{"drafter": "maxgram", "stepz": 3}]})"),
              "ui.cascade[0].stepz: is not a known key");
    EXPECT_EQ(error_of(R"({"horizontal": [{"count": true}]})"),
              "ui.horizontal[0].count: expected an integer, got true");
    EXPECT_NE(error_of(R"({"draft": {"prune": {"ratio": "x"}}})").find("ui.draft: "), std::string::npos);
    EXPECT_EQ(error_of(R"([1, 2])"), "ui: expected a JSON object, got array");
}

TEST(AppConfigValidate, ListsEveryProblem) {
    ui::AppConfig c;
    c.gamma          = 0;
    c.measure_tokens = 0;
    try {
        c.validate();
        FAIL() << "expected std::invalid_argument";
    } catch (const std::invalid_argument& e) {
        EXPECT_STREQ(e.what(),
                     "ui config: gamma must be in [1, 32], got 0; measure_tokens must be in [1, 1024], got 0");
    }
}

TEST(AppConfigSet, MeasureKeys) {
    ui::AppConfig c;
    EXPECT_EQ(ui::set_config_value(c, "measure_tokens", "32"), "");
    EXPECT_EQ(ui::set_config_value(c, "measure_prompts", "3"), "");
    EXPECT_EQ(c.measure_tokens, 32);
    EXPECT_EQ(c.measure_prompts, 3);
    EXPECT_EQ(ui::set_config_value(c, "measure_tokens", "many"), "measure_tokens: expected an integer, got 'many'");
}
