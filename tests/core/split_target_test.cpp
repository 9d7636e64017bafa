// Strict-subset storage (issue #21, Cassandra's headline): a BF16 target split into its self-draft's compact
// matrices (shared, not copied) and the rest of its bits gives the target's logits bit for bit on every path and
// batch size, costs the dense target's bytes plus the draft's masks, and keeps losslessness in a speculative run
// whose verifier it is. Drafts that are not a strict subset are refused with the matrix's name.
#include "engine_fixtures.h"

#include "core/drafts/model_drafter.h"
#include "core/drafts/self_draft.h"
#include "core/session/run.h"

#include <gtest/gtest.h>

#include <cstring>

namespace speculum::test {
namespace {

model::SyntheticSpec split_spec() {
    model::SyntheticSpec s = engine_target_spec(2, 33);
    s.type                 = kernels::GgmlType::BF16;
    s.n_embd = 128, s.n_ff = 320, s.n_vocab = 100;  // a short last tile of output rows (100 = 12 x 8 + 4)
    return s;
}

drafts::DraftSpec p5t4() {
    drafts::DraftSpec d;
    d.prune.ratio       = 0.5f;
    d.weight_trunc_bits = 4;
    return d;
}

// The logits of a 12-token prompt, one decoded token, then a 5-token pass (a verification pass).
std::vector<float> passes(const model::Model& m, model::ContextConfig cfg) {
    cfg.n_ctx = 64;
    model::InferenceContext ctx(m, cfg);
    std::vector<float> out;
    std::vector<int32_t> toks(12), pos(12);
    for (int32_t i = 0; i < 12; ++i) toks[size_t(i)] = (7 * i + 3) % 100, pos[size_t(i)] = i;
    model::LogitsView v = ctx.forward_batch(toks, pos);
    out.insert(out.end(), v.data, v.data + size_t(v.n) * size_t(v.n_vocab));
    const auto d = ctx.decode(42, 12);
    out.insert(out.end(), d.begin(), d.end());
    v = ctx.forward_batch({1, 2, 3, 4, 5}, {13, 14, 15, 16, 17});
    out.insert(out.end(), v.data, v.data + size_t(v.n) * size_t(v.n_vocab));
    return out;
}

TEST(SplitTarget, LogitsAreTheTargetsBitForBitAndTheDraftsMatricesAreShared) {
    const model::Model target     = model::make_synthetic_model(split_spec());
    const drafts::SelfDraft d     = drafts::build_self_draft(target, p5t4());
    const drafts::SplitTarget st  = drafts::split_target(target, d.model);
    const model::ModelWeights& sw = st.model.weights();
    const model::ModelWeights& dw = d.model.weights();
    EXPECT_GE(st.n_split, 7 * target.hparams().n_layer);
    for (size_t il = 0; il < sw.layers.size(); ++il) {
        EXPECT_EQ(sw.layers[il].wq.compact.get(), dw.layers[il].wq.compact.get()) << "the draft's part is copied";
        EXPECT_EQ(sw.layers[il].w_down.compact.get(), dw.layers[il].w_down.compact.get());
        ASSERT_TRUE(sw.layers[il].w_up.rest);
        EXPECT_FALSE(dw.layers[il].w_up.rest);
    }
    // The split matrices cost the dense ones plus a mask bit per weight (1/16), byte rounding and two 8-byte tile
    // offsets per 8 rows (0.8 % of these 128-column rows); the draft's part of them is what the draft reads.
    EXPECT_GT(st.bytes_split, st.bytes_dense);
    EXPECT_LT(double(st.bytes_split), 1.09 * double(st.bytes_dense));
    EXPECT_GT(st.bytes_draft, 0u);
    EXPECT_LT(st.bytes_draft, st.bytes_split);
    for (const model::ContextConfig& cfg : {model::ContextConfig{}, model::ContextConfig{.int8_activations = false},
                                            model::ContextConfig{.path = model::ForwardPath::reference}}) {
        SCOPED_TRACE(std::string(cfg.path == model::ForwardPath::reference ? "reference" : "fast") +
                     (cfg.int8_activations ? "" : ", f32 activations"));
        const std::vector<float> a = passes(target, cfg), b = passes(st.model, cfg);
        ASSERT_EQ(a.size(), b.size());
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(float)));
    }
    // The draft itself computes something else (it is pruned): the comparison above can fail.
    EXPECT_NE(passes(target, {}), passes(d.model, {}));
}

