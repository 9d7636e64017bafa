// CATS's three stages (verification "cats"): a layer-split forward equals the whole one; the shallow verifier
// continues from the draft's hidden states; greedy runs are lossless with drafts and corrections accepted; L_SV from
// a DRAM budget; the paper's BPT; typical acceptance as a lossy mode; the config.
#include "engine_fixtures.h"

#include "core/engine/cats.h"

#include <gtest/gtest.h>

namespace speculum::test {
namespace {

using engine::SpecConfig;
using engine::SpecEngine;

const std::vector<int32_t>& kPrompt = LosslessFixture::kPrompt;
constexpr int32_t kNew              = LosslessFixture::kNew;
LosslessFixture& fx() {
    return lossless_fixture();
}

SpecConfig cats_config(int32_t gamma = 4) {
    SpecConfig c        = lossless_config(gamma);
    c.verification      = engine::Verification::cats;
    c.cats.draft_layers = 1;
    c.cats.sv_layers    = 2;
    return c;
}

TEST(Cats, LayerSplitForwardEqualsTheWholePass) {
    const model::Model& m = fx().target;
    const int64_t e       = m.hparams().n_embd;
    const std::vector<int32_t> toks{5, 17, 3, 42, 9};
    const std::vector<int32_t> pos{0, 1, 2, 3, 4};
    model::InferenceContext whole(m, exact_ctx()), a(m, exact_ctx()), b(m, exact_ctx()), c(m, exact_ctx());
    const model::LogitsView full = whole.forward_batch(toks, pos);
    const std::vector<float> want(full.data, full.data + size_t(full.n) * full.n_vocab);

    std::vector<float> h1(size_t(5 * e)), h2(size_t(5 * e));
    model::ForwardOptions oa, ob, oc;
    oa.exit_layer = 0, oa.hidden_out = h1.data();
    ob.first_layer = 1, ob.exit_layer = 1, ob.hidden_in = h1.data(), ob.hidden_out = h2.data();
    oc.first_layer = 2, oc.hidden_in = h2.data();
    a.forward_batch(toks, pos, {}, oa);
    b.forward_batch(toks, pos, {}, ob);
    const model::LogitsView split = c.forward_batch(toks, pos, {}, oc);
    EXPECT_EQ(std::vector<float>(split.data, split.data + size_t(split.n) * split.n_vocab), want);
    // Each stage wrote exactly its own layers' K: equal to the whole pass's there.
    const int64_t ekv = m.hparams().n_embd_kv();
    for (int32_t slot = 0; slot < 5; ++slot) {
        EXPECT_TRUE(std::equal(a.kv().k(0, slot), a.kv().k(0, slot) + ekv, whole.kv().k(0, slot)));
        EXPECT_TRUE(std::equal(b.kv().k(1, slot), b.kv().k(1, slot) + ekv, whole.kv().k(1, slot)));
        EXPECT_TRUE(std::equal(c.kv().v(3, slot), c.kv().v(3, slot) + ekv, whole.kv().v(3, slot)));
    }
    // hidden_in is required exactly when the pass starts past layer 0.
    model::ForwardOptions bad;
    bad.first_layer = 1;
    EXPECT_THROW(c.forward_batch({1}, {5}, {}, bad), std::invalid_argument);
}

TEST(Cats, GreedyThreeStagesAreLosslessWithDraftsAndCorrectionsAccepted) {
    const SpecConfig c = cats_config();
    ASSERT_NO_THROW(c.validate(4));
    std::vector<int32_t> by_level(3, 0);
    engine::FunctionSink sink([&](const engine::TokenEvent& ev) { ++by_level.at(static_cast<size_t>(ev.level)); });
    SpecEngine eng(fx().target, c, std::make_shared<ContextMaxGram>(96));  // the level-1 drafter is not used
    const engine::RunResult r = eng.run(kPrompt, {}, {}, &sink);
    EXPECT_EQ(r.tokens, fx().ref);
    EXPECT_GT(r.stats.n_accepted, 0);
    EXPECT_GT(by_level[1], 0) << "draft tokens accepted";
    EXPECT_GT(by_level[2], 0) << "the shallow verifier's corrections accepted";
    ASSERT_EQ(r.stats.levels.size(), 3u);
    const engine::LevelStats &t = r.stats.levels[0], &d = r.stats.levels[1], &sv = r.stats.levels[2];
    EXPECT_EQ(t.n_calls, r.stats.n_steps);
    EXPECT_GT(sv.n_reviewed, 0);
    // The verifier continues from the draft's hidden states: each of its passes reads its own layer (1) and the
    // head, never the embeddings or layer 0; the target's passes read layers 2 and 3 and the head.
    const model::ModelWeights& W = fx().target.weights();
    const uint64_t head          = W.output.n_bytes() + W.output_norm.size() * sizeof(float);
    EXPECT_EQ(sv.bytes_weights, uint64_t(sv.n_forward) * (engine::layer_bytes(fx().target, 1, 2) + head));
    EXPECT_EQ(t.bytes_weights, uint64_t(t.n_forward) * (engine::layer_bytes(fx().target, 2, 4) + head));
    EXPECT_GT(d.n_forward, r.stats.n_steps);  // a chain per step
    // The paper's BPT (Eq. 4), decoder weights only.
    const double gbar = double(r.stats.n_drafted) / r.stats.n_steps, mlen = double(kNew) / r.stats.n_steps;
    const double want = (gbar * engine::layer_bytes(fx().target, 0, 1) + engine::layer_bytes(fx().target, 1, 2) +
                         engine::layer_bytes(fx().target, 2, 4)) /
                        mlen;
    EXPECT_NEAR(r.stats.bpt_cats_eq4, want, 1e-6 * want);
    EXPECT_EQ(r.stats.cats_layers, (std::vector<int32_t>{1, 2, 4}));
    EXPECT_LT(r.stats.bpt_cats_eq4, r.stats.bytes_per_token) << "all bytes (head, embeddings, KV) exceed Eq. 4's";
}

TEST(Cats, OtherSplitsAndLengthsAreLosslessToo) {
    for (auto [dl, sl, g] : {std::tuple{1, 3, 2}, std::tuple{2, 3, 5}, std::tuple{1, 2, 1}}) {
        SCOPED_TRACE(std::to_string(dl) + "/" + std::to_string(sl) + " gamma " + std::to_string(g));
        SpecConfig c        = cats_config(g);
        c.cats.draft_layers = dl, c.cats.sv_layers = sl;
        const engine::RunResult r = SpecEngine(fx().target, c, std::make_shared<ContextMaxGram>(96)).run(kPrompt);
        EXPECT_EQ(r.tokens, fx().ref);
        EXPECT_GT(r.stats.n_accepted, 0);
    }
}

TEST(Cats, VerifierDepthFromADramBudget) {
    const model::Model& m = fx().target;
    engine::CatsConfig c;
    c.draft_layers = 1;
    for (int32_t sv : {2, 3}) {
        c.dram_budget_gb           = double(engine::cats_resident_bytes(m, sv, 256)) / 1e9;
        const engine::CatsLayers l = engine::cats_layers(c, m, 256);
        EXPECT_EQ(l.sv, sv);
        EXPECT_TRUE(l.from_budget);
        EXPECT_LE(l.resident_bytes, uint64_t(c.dram_budget_gb * 1e9));
    }
    c.dram_budget_gb = double(engine::cats_resident_bytes(m, 2, 256) - 1) / 1e9;
    try {
        engine::cats_layers(c, m, 256);
        FAIL() << "a budget below the shallowest verifier must be refused";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("cats.dram_budget_gb"), std::string::npos) << e.what();
    }
    // Defaults: L_DM = n_layer / 4, L_SV halfway to the top.
    const engine::CatsLayers d = engine::cats_layers({}, m, 256);
    EXPECT_EQ(d.draft, 1);
    EXPECT_EQ(d.sv, 2);
}

TEST(Cats, TypicalAcceptanceIsLossyAndAcceptsMore) {
    SpecConfig c              = cats_config();
    const engine::RunResult g = SpecEngine(fx().target, c, std::make_shared<ContextMaxGram>(96)).run(kPrompt);
    c.cats.typical            = true;
    c.cats.typical_epsilon    = 0.02f;  // on a 96-token random model, most tokens clear a low bar
    c.cats.typical_delta      = 1.0f;
    c.baseline                = true;
    const engine::RunResult t = SpecEngine(fx().target, c, std::make_shared<ContextMaxGram>(96)).run(kPrompt);
    EXPECT_GT(double(t.stats.n_accepted) / t.stats.n_steps, double(g.stats.n_accepted) / g.stats.n_steps);
    EXPECT_TRUE(t.stats.lossless_checked);
    EXPECT_GE(t.stats.lossless_mismatch, 0) << "typical acceptance is lossy: it must change this output";
}

TEST(Cats, ConfigRoundTripAndRefusals) {
    SpecConfig c           = cats_config();
    c.cats.dram_budget_gb  = 1.5;
    c.cats.typical         = true;
    const nlohmann::json j = c;
    EXPECT_EQ(j["verification"], "cats");
    EXPECT_EQ(j.get<SpecConfig>(), c);
    auto invalid = [](SpecConfig s, const char* field) {
        try {
            s.validate(4);
            ADD_FAILURE() << "accepted an invalid config (" << field << ")";
        } catch (const std::invalid_argument& e) {
            EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
        }
    };
    SpecConfig b           = cats_config();
    b.levels[0].exit_layer = 1;  // CATS's draft is the target's own first layers
    invalid(b, "levels");
    b                = cats_config();
    b.cats.sv_layers = 1;
    invalid(b, "cats.sv_layers");
    b                = cats_config();
    b.cats.sv_layers = 4;
    invalid(b, "cats");
    b                      = cats_config();
    b.sampling.temperature = 0.8f;
    invalid(b, "sampling");
    // The old tree shape is renamed, and the old name says where things went.
    try {
        (void)nlohmann::json::parse(R"({"tree": {"kind": "cats"}})").get<SpecConfig>();
        FAIL();
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("chain_second"), std::string::npos) << e.what();
    }
    EXPECT_EQ(nlohmann::json::parse(R"({"tree": {"kind": "chain_second"}})").get<SpecConfig>().tree.kind,
              engine::TreeKind::chain_second);
}

}  // namespace
}  // namespace speculum::test
