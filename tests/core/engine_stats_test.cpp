// The engine's statistics are exact counts: an oracle drafter with errors injected at chosen draft positions gives
// known α_i, accepted-length histograms, acceptance by rank and token provenance. Also cancellation, progress,
// the baseline/speedup fields, per-level figures of a cascade and the JSON report.
#include "core/drafts/make_drafter.h"
#include "engine_fixtures.h"

#include <gtest/gtest.h>

namespace speculum::test {
namespace {

using engine::SpecConfig;
using engine::SpecEngine;
using engine::TokenEvent;
using engine::TokenKind;

const std::vector<int32_t> kPrompt{7, 1, 33, 9, 2, 71};
constexpr int32_t kNew = 40;

const model::Model& target() {
    static model::Model m = model::make_synthetic_model(engine_target_spec(2, 5));
    return m;
}
const std::vector<int32_t>& ref() {
    static std::vector<int32_t> r = greedy_reference(target(), kPrompt, kNew + 16);
    return r;
}

SpecConfig cfg(int32_t gamma) {
    SpecConfig c;
    c.levels.resize(1);
    c.gamma          = {gamma};
    c.max_new_tokens = kNew;
    c.context        = exact_ctx();
    c.baseline       = false;
    return c;
}

std::shared_ptr<OracleDrafter> oracle(std::vector<int32_t> wrong) {
    return std::make_shared<OracleDrafter>(kPrompt, ref(), 96, std::move(wrong));
}

TEST(EngineStats, OracleWithErrorAtPosition2GivesExactAlpha) {
    SpecEngine eng(target(), cfg(4), oracle({2}));
    std::vector<TokenEvent> ev;
    engine::FunctionSink sink([&](const TokenEvent& e) { ev.push_back(e); });
    const engine::RunResult r = eng.run(kPrompt, {}, {}, &sink);
    ASSERT_EQ(r.tokens, std::vector<int32_t>(ref().begin(), ref().begin() + kNew));
    // 13 steps commit 2 accepted + 1 correction (the 13th drafts only 3: 4 tokens are left); the 14th has room
    // for one token only (no draft).
    const engine::RunStats& s = r.stats;
    EXPECT_EQ(s.n_steps, 14);
    EXPECT_EQ(s.n_drafted, 12 * 4 + 3);
    EXPECT_EQ(s.n_accepted, 13 * 2);
    EXPECT_EQ(s.pos_reached, (std::vector<int64_t>{13, 13, 13}));
    EXPECT_EQ(s.pos_accepted, (std::vector<int64_t>{13, 13, 0}));
    EXPECT_EQ(s.alpha(), (std::vector<double>{1.0, 1.0, 0.0}));
    EXPECT_EQ(s.accepted_len_hist, (std::vector<int64_t>{1, 0, 13}));
    EXPECT_DOUBLE_EQ(s.mean_accepted_length(), 40.0 / 14.0);
    ASSERT_EQ(ev.size(), 40u);
    for (int32_t i = 0; i < 39; ++i) {
        const TokenEvent& e = ev[static_cast<size_t>(i)];
        EXPECT_EQ(e.position, i);
        EXPECT_EQ(e.step, i / 3);
        EXPECT_EQ(e.token, r.tokens[static_cast<size_t>(i)]);
        EXPECT_EQ(e.kind, i % 3 == 2 ? TokenKind::corrected : TokenKind::accepted) << i;
        EXPECT_EQ(e.level, i % 3 == 2 ? 0 : 1) << i;
    }
    EXPECT_EQ(ev.back().kind, TokenKind::bonus);
    ASSERT_GE(s.levels.size(), 2u);
    EXPECT_EQ(s.levels[0].n_calls, 14);
    EXPECT_EQ(s.levels[0].n_reviewed, 51);
    EXPECT_EQ(s.levels[1].n_calls, 13);
    EXPECT_GT(s.levels[0].bytes_weights, 0u);
    EXPECT_GT(s.bytes_per_token, 0.0);
}

TEST(EngineStats, PerfectOracleAcceptsEverythingWithBonus) {
    SpecEngine eng(target(), cfg(4), oracle({}));
    const engine::RunResult r = eng.run(kPrompt);
    EXPECT_EQ(r.stats.n_steps, 8);
    EXPECT_EQ(r.stats.alpha(), (std::vector<double>{1, 1, 1, 1}));
    EXPECT_EQ(r.stats.accepted_len_hist, (std::vector<int64_t>{0, 0, 0, 0, 8}));
    EXPECT_DOUBLE_EQ(r.stats.mean_accepted_length(), 5.0);
}

TEST(EngineStats, CatsTreeCountsAcceptanceByRank) {
    // Chain token wrong at depth 2: the rank-1 correction leaf there is accepted, then the target adds a bonus.
    SpecConfig c   = cfg(3);
    c.verification = engine::Verification::tree;
    c.tree.kind    = engine::TreeKind::chain_second;
    SpecEngine eng(target(), c, oracle({1}));
    const engine::RunResult r = eng.run(kPrompt);
    ASSERT_EQ(r.tokens, std::vector<int32_t>(ref().begin(), ref().begin() + kNew));
    const engine::RankCounts& rc = r.stats.rank_counts;
    EXPECT_EQ(r.stats.n_steps, 14);
    ASSERT_GE(rc.accepted.size(), 2u);
    EXPECT_EQ(rc.offered[0], (std::vector<int64_t>{13, 13}));
    EXPECT_EQ(rc.accepted[0], (std::vector<int64_t>{13, 0}));
    EXPECT_EQ(rc.accepted[1], (std::vector<int64_t>{0, 13}));
    const std::vector<double> p = engine::acceptance_by_rank(rc, {0.5, 0.5}, 0.0);
    EXPECT_DOUBLE_EQ(p[0], 0.5);  // pooled over depths 0 and 1: rank 0 accepted 13 of 26 offers
    EXPECT_DOUBLE_EQ(p[1], 0.5);
    // Stored and read back (a session's run history), the rank counts included.
    EXPECT_EQ(engine::run_figures_from_json(nlohmann::json(r.stats)).rank_counts, rc);
}

TEST(EngineStats, CancelFromTheSinkReturnsPartialStats) {
    CancelToken cancel;
    int32_t seen = 0;
    engine::FunctionSink sink([&](const TokenEvent&) {
        if (++seen == 10) cancel.cancel();
    });
    std::vector<double> fractions;
    SpecConfig c = cfg(4);
    c.baseline   = true;
    SpecEngine eng(target(), c, oracle({2}));
    const engine::RunResult r = eng.run(
        kPrompt, cancel, [&](double f, const std::string&) { fractions.push_back(f); }, &sink);
    EXPECT_TRUE(r.cancelled);
    EXPECT_GE(r.tokens.size(), 10u);
    EXPECT_LT(r.tokens.size(), static_cast<size_t>(kNew));
    EXPECT_EQ(r.stats.n_generated, static_cast<int32_t>(r.tokens.size()));
    EXPECT_TRUE(r.baseline_tokens.empty());  // no baseline after a cancel
    ASSERT_FALSE(fractions.empty());
    EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end()));