TEST(SplitTarget, AsTheVerifierItStaysLosslessAndAcceptsDrafts) {
    const model::Model target    = model::make_synthetic_model(split_spec());
    drafts::SelfDraft d          = drafts::build_self_draft(target, p5t4());
    const drafts::SplitTarget st = drafts::split_target(target, d.model);
    const std::vector<int32_t> prompt{5, 17, 3, 42, 17, 3, 42, 8, 60, 11};
    const std::vector<int32_t> ref = greedy_reference(target, prompt, 32);
    drafts::ModelDrafterConfig dc{.context = exact_ctx(), .forward = d.forward, .name = "p5t4"};
    auto dr = std::make_shared<drafts::ModelDrafter>(std::move(d.model), std::move(dc), std::move(d.cost));
    engine::SpecConfig c;
    c.levels         = {p5t4()};
    c.gamma          = {4};
    c.max_new_tokens = 32;
    c.context        = exact_ctx();
    c.baseline       = false;
    engine::SpecEngine eng(st.model, c, dr);
    const engine::RunResult r = eng.run(prompt);
    EXPECT_EQ(r.tokens, ref);
    EXPECT_GT(r.stats.n_accepted, 0) << "no draft token was accepted";
}

TEST(SplitTarget, RefusesDraftsThatAreNotAStrictSubset) {
    const model::Model target = model::make_synthetic_model(split_spec());
    // Truncation to nearest: the draft's bits are not the target's with bits left out.
    drafts::DraftSpec nearest = p5t4();
    nearest.trunc_rounding    = kernels::MantissaRounding::nearest_even;
    try {
        drafts::split_target(target, drafts::build_self_draft(target, nearest).model);
        FAIL() << "a rounded draft was split";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("blk.0.attn_q.weight"), std::string::npos) << e.what();
    }
    // No compact matrix: a layer-skipping draft, and a dense copy.
    drafts::DraftSpec skip;
    skip.skip_ffn = {1};
    EXPECT_THROW(drafts::split_target(target, drafts::build_self_draft(target, skip).model), std::invalid_argument);
    drafts::DraftSpec dense = p5t4();
    dense.compact           = false;
    EXPECT_THROW(drafts::split_target(target, drafts::build_self_draft(target, dense).model), std::invalid_argument);
    // An F16 target: its draft is converted to BF16, so it is not a subset of the target's bits.
    model::SyntheticSpec f16 = split_spec();
    f16.type                 = kernels::GgmlType::F16;
    const model::Model t16   = model::make_synthetic_model(f16);
    EXPECT_THROW(drafts::split_target(t16, drafts::build_self_draft(t16, p5t4()).model), std::invalid_argument);
}

// A config asks for it (levels[0].strict_subset): session::run verifies on the split target, says so with its
// bytes, stays lossless against the dense target's own output, and refuses the flag on a later level.
TEST(SplitTarget, SessionRunsVerifyOnTheSplitTargetWhenTheConfigAsks) {
    session::Target t;
    t.path  = "synthetic";
    t.model = std::make_shared<const model::Model>(model::make_synthetic_model(split_spec()));
    engine::SpecConfig c;
    drafts::DraftSpec d           = p5t4();
    d.strict_subset               = true;
    c.levels                      = {d};
    c.gamma                       = {4};
    c.max_new_tokens              = 24;
    c.context                     = exact_ctx();
    c.prompt_ids                  = {5, 17, 3, 42, 17, 3, 42, 8, 60, 11};
    const session::RunOutcome out = session::run(c, t);
    // 2 layers x 7 matrices and the head (truncated: format_output)
    EXPECT_NE(out.verifier_note.find("(15 matrices:"), std::string::npos) << out.verifier_note;
    EXPECT_GT(out.split_bytes, out.split_dense_bytes);
    EXPECT_GT(out.split_draft_bytes, 0u);
    ASSERT_EQ(out.runs.size(), 1u);
    EXPECT_EQ(out.runs[0].result.tokens, greedy_reference(*t.model, c.prompt_ids, 24));
    EXPECT_GT(out.runs[0].result.stats.n_accepted, 0);
    ASSERT_TRUE(out.agreement.has_value());
    EXPECT_EQ(*out.agreement, 1.0);
    // Only the first level can share the target's storage.
    engine::SpecConfig two = c;
    two.levels             = {p5t4(), d};
    two.gamma              = {4, 2};
    try {
        session::run(two, t);
        FAIL() << "strict_subset on levels[1] was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("levels[1].strict_subset"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace speculum::test
