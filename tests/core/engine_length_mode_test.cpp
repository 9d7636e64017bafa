// Cascade length semantics (SpecConfig::length_mode): truncate (a request for K tokens yields at most K) against
// CS Drafting's threshold mode (repeat calls until a cumulative length is reached; the last call may overshoot).
// The drafters' call patterns, the engine's draft lengths, losslessness in both modes, and the config.
#include "engine_fixtures.h"

#include <gtest/gtest.h>

namespace speculum::test {
namespace {

using engine::LengthMode;
using engine::SpecConfig;
using engine::SpecEngine;

// Proposes exactly what it is asked for (token = context length mod 96) and records each request.
class CountingLeaf : public drafts::Drafter {
public:
    std::vector<int32_t> requests;
    std::string name() const override { return "counting"; }
    int32_t n_vocab() const override { return 96; }
    void sync(std::span<const int32_t> committed) override { m_len = static_cast<int32_t>(committed.size()); }
    drafts::DraftChain propose(int32_t k, const drafts::ProposeParams&, const CancelToken&) override {
        requests.push_back(k);
        drafts::DraftChain c;
        for (int32_t i = 0; i < k; ++i) c.tokens.push_back((m_len + i) % 96);
        return c;
    }
    drafts::DraftTree propose_tree(const drafts::TreeShape&, const drafts::ProposeParams&,
                                   const CancelToken&) override {
        throw std::logic_error("no trees");
    }

private:
    int32_t m_len = 0;
};

TEST(LengthMode, LeafCallsInBlocksUntilTheThresholdAndContinuesAfterItsOwnTokens) {
    auto leaf = std::make_shared<CountingLeaf>();
    engine::LevelDrafter d(leaf, 1);
    d.set_threshold_block(4);
    const std::vector<int32_t> ctx{1, 2, 3};
    d.sync(ctx);
    const drafts::DraftChain c = d.propose(10, {}, CancelToken{});
    EXPECT_EQ(leaf->requests, (std::vector<int32_t>{4, 4, 4}));  // overshoots 10 by 2, as a 10-token MaG block does
    ASSERT_EQ(c.tokens.size(), 12u);
    for (int32_t i = 0; i < 12; ++i) EXPECT_EQ(c.tokens[size_t(i)], 3 + i) << "each call continues after the last";
    EXPECT_EQ(c.q.size(), 12u);
    // Block 0: one call for exactly what is asked.
    leaf->requests.clear();
    d.set_threshold_block(0);
    d.sync(ctx);
    EXPECT_EQ(d.propose(10, {}, CancelToken{}).tokens.size(), 10u);
    EXPECT_EQ(leaf->requests, (std::vector<int32_t>{10}));
}

TEST(LengthMode, HorizontalSegmentsUseCumulativeThresholdsAndKeepTheOvershoot) {
    auto a = std::make_shared<CountingLeaf>(), b = std::make_shared<CountingLeaf>();
    auto la = std::make_shared<engine::LevelDrafter>(a, 1), lb = std::make_shared<engine::LevelDrafter>(b, 2);
    engine::HorizontalDrafter h({la, lb}, {3, 2});
    const std::vector<int32_t> ctx{7};
    // Truncate: min(count, what is left) per segment.
    h.sync(ctx);
    EXPECT_EQ(h.propose(5, {}, CancelToken{}).tokens.size(), 5u);
    EXPECT_EQ(a->requests, (std::vector<int32_t>{3}));
    EXPECT_EQ(b->requests, (std::vector<int32_t>{2}));
    // Threshold: segment 1 must reach 3 and its block brings 4; segment 2 must reach 3 + 2 = 5, so it adds 1.
    a->requests.clear(), b->requests.clear();
    la->set_threshold_block(4);  // a Max-Gram-like block of 4
    h.set_threshold(true);
    h.sync(ctx);
    const drafts::DraftChain c = h.propose(5, {}, CancelToken{});
    EXPECT_EQ(a->requests, (std::vector<int32_t>{4}));
    EXPECT_EQ(b->requests, (std::vector<int32_t>{1}));
    EXPECT_EQ(c.tokens, (std::vector<int32_t>{1, 2, 3, 4, 5}));
}

// The engine end to end on the random-weight target of the lossless tests.
const std::vector<int32_t>& kPrompt = LosslessFixture::kPrompt;
constexpr int32_t kNew              = LosslessFixture::kNew;
LosslessFixture& fx() {
    return lossless_fixture();
}

SpecConfig config(LengthMode mode) {
    SpecConfig c     = lossless_config(3);
    c.levels[0].kind = drafts::DraftKind::maxgram;
    c.length_mode    = mode;
    c.maxgram_block  = 10;
    return c;
}

int32_t longest_reviewed_draft(const engine::RunResult& r) {
    return static_cast<int32_t>(r.stats.pos_reached.size());
}

TEST(LengthMode, MaxGramBlocksOvershootTheTargetsThresholdLosslessly) {
    // A level-1 "Max-Gram" that knows the continuation (an oracle, so that long drafts are accepted): in threshold
    // mode it is called for blocks of 10 and the target reviews up to 10 tokens against a threshold of 3.
    auto oracle = [] { return std::make_shared<OracleDrafter>(kPrompt, fx().ref, 96, std::vector<int32_t>{}); };
    const engine::RunResult t = SpecEngine(fx().target, config(LengthMode::truncate), oracle()).run(kPrompt);
    const engine::RunResult h = SpecEngine(fx().target, config(LengthMode::threshold), oracle()).run(kPrompt);
    EXPECT_EQ(t.tokens, fx().ref);
    EXPECT_EQ(h.tokens, fx().ref);
    EXPECT_GT(h.stats.n_accepted, 0);
    EXPECT_LE(longest_reviewed_draft(t), 3);
    EXPECT_EQ(longest_reviewed_draft(h), 10) << "a 10-token block must overshoot a threshold of 3";
    EXPECT_LT(h.stats.n_steps, t.stats.n_steps) << "longer accepted drafts, fewer target passes";
    EXPECT_LE(longest_reviewed_draft(h), config(LengthMode::threshold).max_draft_length(0));
}

TEST(LengthMode, ThresholdCascadesAreLossless) {
    const model::Model& tg = fx().target;
    model::ForwardOptions exit2;
    exit2.exit_layer = 2;
    // Vertical: exit@2 reviewing Max-Gram.
    SpecConfig c = config(LengthMode::threshold);
    c.levels.assign(2, drafts::DraftSpec{});
    c.levels[1].kind = drafts::DraftKind::maxgram;
    c.gamma          = {4, 3};
    std::vector<engine::LevelMaterial> m(2);
    m[0] = {std::make_shared<ContextDrafter>(tg, exit2), &tg, exit2, "exit@2", {}};
    m[1] = {std::make_shared<ContextMaxGram>(96), nullptr, {}, "max-gram", {}};
    ASSERT_NO_THROW(c.validate());
    engine::RunResult r = SpecEngine(tg, c, engine::build_draft_stack(c, m)).run(kPrompt);
    EXPECT_EQ(r.tokens, fx().ref);
    EXPECT_GT(r.stats.n_accepted, 0);
    EXPECT_GT(r.stats.levels.at(1).n_review_accepted, 0);
    EXPECT_LE(longest_reviewed_draft(r), c.max_draft_length(0));
    // Horizontal + vertical: the target's draft is 2 positions from level 1 then 3 from Max-Gram.
    c.gamma.clear();
    c.k_matrix = {{0, 2, 3}, {0, 0, 3}, {0, 0, 0}};
    ASSERT_NO_THROW(c.validate());
    r = SpecEngine(tg, c, engine::build_draft_stack(c, m)).run(kPrompt);
    EXPECT_EQ(r.tokens, fx().ref);
    EXPECT_GT(r.stats.n_accepted, 0);
}

TEST(LengthMode, ConfigRoundTripValidationAndLongestDraft) {
    SpecConfig c    = config(LengthMode::threshold);
    c.maxgram_block = 7;
    EXPECT_EQ(nlohmann::json(c).get<SpecConfig>(), c);
    EXPECT_EQ(nlohmann::json(c)["length_mode"], "threshold");
    EXPECT_EQ(nlohmann::json::object().get<SpecConfig>().length_mode, LengthMode::truncate);
    EXPECT_THROW((nlohmann::json{{"length_mode", "overshoot"}}.get<SpecConfig>()), std::invalid_argument);
    // Max-Gram alone at threshold 3 with blocks of 7: a call may bring fewer than its block, so the last one starts
    // at most at 2 tokens and ends at most at 2 + 7.
    EXPECT_EQ(c.max_draft_length(0), 9);
    EXPECT_EQ(config(LengthMode::truncate).max_draft_length(0), 3);
    // A reviewer (level 1: threshold 3 over those Max-Gram blocks, at most 9) at threshold 4: a step adds at most
    // 9 + 1 tokens, the last one starting at 3 at most: 13.
    c.levels.assign(2, drafts::DraftSpec{});
    c.levels[1].kind = drafts::DraftKind::maxgram;
    c.gamma          = {4, 3};
    EXPECT_EQ(c.max_draft_length(1), 9);
    EXPECT_EQ(c.max_draft_length(0), 13);
    SpecConfig bad    = config(LengthMode::threshold);
    bad.maxgram_block = 0;
    EXPECT_THROW(bad.validate(), std::invalid_argument);
    bad                = config(LengthMode::threshold);
    bad.levels[0].kind = drafts::DraftKind::self;
    bad.verification   = engine::Verification::tree;
    try {
        bad.validate();
        FAIL() << "threshold lengths with a tree must be refused";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("length_mode"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace speculum::test