    CancelToken early;
    early.cancel();
    const engine::RunResult none = eng.run(kPrompt, early);
    EXPECT_TRUE(none.cancelled);
    EXPECT_TRUE(none.tokens.empty());
}

TEST(EngineStats, BaselineSpeedupAndLosslessCheck) {
    SpecConfig c = cfg(4);
    c.baseline   = true;
    SpecEngine eng(target(), c, oracle({3}));
    const engine::RunResult r = eng.run(kPrompt);
    EXPECT_EQ(r.baseline_tokens, r.tokens);
    EXPECT_TRUE(r.stats.lossless_checked);
    EXPECT_EQ(r.stats.lossless_mismatch, -1);
    EXPECT_GT(r.stats.baseline_tokens_per_s, 0.0);
    EXPECT_NEAR(r.stats.speedup, r.stats.tokens_per_s / r.stats.baseline_tokens_per_s, 1e-9);
    const nlohmann::json j = r;
    EXPECT_EQ(j.at("stats").at("alpha").size(), 4u);
    EXPECT_EQ(j.at("stats").at("levels").size(), 2u);
    EXPECT_EQ(j.at("tokens").size(), static_cast<size_t>(kNew));
}

// A two-level cascade: the target exiting after layer 0 reviews `leaf` with lenience 2; γ = 4, 3.
SpecEngine exit0_over(std::shared_ptr<drafts::Drafter> leaf, const std::string& leaf_name) {
    const model::Model& t = target();
    SpecConfig c          = cfg(4);
    c.levels.resize(2);
    c.gamma    = {4, 3};
    c.lenience = {1.0f, 2.0f, 1.0f};
    model::ForwardOptions exit0;
    exit0.exit_layer = 0;
    std::vector<engine::LevelMaterial> m(2);
    m[0] = {nullptr, &t, exit0, "exit@0", {}};
    m[1] = {std::move(leaf), nullptr, {}, leaf_name, {}};
    return SpecEngine(t, c, engine::build_draft_stack(c, m));
}

