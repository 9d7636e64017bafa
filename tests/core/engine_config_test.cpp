// SpecConfig: strict JSON round-trip (default and randomized configs), validation messages naming the field, and
// the bundled example config.
#include "core/engine/spec_config.h"
#include "core/engine/tree_shapes.h"
#include "core/model/sampler.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace speculum::engine {
namespace {

SpecConfig valid() {
    SpecConfig c;
    c.levels.resize(1);
    c.prompt_ids = {1, 2, 3};
    return c;
}

SpecConfig round_trip(const SpecConfig& c) {
    const nlohmann::json j = c;
    return nlohmann::json::parse(j.dump()).get<SpecConfig>();
}

void expect_invalid(const SpecConfig& c, const std::string& field) {
    try {
        c.validate();
        ADD_FAILURE() << "accepted; expected an error naming " << field;
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
}

TEST(EngineConfig, RoundTripDefaultAndRandomized) {
    EXPECT_NO_THROW(valid().validate());
    EXPECT_EQ(round_trip(valid()), valid());
    model::Rng rng(17);
    auto pick = [&](int n) { return static_cast<int32_t>(rng.next_u64() % static_cast<uint64_t>(n)); };
    for (int i = 0; i < 50; ++i) {
        SpecConfig c    = valid();
        const int32_t n = 1 + pick(3);
        c.levels.assign(static_cast<size_t>(n), {});
        c.levels.back().kind = drafts::DraftKind::maxgram;
        c.gamma.clear();
        for (int32_t l = 0; l < n; ++l) c.gamma.push_back(1 + pick(8));
        c.verification           = pick(2) ? Verification::chain : Verification::tree;
        c.tree.kind              = static_cast<TreeKind>(pick(4));
        c.tree.branching         = {1 + pick(3), 1 + pick(3)};
        c.tree.node_budget       = 1 + pick(30);
        c.sampling.temperature   = pick(2) ? 0.0f : 0.5f + static_cast<float>(pick(10)) / 8.0f;
        c.sampling.seed          = rng.next_u64();
        c.p_min                  = static_cast<float>(pick(8)) / 10.0f;
        c.adaptive_gamma.enabled = pick(2) == 1;
        c.lenience.assign(static_cast<size_t>(n) + 1, 1.0f + static_cast<float>(pick(4)));
        c.lenience[0]     = 1.0f;
        c.max_new_tokens  = 1 + pick(200);
        c.prompt          = pick(2) ? "" : "text \"quoted\"";
        c.context.n_batch = 16 + pick(100);
        c.baseline        = pick(2) == 1;
        if (pick(3) == 0) c.k_matrix.assign(static_cast<size_t>(n) + 1, std::vector<int32_t>(size_t(n) + 1, 0));
        EXPECT_EQ(round_trip(c), c) << nlohmann::json(c).dump();
    }
}

TEST(EngineConfig, ValidationNamesTheField) {
    SpecConfig c = valid();
    c.levels.clear();
    expect_invalid(c, "spec.levels");
    c = valid(), c.gamma = {0};
    expect_invalid(c, "spec.gamma[0]");
    c = valid(), c.gamma = {2, 2};
    expect_invalid(c, "spec.gamma");
    c = valid(), c.lenience = {2.0f, 1.0f};
    expect_invalid(c, "spec.lenience[0]");
    c = valid(), c.levels.resize(2), c.gamma = {4, 4}, c.lenience = {1.0f, 0.5f, 1.0f};
    expect_invalid(c, "spec.lenience[1]");
    c = valid(), c.levels.resize(2), c.gamma = {4, 4}, c.levels[0].kind = drafts::DraftKind::maxgram;
    expect_invalid(c, "spec.levels[0]");
    c = valid(), c.levels.resize(2), c.gamma.clear(), c.k_matrix = {{0, 2, 3}, {1, 0, 3}, {0, 0, 0}};
    expect_invalid(c, "spec.k_matrix[1][0]");
    c = valid(), c.p_min = 1.5f;
    expect_invalid(c, "spec.p_min");
    c = valid(), c.sampling.top_p = 0.0f;
    expect_invalid(c, "spec.sampling");
    c = valid(), c.levels.resize(2), c.gamma = {4, 4}, c.sampling.temperature = 1.0f;
    EXPECT_NO_THROW(c.validate());  // a stochastic target over a (deterministic) cascade
    c = valid(), c.verification = Verification::tree, c.tree.branching = {0};
    expect_invalid(c, "spec.tree.branching");
    c = valid(), c.verification = Verification::tree, c.tree.kind = TreeKind::sequoia, c.tree.prior = {0.7, 0.6};
    expect_invalid(c, "spec.tree.prior");
    c = valid(), c.gamma = {64}, c.context.n_batch = 32;
    expect_invalid(c, "spec.context.n_batch");
    c = valid(), c.max_new_tokens = 0;
    expect_invalid(c, "spec.max_new_tokens");
}

TEST(EngineConfig, StrictJson) {
    auto parse_err = [](const std::string& text) {
        try {
            (void)nlohmann::json::parse(text).get<SpecConfig>();
        } catch (const std::invalid_argument& e) {
            return std::string(e.what());
        }
        return std::string("accepted");
    };
    EXPECT_NE(parse_err(R"({"gama": [4]})").find("spec.gama: is not a known key"), std::string::npos);
    EXPECT_NE(parse_err(R"({"tree": {"kind": "bush"}})").find("spec.tree.kind"), std::string::npos);
    EXPECT_NE(parse_err(R"({"verification": 3})").find("spec.verification"), std::string::npos);
    EXPECT_NE(parse_err(R"({"max_new_tokens": "many"})").find("spec.max_new_tokens"), std::string::npos);
    EXPECT_NE(parse_err(R"({"levels": [{"kind": "dragon"}]})").find("spec.levels[0]"), std::string::npos);
    EXPECT_NE(parse_err(R"({"sampling": {"temp": 1}})").find("spec.sampling"), std::string::npos);
    EXPECT_NE(parse_err(R"([1, 2])").find("spec"), std::string::npos);
}

TEST(EngineConfig, BundledExampleLoads) {
    const std::filesystem::path p = std::filesystem::path(SPECULUM_SOURCE_DIR) / "resources/configs/default.json";
    const SpecConfig c            = load_spec_config(p.string());
    EXPECT_EQ(c.levels.size(), 1u);
    EXPECT_TRUE(c.greedy());
}

TEST(EngineConfig, EveryBundledBenchmarkConfigIsValid) {
    const std::filesystem::path dir = std::filesystem::path(SPECULUM_SOURCE_DIR) / "resources/configs/bench";
    int n                           = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".json" || e.path().filename() == "synthetic_target.json") continue;
        EXPECT_NO_THROW(load_spec_config(e.path().string())) << e.path();
        ++n;
    }
    EXPECT_GE(n, 4);
}

