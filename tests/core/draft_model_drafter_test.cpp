// ModelDrafter and MaxGramDrafter: chains equal plain greedy decoding, prefix sync and rollback, p_min, sampled
// chains, trees against independent per-path decoding, cost accounting, and Max-Gram provenance.
#include "core/drafts/make_drafter.h"
#include "core/drafts/maxgram_drafter.h"
#include "core/drafts/model_drafter.h"
#include "core/model/sampler.h"
#include "model_fixtures.h"

#include <gtest/gtest.h>

#include <numeric>

namespace speculum::drafts {
namespace {

using test::spec_gqa;

TreeShape uniform(std::vector<int32_t> b) {
    TreeShape s;
    s.branching = std::move(b);
    return s;
}
TreeShape explicit_tree(std::vector<int32_t> parent, std::vector<int32_t> rank) {
    TreeShape s;
    s.parent = std::move(parent);
    s.rank   = std::move(rank);
    return s;
}

model::Model tiny_model() {
    return model::make_synthetic_model(spec_gqa(kernels::GgmlType::F32));
}

ModelDrafterConfig ref_cfg() {
    ModelDrafterConfig c;
    c.context = {.n_ctx = 64, .n_batch = 32, .path = model::ForwardPath::reference};
    return c;
}

// Greedy continuation of `ctx` by plain decoding from scratch (the independent oracle).
std::vector<int32_t> greedy_oracle(const model::Model& m, std::vector<int32_t> ctx, int32_t k) {
    model::InferenceContext ic(m, {.n_ctx = 64, .n_batch = 32, .path = model::ForwardPath::reference});
    std::vector<int32_t> out;
    auto logits = ic.prefill(ctx);
    for (int32_t i = 0; i < k; ++i) {
        const int32_t t = model::argmax(logits);
        out.push_back(t);
        logits = ic.decode(t, static_cast<int32_t>(ctx.size() + i));
    }
    return out;
}

TEST(ModelDrafter, GreedyChainMatchesPlainDecoding) {
    const model::Model m = tiny_model();
    ModelDrafter d(m, ref_cfg());
    const std::vector<int32_t> prompt{3, 17, 42, 9, 100};
    d.sync(prompt);
    const DraftChain c = d.propose(6, {}, {});
    EXPECT_EQ(c.tokens, greedy_oracle(m, prompt, 6));
    ASSERT_EQ(c.q.size(), 6u);
    for (float q : c.q) EXPECT_EQ(q, 1.0f);  // greedy: one-hot draws
    for (float p : c.confidence) EXPECT_GT(p, 0.0f);
    EXPECT_EQ(c.cost.n_forward, 1 + 5);  // prompt catch-up + one decode per further token
}

// prefill caches the prompt but its last token (the engine calls it inside the prompt time), so the first propose
// evaluates one token, as every later one does, and drafts what it drafts without a prefill.
TEST(ModelDrafter, PrefillCachesThePromptButItsLastTokenAndTheFirstProposeIsOneTokenPass) {
    const model::Model m = tiny_model();
    const std::vector<int32_t> prompt{3, 17, 42, 9, 100, 7, 61};
    ModelDrafter plain(m, ref_cfg()), pre(m, ref_cfg());
    plain.sync(prompt);
    const DraftChain a = plain.propose(4, {}, {});
    const DraftCost p  = pre.prefill(prompt, {});
    EXPECT_EQ(p.n_forward, 1);
    EXPECT_GT(p.seconds, 0.0);
    EXPECT_EQ(pre.context().kv().size(), static_cast<int32_t>(prompt.size()) - 1);
    const DraftChain b = pre.propose(4, {}, {});
    EXPECT_EQ(b.tokens, a.tokens);
    EXPECT_EQ(b.tokens, greedy_oracle(m, prompt, 4));
    EXPECT_EQ(b.cost.n_forward, 4);  // the last prompt token, then one decode per further token
    // Without the prefill, the first propose's pass carried the whole prompt: its flops are the difference.
    EXPECT_LT(b.cost.flops, a.cost.flops);
    EXPECT_NEAR(b.cost.flops + p.flops, a.cost.flops, 1e-6 * a.cost.flops);
    // A one-token prompt has nothing to evaluate ahead.
    ModelDrafter one(m, ref_cfg());
    EXPECT_EQ(one.prefill(std::vector<int32_t>{5}, {}).n_forward, 0);
    EXPECT_EQ(one.propose(2, {}, {}).tokens, greedy_oracle(m, {5}, 2));
}

TEST(ModelDrafter, SyncKeepsCommonPrefixAndRollsBack) {
    const model::Model m = tiny_model();
    ModelDrafter d(m, ref_cfg());
    std::vector<int32_t> ctx{5, 6, 7, 8};
    d.sync(ctx);
    const DraftChain c1 = d.propose(4, {}, {});
    // Accept two drafts and a different bonus token; the drafter must continue exactly like a fresh one.
    ctx.push_back(c1.tokens[0]);
    ctx.push_back(c1.tokens[1]);
    ctx.push_back((c1.tokens[2] + 1) % m.hparams().n_vocab);
    d.sync(ctx);
    const DraftChain c2 = d.propose(3, {}, {});
    EXPECT_EQ(c2.tokens, greedy_oracle(m, ctx, 3));
    EXPECT_EQ(c2.cost.n_forward, 1 + 2);  // only the bonus token is new: one pass catches up
    EXPECT_EQ(d.context().kv().size(), static_cast<int32_t>(ctx.size()) + 2);
    // A shorter context (rollback below the prompt) and a repeated propose without sync also stay exact.
    ctx.resize(3);
    d.sync(ctx);
    EXPECT_EQ(d.propose(2, {}, {}).tokens, greedy_oracle(m, ctx, 2));
    EXPECT_EQ(d.propose(2, {}, {}).tokens, greedy_oracle(m, ctx, 2));
}

TEST(ModelDrafter, PMinStopsBeforeALowConfidenceToken) {
    const model::Model m = tiny_model();
    ModelDrafter d(m, ref_cfg());
    d.sync(std::vector<int32_t>{1, 2, 3});
    const DraftChain all = d.propose(5, {}, {});
    const float cut      = all.confidence[2];
    ProposeParams p;
    p.p_min                  = std::nextafter(cut, 2.0f);  // token 2 is just below the threshold
    const DraftChain stopped = d.propose(5, p, {});
    ASSERT_LE(stopped.tokens.size(), 2u);
    for (size_t i = 0; i < stopped.tokens.size(); ++i) EXPECT_GE(stopped.confidence[i], p.p_min);
    p.p_min = 1.01f;
    EXPECT_TRUE(d.propose(5, p, {}).tokens.empty());
}

TEST(ModelDrafter, SampledChainIsSeededAndReportsItsDistribution) {
    const model::Model m = tiny_model();
    ModelDrafter d(m, ref_cfg());
    d.sync(std::vector<int32_t>{10, 20, 30});
    ProposeParams p{.temperature = 1.5f, .p_min = 0.0f, .want_distributions = true, .seed = 77};
    const DraftChain a = d.propose(5, p, {});
    const DraftChain b = d.propose(5, p, {});
    EXPECT_EQ(a.tokens, b.tokens);
    ASSERT_EQ(a.q_dist.size(), 5u);
    for (size_t i = 0; i < a.tokens.size(); ++i) {
        const auto& q = a.q_dist[i];
        EXPECT_NEAR(std::accumulate(q.begin(), q.end(), 0.0), 1.0, 1e-4);
        EXPECT_EQ(q[size_t(a.tokens[i])], a.q[i]);
    }
    p.seed       = 78;
    bool differs = false;
    for (int s = 0; s < 8 && !differs; ++s, ++p.seed) differs = d.propose(5, p, {}).tokens != a.tokens;
    EXPECT_TRUE(differs);
}

TEST(ModelDrafter, TreeMatchesPerPathDecoding) {
    const model::Model m = tiny_model();
    ModelDrafter d(m, ref_cfg());
    const std::vector<int32_t> prompt{4, 8, 15, 16, 23};
    d.sync(prompt);
    ProposeParams params;
    params.want_distributions = true;
    const DraftTree t         = d.propose_tree(uniform({3, 2, 1}), params, {});
    ASSERT_EQ(t.size(), 3 + 6 + 6);
    for (int32_t i = 0; i < t.size(); ++i) {
        // Decode the path to node i's parent from scratch; node i must be its parent's rank-th most likely child.
        std::vector<int32_t> path;
        for (int32_t a = t.parent[size_t(i)]; a >= 0; a = t.parent[size_t(a)])
            path.insert(path.begin(), t.tokens[size_t(a)]);
        std::vector<int32_t> ctx = prompt;
        ctx.insert(ctx.end(), path.begin(), path.end());
        model::InferenceContext ic(m, {.n_ctx = 64, .n_batch = 32, .path = model::ForwardPath::reference});
        const std::vector<float> logits = test::copy_of(ic.prefill(ctx));
        std::vector<int32_t> order(logits.size());
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int32_t a, int32_t b) { return logits[size_t(a)] > logits[size_t(b)]; });
        EXPECT_EQ(t.tokens[size_t(i)], order[size_t(t.rank[size_t(i)])]) << "node " << i;
        EXPECT_EQ(t.depth[size_t(i)], static_cast<int32_t>(path.size()) + 1);
    }
    EXPECT_EQ(t.root_q_dist.size(), size_t(m.hparams().n_vocab));
    EXPECT_TRUE(t.q_dist.back().empty());  // leaves are never evaluated
    EXPECT_EQ(t.cost.n_forward, 1 + 2);    // catch-up, then depths 1 and 2
    // The tree left no slots behind: a chain afterwards is still exact.
    EXPECT_EQ(d.propose(3, {}, {}).tokens, greedy_oracle(m, prompt, 3));
}