TEST(EngineStats, CascadeReportsEveryLevel) {
    SpecEngine eng = exit0_over(std::make_shared<ContextMaxGram>(96), "max-gram");
    std::vector<int32_t> levels_seen(3, 0);
    engine::FunctionSink sink([&](const TokenEvent& e) { ++levels_seen.at(static_cast<size_t>(e.level)); });
    const engine::RunResult r = eng.run(kPrompt, {}, {}, &sink);
    ASSERT_EQ(r.stats.levels.size(), 3u);
    EXPECT_EQ(r.stats.levels[1].name, "exit@0");
    EXPECT_GT(r.stats.levels[1].n_forward, 0);
    EXPECT_GT(r.stats.levels[1].n_reviewed, 0);
    EXPECT_GT(r.stats.levels[1].cost_ratio, 0.0);
    EXPECT_GT(r.stats.levels[2].n_calls, 0);
    EXPECT_EQ(r.stats.levels[2].n_forward, 0);
    EXPECT_GT(levels_seen[0], 0);
    EXPECT_EQ(levels_seen[0] + levels_seen[1] + levels_seen[2], kNew);
    EXPECT_EQ(r.tokens, std::vector<int32_t>(ref().begin(), ref().begin() + kNew));
    // Every level's figures survive storing and reading back (the app's restored run history reads them), and a
    // malformed level is refused with its path.
    EXPECT_EQ(engine::run_figures_from_json(nlohmann::json(r.stats)), r.stats);
    nlohmann::json bad             = r.stats;
    bad["levels"][1]["cost_ratio"] = "cheap";
    try {
        (void)engine::run_figures_from_json(bad);
        ADD_FAILURE() << "a string cost ratio was read";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("stats.levels[1].cost_ratio"), std::string::npos) << e.what();
    }
}

// A leaf that drafts arbitrary tokens greedily, as a neural leaf does: q = 1 (a one-hot draft) and its real softmax
// probability in `confidence`.
class ArbitraryLeaf : public drafts::Drafter {
public:
    explicit ArbitraryLeaf(float confidence) : m_confidence(confidence) {}
    std::string name() const override { return "arbitrary"; }
    int32_t n_vocab() const override { return 96; }
    void sync(std::span<const int32_t> committed) override { m_last = committed.empty() ? 0 : committed.back(); }
    drafts::DraftChain propose(int32_t k, const drafts::ProposeParams&, const CancelToken&) override {
        drafts::DraftChain c;
        for (int32_t i = 0; i < k; ++i) {
            c.tokens.push_back((m_last * 7 + i * 13 + 5) % 96);
            c.q.push_back(1.0f);
            c.confidence.push_back(m_confidence);
        }
        return c;
    }
    drafts::DraftTree propose_tree(const drafts::TreeShape&, const drafts::ProposeParams&,
                                   const CancelToken&) override {
        throw std::logic_error("no trees");
    }

private:
    float m_confidence;
    int32_t m_last = 0;
};

// CS Drafting's lenient review accepts d when p_rev(d) > q(d) / l with q the proposing model's probability of d. A
// greedy neural leaf reports q = 1 for its one-hot draft; the review must use its real probability instead.
TEST(EngineStats, LenientReviewUsesTheLeafsRealProbability) {
    auto review = [&](float leaf_confidence) {
        const engine::RunResult r = exit0_over(std::make_shared<ArbitraryLeaf>(leaf_confidence), "leaf").run(kPrompt);
        EXPECT_EQ(r.tokens, std::vector<int32_t>(ref().begin(), ref().begin() + kNew));  // the target reviews at l = 1
        return r.stats.levels.at(1);
    };
    // A leaf sure of its tokens (confidence 1) is accepted only where the reviewer gives them more than 1/2.
    const engine::LevelStats sure = review(1.0f);
    ASSERT_GT(sure.n_reviewed, 0);
    EXPECT_LT(sure.n_review_accepted, sure.n_reviewed);
    // A leaf that gave them 1e-9 is accepted wherever the reviewer gives them more than 5e-10: every token here.
    const engine::LevelStats unsure = review(1e-9f);
    ASSERT_GT(unsure.n_reviewed, 0);
    EXPECT_EQ(unsure.n_review_accepted, unsure.n_reviewed);
}

