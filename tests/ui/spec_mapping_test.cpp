// AppConfig -> SpecConfig -> AppConfig round-trips for every configuration the editor can measure; `--set` takes
// SpecConfig JSON pointers, its short keys are aliases of them, and the design-space axes vary the same fields.
#include "ui/model/spec_mapping.h"
#include "ui/model/sweep.h"

#include <gtest/gtest.h>

#include <random>

using namespace speculum;

namespace {

// A configuration the engine can run: one draft recipe, a chain over a cascade or a tree over one level.
ui::AppConfig random_measurable(std::mt19937& rng) {
    auto uni  = [&](double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng); };
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    ui::AppConfig c;
    c.draft.kind = drafts::DraftKind(pick(0, 2));
    if (c.draft.kind == drafts::DraftKind::self) {
        c.draft.prune.ratio       = float(pick(0, 9)) / 10.0f;
        c.draft.prune.method      = drafts::PruneMethod(pick(0, 1));
        c.draft.weight_trunc_bits = pick(0, 7);
        c.draft.kv_trunc_bits     = pick(0, 7);
        c.draft.exit_layer        = pick(-1, 3);
    } else if (c.draft.kind == drafts::DraftKind::model) {
        c.draft.model_path = "draft" + std::to_string(pick(0, 9)) + ".gguf";
    }
    c.gamma       = pick(1, 16);
    c.p_min       = float(pick(0, 9)) / 10.0f;
    c.temperature = float(pick(0, 4)) / 4.0f;
    c.alpha       = uni(0.1, 0.9);
    c.cost_ratio  = uni(0, 1);
    if (pick(0, 1)) {
        c.tree.mode      = ui::TreeMode(pick(1, 3));
        c.tree.branching = {pick(1, 4), pick(1, 4)};
        c.tree.budget    = pick(2, 64);
        c.tree.max_depth = pick(1, 8);
    } else {
        for (int i = pick(0, 2); i > 0; --i)
            c.cascade.push_back({drafts::DraftKind(pick(0, 2)), uni(0.1, 0.9), uni(0, 1), pick(1, 16)});
        if (c.draft.kind != drafts::DraftKind::model)  // a model level under a non-model draft: the bundled model
            for (auto& l : c.cascade)
                if (l.drafter == drafts::DraftKind::model) l.drafter = drafts::DraftKind::maxgram;
    }
    c.measure_tokens  = pick(1, 256);
    c.measure_prompts = pick(1, 8);
    return c;
}

}  // namespace

TEST(SpecMapping, EveryMeasurableConfigRoundTripsThroughSpecConfig) {
    std::mt19937 rng(77);
    for (int i = 0; i < 300; ++i) {
        const ui::AppConfig c      = random_measurable(rng);
        const engine::SpecConfig s = ui::spec_config_of(c);
        ui::AppConfig back;  // the modeled assumptions come from here: start from c's own
        back.alpha      = c.alpha;
        back.cost_ratio = c.cost_ratio;
        back.cascade    = c.cascade;
        back.tree       = c.tree;
        back.cascade.clear();
        for (const auto& l : c.cascade) back.cascade.push_back({drafts::DraftKind::self, l.alpha, l.c, 1});
        std::vector<std::string> notes;
        ui::app_config_from_spec(s, back, notes);
        EXPECT_TRUE(notes.empty()) << notes.front();
        ASSERT_EQ(back, c) << nlohmann::json(c).dump() << "\n" << nlohmann::json(s).dump();
        // And the SpecConfig survives its own JSON (what a manifest or a sweep row stores).
        ASSERT_EQ(nlohmann::json(s).get<engine::SpecConfig>(), s);
    }
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
        if (std::string(k.key) != "drafter") by_key.draft.kind = by_pointer.draft.kind = drafts::DraftKind::self;
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
    EXPECT_NE(ui::set_config_value(c, "/adaptive_gamma/enabled", "true").find("editor cannot hold"), std::string::npos);
    EXPECT_EQ(c, ui::AppConfig{}) << "a refused --set changes nothing";
}

TEST(SpecMapping, DesignSpaceAxesVaryTheFieldsTheirPointersName) {
    ui::AppConfig base;
    base.draft.kind = drafts::DraftKind::self;
    for (ui::SweepAxis a : ui::kSweepAxes) {
        const char* pointer = ui::sweep_axis_pointer(a);
        if (!pointer) continue;
        for (double v : ui::sweep_axis_values(a)) {
            ui::AppConfig by_pointer = base;
            char text[32];
            std::snprintf(text, sizeof text, "%.17g", v);
            ASSERT_EQ(ui::set_config_value(by_pointer, pointer, text), "") << pointer << " = " << text;
            EXPECT_EQ(ui::apply_axis(base, a, v), by_pointer) << ui::sweep_axis_name(a) << " = " << v;
        }
    }
}