TEST(ModelDrafter, ExplicitTreeShapeAndBadShapes) {
    const model::Model m = tiny_model();
    ModelDrafter d(m, ref_cfg());
    d.sync(std::vector<int32_t>{1, 2});
    const TreeShape s = explicit_tree({-1, -1, 0, 2}, {0, 1, 0, 0});
    const DraftTree t = d.propose_tree(s, {}, {});
    ASSERT_EQ(t.size(), 4);
    std::vector<int32_t> chain{t.tokens[0], t.tokens[2], t.tokens[3]};
    EXPECT_EQ(chain, greedy_oracle(m, {1, 2}, 3));
    EXPECT_THROW(d.propose_tree(explicit_tree({0}, {0}), {}, {}), std::invalid_argument);
    EXPECT_THROW(d.propose_tree(explicit_tree({-1, -1}, {0, 0}), {}, {}), std::invalid_argument);
    EXPECT_THROW(d.propose_tree(uniform({8, 8}), {}, {}), std::invalid_argument);  // > n_batch
}

TEST(ModelDrafter, CostCountsWeightsOncePerPassAndSkipsSkippedLayers) {
    const model::Model m     = tiny_model();
    const model::Hparams& hp = m.hparams();
    ModelDrafter full(m, ref_cfg());
    full.sync(std::vector<int32_t>{1, 2, 3, 4});
    const DraftChain c = full.propose(1, {}, {});
    // One pass over 4 prompt tokens: every matrix once, 4 embedding rows, the head once.
    const uint64_t per_pass = m.weight_bytes_per_token() - m.weights().token_embd.row_bytes();
    EXPECT_EQ(c.cost.bytes_weights, per_pass + 4 * m.weights().token_embd.row_bytes());
    EXPECT_EQ(c.cost.bytes_kv, uint64_t(hp.n_layer) * 2 * 4 * hp.n_embd_kv() * 4);
    EXPECT_FALSE(c.cost.bytes_modeled);
    EXPECT_GT(c.cost.flops, 2.0 * 4 * (m.weight_bytes_total() / 4 - hp.n_vocab * hp.n_embd));
    EXPECT_GE(c.cost.seconds, 0.0);

    ModelDrafterConfig cfg = ref_cfg();
    cfg.forward.exit_layer = 0;
    ModelDrafter early(m, cfg);
    early.sync(std::vector<int32_t>{1, 2, 3, 4});
    const DraftChain e            = early.propose(1, {}, {});
    const model::LayerWeights& L1 = m.weights().layers[1];
    const uint64_t layer1         = L1.wq.n_bytes() + L1.wk.n_bytes() + L1.wv.n_bytes() + L1.wo.n_bytes() +
                            L1.w_gate.n_bytes() + L1.w_up.n_bytes() + L1.w_down.n_bytes() + 2 * 4 * hp.n_embd;
    EXPECT_EQ(e.cost.bytes_weights, c.cost.bytes_weights - layer1);
    EXPECT_EQ(e.cost.bytes_kv, c.cost.bytes_kv / 2);
}