TEST(EngineConfig, TreeShapes) {
    TreeConfig t;
    t.branching = {3, 2};
    EXPECT_EQ(shape_nodes(make_tree_shape(t, 0, {})), 3 + 6);
    t.kind                       = TreeKind::chain_second;
    const drafts::TreeShape cats = make_tree_shape(t, 3, {});
    EXPECT_EQ(cats.parent, (std::vector<int32_t>{-1, -1, 0, 0, 2, 2}));
    EXPECT_EQ(cats.rank, (std::vector<int32_t>{0, 1, 0, 1, 0, 1}));
    EXPECT_EQ(shape_depth(cats), 3);
    EXPECT_EQ(trim_shape(cats, 2).parent, (std::vector<int32_t>{-1, -1, 0, 0}));
    t.kind        = TreeKind::sequoia;
    t.node_budget = 10, t.max_depth = 6;
    // A confident top choice gives a deep, thin tree; a flat acceptance a wide, shallow one.
    const drafts::TreeShape deep = make_tree_shape(t, 0, {0.9, 0.05});
    const drafts::TreeShape wide = make_tree_shape(t, 0, {0.3, 0.25, 0.2, 0.15});
    EXPECT_EQ(shape_nodes(deep), 10);
    EXPECT_EQ(shape_nodes(wide), 10);
    EXPECT_GT(shape_depth(deep), shape_depth(wide));
}

}  // namespace
}  // namespace speculum::engine