// Each level counts the floating-point operations of its passes: the target's cover every token it verified through
// every matrix and the head (attention adds a little), a draft level's its own passes, and the report carries them.
TEST(EngineStats, LevelsCountTheFlopsOfTheirPasses) {
    SpecEngine eng            = exit0_over(std::make_shared<ContextMaxGram>(96), "max-gram");
    const engine::RunResult r = eng.run(kPrompt);
    ASSERT_EQ(r.stats.levels.size(), 3u);
    const model::ModelWeights& W = target().weights();
    double per_token_all = 2.0 * double(W.output.rows) * double(W.output.cols), per_token_layer0 = per_token_all;
    for (size_t il = 0; il < W.layers.size(); ++il)
        for (const model::WeightView* w : W.layers[il].matrices()) {
            per_token_all += 2.0 * double(w->rows) * double(w->cols);
            if (il == 0) per_token_layer0 += 2.0 * double(w->rows) * double(w->cols);
        }
    int64_t verified = 0;  // tokens in the target's passes
    for (size_t w = 0; w < r.stats.verify_width_passes.size(); ++w)
        verified += int64_t(w) * r.stats.verify_width_passes[w];
    ASSERT_GT(verified, 0);
    const engine::LevelStats &t = r.stats.levels[0], &d = r.stats.levels[1], &leaf = r.stats.levels[2];
    EXPECT_GE(t.flops, per_token_all * double(verified));
    EXPECT_LT(t.flops, 1.2 * per_token_all * double(verified)) << "attention is a small share at this context";
    // The exit@0 draft runs layer 0 and the head: at least that per pass, and less per token than the target.
    ASSERT_GT(d.n_forward, 0);
    EXPECT_GE(d.flops, per_token_layer0 * double(d.n_forward));
    EXPECT_EQ(leaf.flops, 0.0) << "Max-Gram multiplies nothing";
    EXPECT_DOUBLE_EQ(r.stats.draft_flops_per_pass(), d.flops / double(d.n_forward));
    const nlohmann::json j = r.stats;
    EXPECT_DOUBLE_EQ(j.at("levels").at(1).at("flops").get<double>(), d.flops);
}

// A draft that keeps its KV compressed (truncated, in the f32 cache) has modeled KV bytes: the level says so, it
// survives accumulation, and BPT is then modeled (issue #52: bytes_kv_modeled was dropped, BPT shown as measured).
TEST(EngineStats, ModeledDraftKvBytesAreLabelledAndSurviveAccumulation) {
    drafts::DraftSpec kv;
    kv.exit_layer     = 1;
    kv.kv_trunc_bits  = 4;
    kv.kv_from_target = false;
    drafts::DrafterOptions o;
    o.context        = exact_ctx();
    SpecConfig c     = lossless_config(3);
    c.levels         = {kv};
    c.max_new_tokens = 16;
    const engine::RunResult r =
        SpecEngine(target(), c, std::shared_ptr<drafts::Drafter>(drafts::make_drafter(kv, target(), o))).run(kPrompt);
    ASSERT_EQ(r.stats.levels.size(), 2u);
    EXPECT_TRUE(r.stats.levels[1].bytes_kv_modeled);
    EXPECT_FALSE(r.stats.levels[0].bytes_kv_modeled) << "the target's KV is read as it is";
    EXPECT_TRUE(r.stats.any_bytes_modeled());
    engine::RunStats total;
    engine::accumulate(total, r.stats);
    engine::accumulate(total, r.stats);
    EXPECT_TRUE(total.levels[1].bytes_kv_modeled) << "accumulation keeps the label";
    EXPECT_TRUE(total.any_bytes_modeled());
    EXPECT_TRUE(nlohmann::json(r.stats).at("levels").at(1).at("bytes_kv_modeled").get<bool>());
    drafts::DraftSpec plain;
    plain.exit_layer = 1;
    c.levels         = {plain};
    const engine::RunResult p =
        SpecEngine(target(), c, std::shared_ptr<drafts::Drafter>(drafts::make_drafter(plain, target(), o)))
            .run(kPrompt);
    EXPECT_FALSE(p.stats.any_bytes_modeled()) << "an exit-layer draft reads what it counts";
}

TEST(EngineStats, AccumulateSumsCounts) {
    SpecEngine eng(target(), cfg(4), oracle({2}));
    const engine::RunResult a = eng.run(kPrompt);
    engine::RunStats sum;
    engine::accumulate(sum, a.stats);
    engine::accumulate(sum, a.stats);
    EXPECT_EQ(sum.n_generated, 2 * kNew);
    EXPECT_EQ(sum.pos_reached, (std::vector<int64_t>{26, 26, 26}));
    EXPECT_EQ(sum.alpha(), a.stats.alpha());
    EXPECT_EQ(sum.levels[0].n_calls, 28);
}

}  // namespace
}  // namespace speculum::test