TEST(MaxGramDrafter, CopiesWithProvenanceAndOneHotDistributions) {
    BigramTable bt = BigramTable::build({{7, 8}, {8, 9}}, 16);
    MaxGramDrafter d(16, {}, bt);
    d.sync(std::vector<int32_t>{1, 2, 3, 4, 1, 2});
    ProposeParams p;
    p.want_distributions = true;
    const DraftChain c   = d.propose(4, p, {});
    // "1 2" matched earlier: copy "3 4 1 2"... copies stop at the context's end then the bigram fills.
    ASSERT_FALSE(c.tokens.empty());
    EXPECT_EQ(c.tokens[0], 3);
    EXPECT_EQ(c.source[0], static_cast<uint8_t>(MaxGramSource::copy));
    for (size_t i = 0; i < c.tokens.size(); ++i) {
        EXPECT_EQ(c.q[i], 1.0f);
        EXPECT_EQ(c.q_dist[i][size_t(c.tokens[i])], 1.0f);
    }
    EXPECT_EQ(c.cost.bytes_weights, 0u);
    d.sync(std::vector<int32_t>{5, 7});  // no earlier match: the bigram continues 7 -> 8 -> 9
    const DraftChain b = d.propose(3, p, {});
    ASSERT_EQ(b.tokens, (std::vector<int32_t>{8, 9}));
    EXPECT_EQ(b.source[0], static_cast<uint8_t>(MaxGramSource::bigram));
    const DraftTree t = d.propose_tree(uniform({2, 2}), p, {});
    EXPECT_EQ(t.tokens, (std::vector<int32_t>{8, 9}));
    EXPECT_EQ(t.parent, (std::vector<int32_t>{-1, 0}));
}

TEST(MakeDrafter, BuildsEachKindAndRejectsBadSpecs) {
    const model::Model m = tiny_model();
    DraftSpec s;
    s.exit_layer = 0;
    DrafterOptions o;
    o.context = {.n_ctx = 64, .n_batch = 32};
    auto d    = make_drafter(s, m, o);
    EXPECT_EQ(d->name(), "exit@0");
    d->sync(std::vector<int32_t>{1, 2, 3});
    EXPECT_EQ(d->propose(2, {}, {}).tokens.size(), 2u);
    DraftSpec g;
    g.kind = DraftKind::maxgram;
    EXPECT_EQ(make_drafter(g, m)->n_vocab(), m.hparams().n_vocab);
    s.exit_layer = 5;  // the model has 2 layers
    EXPECT_THROW(make_drafter(s, m), std::invalid_argument);
    DraftSpec w;
    w.prune.ratio  = 0.5f;
    w.prune.method = PruneMethod::wanda;
    EXPECT_THROW(make_drafter(w, m), std::invalid_argument);  // no calibration source
}

}  // namespace
}  // namespace speculum::drafts
