// FR-Spec reduced LM heads (issue #56, item 4): a pass over a subset of the head's rows gives exactly those logits
// (reference and fast path), the head's tokens are the corpus's most frequent, a drafter with a reduced head drafts
// only those tokens, reads fewer head bytes, and greedy speculation with it stays lossless with drafts accepted;
// the spec field is validated, cleared on a kind change and round-trips through JSON.
#include "engine_fixtures.h"

#include "core/drafts/draft_spec.h"
#include "core/drafts/make_drafter.h"
#include "core/drafts/model_drafter.h"
#include "kernels/gemv.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace speculum::test {
namespace {

constexpr float kFastVsRefLogitTol = 2e-3f;  // f32 sums in another order (the fast path's products)

std::vector<int32_t> every_third(int32_t n_vocab) {
    std::vector<int32_t> ids;
    for (int32_t t = 1; t < n_vocab; t += 3) ids.push_back(t);
    return ids;
}

TEST(ReducedHead, APassOverSomeRowsGivesExactlyThoseLogits) {
    for (const kernels::GgmlType type : {kernels::GgmlType::F32, kernels::GgmlType::Q8_0}) {
        SCOPED_TRACE(kernels::ggml_type_traits(uint32_t(type))->name);
        model::SyntheticSpec spec = engine_target_spec();
        spec.type                 = type;
        spec.n_embd = 64, spec.n_ff = 128;
        const model::Model m            = model::make_synthetic_model(spec);
        const std::vector<int32_t> ids  = every_third(m.hparams().n_vocab);
        const model::WeightView head    = model::gather_rows(m.weights().output, ids);
        const std::vector<int32_t> toks = {5, 17, 3, 42};
        for (const model::ForwardPath path : {model::ForwardPath::reference, model::ForwardPath::fast}) {
            model::ContextConfig c = exact_ctx();
            c.path                 = path;
            model::InferenceContext full(m, c), part(m, c);
            const model::LogitsView a = full.forward_batch(toks, {0, 1, 2, 3});
            std::vector<float> want(a.data, a.data + size_t(a.n) * size_t(a.n_vocab));
            model::ForwardOptions o;
            o.head                    = &head;
            const model::LogitsView b = part.forward_batch(toks, {0, 1, 2, 3}, {}, o);
            ASSERT_EQ(b.n_vocab, int32_t(ids.size()));
            const float tol = path == model::ForwardPath::reference ? 0.0f : kFastVsRefLogitTol;
            for (int32_t i = 0; i < 4; ++i)
                for (size_t j = 0; j < ids.size(); ++j)
                    ASSERT_NEAR(b.row(i)[j], want[size_t(i) * size_t(a.n_vocab) + size_t(ids[j])], tol);
            EXPECT_LT(part.last_cost().bytes_weights, full.last_cost().bytes_weights) << "fewer head rows read";
            const std::span<const float> d = part.decode(9, 4, o);
            EXPECT_EQ(d.size(), ids.size()) << "decode returns the reduced width";
        }
        // A head of another width, or wider than the vocabulary, is refused by name.
        model::InferenceContext ctx(m, exact_ctx());
        const model::WeightView wide = model::gather_rows(m.weights().token_embd, {0, 1});
        model::ForwardOptions o;
        const model::WeightView narrow = model::make_owned_view(kernels::GgmlType::F32, 2, 8, std::vector<uint8_t>(64));
        o.head                         = &narrow;
        EXPECT_THROW(ctx.forward_batch({1}, {0}, {}, o), std::invalid_argument);
        o.head = &wide;
        EXPECT_NO_THROW(ctx.forward_batch({1}, {0}, {}, o));
        EXPECT_THROW(model::gather_rows(m.weights().output, {0, m.hparams().n_vocab}), std::invalid_argument);
    }
}

TEST(ReducedHead, TheHeadTakesTheMostFrequentTokens) {
    const std::vector<std::vector<int32_t>> seqs{{4, 4, 4, 9, 9, 2}, {7, 9, 4, 2, 2, 11}};
    // counts: 4 x4, 9 x3, 2 x3, 7 x1, 11 x1; ties go to the lower id; the result is ascending.
    EXPECT_EQ(drafts::frequent_tokens(seqs, 16, 3), (std::vector<int32_t>{2, 4, 9}));
    EXPECT_EQ(drafts::frequent_tokens(seqs, 16, 4), (std::vector<int32_t>{2, 4, 7, 9}));
    EXPECT_EQ(drafts::frequent_tokens(seqs, 16, 100).size(), 16u) << "at most the vocabulary";
    EXPECT_EQ(drafts::frequent_tokens({}, 16, 2), (std::vector<int32_t>{0, 1})) << "no counts: the lowest ids";
}

// A draft that is the target itself with its head reduced to the tokens the target produces: its greedy drafts are
// the target's wherever the target's token is in the head, so speculation accepts them; outside, it drafts another
// token, rejected, and the output is still the target's.
TEST(ReducedHead, ADraftWithAReducedHeadIsLosslessAndCheaper) {
    const model::Model target       = lossless_fixture().target;
    const std::vector<int32_t>& ref = lossless_fixture().ref;
    const std::vector<int32_t>& pr  = LosslessFixture::kPrompt;
    std::vector<std::vector<int32_t>> seqs{ref, pr};
    const std::vector<int32_t> ids = drafts::frequent_tokens(seqs, target.hparams().n_vocab, 24);
    drafts::ModelDrafterConfig cfg;
    cfg.context     = exact_ctx();
    cfg.head_tokens = ids;
    auto reduced    = std::make_shared<drafts::ModelDrafter>(target, cfg);
    auto full = std::make_shared<drafts::ModelDrafter>(target, drafts::ModelDrafterConfig{.context = exact_ctx()});
    engine::SpecConfig c      = lossless_config(4);
    const engine::RunResult r = engine::SpecEngine(target, c, reduced).run(pr);
    const engine::RunResult f = engine::SpecEngine(target, c, full).run(pr);
    EXPECT_EQ(r.tokens, ref);
    EXPECT_GT(r.stats.n_accepted, r.stats.n_drafted / 2) << "the target's tokens are in the head";
    const double per_pass_r = double(r.stats.levels[1].bytes_weights) / double(r.stats.levels[1].n_forward);
    const double per_pass_f = double(f.stats.levels[1].bytes_weights) / double(f.stats.levels[1].n_forward);
    EXPECT_LT(per_pass_r, per_pass_f) << "the reduced head reads fewer bytes per pass";
    // Every drafted token is one of the head's.
    reduced->sync(pr);
    for (int32_t t : reduced->propose(6, {}, {}).tokens) EXPECT_TRUE(std::binary_search(ids.begin(), ids.end(), t));
    drafts::ModelDrafterConfig bad = cfg;
    bad.head_tokens                = {3, 3};
    EXPECT_THROW(drafts::ModelDrafter(target, bad), std::invalid_argument);
}

TEST(ReducedHead, TheSpecFieldIsValidatedClearedOnAKindChangeAndRoundTrips) {
    drafts::DraftSpec s;
    s.kind              = drafts::DraftKind::model;
    s.model_path        = "draft.gguf";
    s.head_vocab        = 512;
    s.head_vocab_corpus = "suite.jsonl";
    EXPECT_NO_THROW(s.validate());
    nlohmann::json j = s;
    EXPECT_EQ(j.get<drafts::DraftSpec>(), s);
    EXPECT_NE(s.describe().find("head 512"), std::string::npos) << s.describe();
    drafts::DraftSpec no_corpus = s;
    no_corpus.head_vocab_corpus.clear();
    EXPECT_THROW(no_corpus.validate(), std::invalid_argument);
    drafts::DraftSpec negative = s;
    negative.head_vocab        = -1;
    EXPECT_THROW(negative.validate(), std::invalid_argument);
    drafts::DraftSpec eagle = s;
    eagle.kind              = drafts::DraftKind::eagle3;
    EXPECT_THROW(eagle.validate(), std::invalid_argument);
    const std::vector<std::string> dropped = drafts::drop_inapplicable(eagle, s);
    EXPECT_EQ(eagle.head_vocab, 0);
    EXPECT_TRUE(std::any_of(dropped.begin(), dropped.end(),
                            [](const std::string& d) { return d.find("reduced head") != std::string::npos; }));
}

}  // namespace
}  // namespace speculum::test
