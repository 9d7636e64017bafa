// Greedy speculative decoding is lossless: for every drafter family, tree shape and cascade depth the output equals
// the target's own greedy output token for token (synthetic random-weight models on the reference path, where a
// batched pass is bitwise equal to sequential decoding).
#include "engine_fixtures.h"
#include "model_fixtures.h"

#include <gtest/gtest.h>

#include "core/drafts/model_drafter.h"
#include "core/engine/reviewer.h"
#include "core/model/generate.h"
#include "core/model/sampler.h"
#include "kernels/attention.h"
#include "kernels/gemv.h"

#include <cmath>
#include <cstring>
#include <filesystem>

namespace speculum::test {
namespace {

using engine::SpecConfig;
using engine::SpecEngine;

const std::vector<int32_t>& kPrompt = LosslessFixture::kPrompt;
constexpr int32_t kNew              = LosslessFixture::kNew;
LosslessFixture& fx() {
    return lossless_fixture();
}

SpecConfig base_config(int32_t gamma = 4) {
    return lossless_config(gamma);
}

model::ForwardOptions exit_after(int32_t layer) {
    model::ForwardOptions o;
    o.exit_layer = layer;
    return o;
}

void expect_lossless(const SpecConfig& cfg, std::shared_ptr<drafts::Drafter> d, const char* what) {
    SpecEngine eng(fx().target, cfg, std::move(d));
    const engine::RunResult r = eng.run(kPrompt);
    EXPECT_FALSE(r.cancelled) << what;
    EXPECT_EQ(r.tokens, fx().ref) << what;
    EXPECT_EQ(r.stats.n_generated, kNew) << what;
    EXPECT_GT(r.stats.n_steps, 0) << what;
    EXPECT_LE(r.stats.n_steps, kNew) << what;
    // Equal output alone would also hold for a drafter whose every token is rejected: the run must have accepted
    // drafts, so that the acceptance rule and the rollback of accepted prefixes were exercised.
    EXPECT_GT(r.stats.n_accepted, 0) << what;
    EXPECT_LT(r.stats.n_steps, kNew) << what << ": no step committed more than one token";
}

TEST(EngineLossless, SeparateModelChain) {
    // A separate Model instance with the target's weights: its own context and KV cache, every draft accepted.
    model::Model clone = model::make_synthetic_model(engine_target_spec());
    expect_lossless(base_config(), std::make_shared<ContextDrafter>(clone), "separate model (same weights)");
    // A smaller model of other random weights agrees with the target nowhere: every draft is rejected, and the output
    // must still be the target's.
    model::Model other = model::make_synthetic_model(engine_target_spec(2, 99));
    const engine::RunResult r =
        SpecEngine(fx().target, base_config(), std::make_shared<ContextDrafter>(other)).run(kPrompt);
    EXPECT_EQ(r.tokens, fx().ref);
    EXPECT_GT(r.stats.n_drafted, 0);
}

TEST(EngineLossless, SelfDraftLayerSkip) {
    for (int32_t exit : {0, 1, 2}) {
        SCOPED_TRACE(exit);
        expect_lossless(base_config(3), std::make_shared<ContextDrafter>(fx().target, exit_after(exit)), "early exit");
    }
    model::ForwardOptions skip;
    skip.skip_ffn = {0, 1, 0, 1};
    expect_lossless(base_config(5), std::make_shared<ContextDrafter>(fx().target, skip), "skip ffn");
}

TEST(EngineLossless, MaxGramChain) {
    expect_lossless(base_config(6), std::make_shared<ContextMaxGram>(96), "max-gram");
}

TEST(EngineLossless, ChainWithPMinAndAdaptiveGamma) {
    SpecConfig c             = base_config(2);
    c.p_min                  = 0.05f;
    c.adaptive_gamma.enabled = true;
    c.adaptive_gamma.min     = 1;
    c.adaptive_gamma.max     = 8;
    expect_lossless(c, std::make_shared<ContextDrafter>(fx().target, exit_after(2)), "p_min + adaptive");
}

TEST(EngineLossless, Trees) {
    auto drafter     = [] { return std::make_shared<ContextDrafter>(fx().target, exit_after(1)); };
    SpecConfig c     = base_config(4);
    c.verification   = engine::Verification::tree;
    c.tree.kind      = engine::TreeKind::static_shape;
    c.tree.branching = {3, 2, 1};
    expect_lossless(c, drafter(), "static tree");
    c.tree.kind  = engine::TreeKind::top_k;
    c.tree.top_k = 2, c.tree.depth = 3;
    expect_lossless(c, drafter(), "top-k tree");
    c.tree.kind = engine::TreeKind::chain_second;
    expect_lossless(c, drafter(), "chain + second choice");
    c.tree.kind        = engine::TreeKind::sequoia;
    c.tree.node_budget = 12, c.tree.max_depth = 5, c.tree.refit_every = 3;
    expect_lossless(c, drafter(), "sequoia");
}

// A draft whose weights hold a NaN fails the run with the same error in a tree as in a chain (issue #51, item 2):
// before, dynamic and top-k trees ranked NaN probabilities, drafted tokens the target rejected and exited 0.
TEST(EngineLossless, NonFiniteDraftLogitsFailTreesAsChains) {
    model::ModelWeights w = fx().target.weights();
    model::WeightView& g  = w.layers[0].w_gate;
    std::vector<float> dense(size_t(g.rows * g.cols));
    for (int64_t r = 0; r < g.rows; ++r)
        kernels::dequantize_row_ref(&dense[size_t(r * g.cols)], g.type, g.row(r), g.cols);
    dense[7] = std::nanf("");
    std::vector<uint8_t> bytes(dense.size() * 4);
    std::memcpy(bytes.data(), dense.data(), bytes.size());
    g                         = model::make_owned_view(kernels::GgmlType::F32, g.rows, g.cols, std::move(bytes));
    const model::Model broken = model::Model::from_weights(fx().target.hparams(), std::move(w), "NaN draft");
    for (int mode = 0; mode < 4; ++mode) {
        SCOPED_TRACE(mode == 0 ? "chain" : mode == 1 ? "static tree" : mode == 2 ? "top-k tree" : "dynamic tree");
        SpecConfig c = base_config(4);
        if (mode > 0) c.verification = engine::Verification::tree;
        if (mode == 1) c.tree.kind = engine::TreeKind::static_shape, c.tree.branching = {2, 2, 1};
        if (mode == 2) c.tree.kind = engine::TreeKind::top_k, c.tree.top_k = 2, c.tree.depth = 3;
        if (mode == 3)
            c.tree.kind = engine::TreeKind::dynamic, c.tree.top_k = 2, c.tree.depth = 3, c.tree.node_budget = 6;
        drafts::ModelDrafterConfig mc;
        mc.context = exact_ctx();
        SpecEngine eng(fx().target, c, std::make_shared<drafts::ModelDrafter>(broken, mc));
        try {
            eng.run(kPrompt);
            ADD_FAILURE() << "a draft with NaN logits ran to the end";
        } catch (const model::NonFiniteLogits& e) {
            EXPECT_NE(std::string(e.what()).find("NaN"), std::string::npos) << e.what();
        }
    }
}

// Every architecture (issue #23): a windowed gemma layer, a RoPE-less smollm3 layer or phi3's fused matrices must
// not break verification, tree masks or the KV compaction of accepted paths. The draft is the target itself (every
// draft accepted) and the target exiting one layer early (some rejected); windows are shorter than the output.
TEST(EngineLossless, EveryArchitecture) {
    for (const char* arch :
         {"qwen3", "qwen3moe", "gpt-oss", "gemma2", "gemma3", "phi3", "smollm3", "qwen35", "qwen35moe"}) {
        SCOPED_TRACE(arch);
        model::SyntheticSpec spec      = spec_arch(arch, kernels::GgmlType::F32);
        spec.n_vocab                   = 128;
        const model::Model target      = model::make_synthetic_model(spec);
        const std::vector<int32_t> ref = greedy_reference(target, kPrompt, kNew);
        for (const bool tree : {false, true}) {
            SpecConfig c = base_config(4);
            if (tree) {
                c.verification   = engine::Verification::tree;
                c.tree.kind      = engine::TreeKind::static_shape;
                c.tree.branching = {2, 2, 1};
            }
            for (const int32_t exit : {-1, spec.n_layer - 2}) {
                const engine::RunResult r =
                    SpecEngine(target, c, std::make_shared<ContextDrafter>(target, exit_after(exit))).run(kPrompt);
                EXPECT_EQ(r.tokens, ref) << (tree ? "tree" : "chain") << ", exit " << exit;
                if (exit < 0) {
                    EXPECT_GT(r.stats.n_accepted, 0);
                }
            }
        }
    }
}

// Level 1 = the target exiting after layer 2, reviewing Max-Gram (depth 2); depth 3 puts an exit-after-0 model in
// between. Lenience at the intermediate levels changes the drafts, never the output.
TEST(EngineLossless, VerticalCascades) {
    const model::Model& t = fx().target;
    for (float len : {1.0f, 3.0f}) {
        SCOPED_TRACE(len);
        SpecConfig c = base_config();
        c.levels.resize(2);
        c.gamma    = {5, 3};
        c.lenience = {1.0f, len, 1.0f};
        std::vector<engine::LevelMaterial> m(2);
        m[0] = {std::make_shared<ContextDrafter>(t, exit_after(2)), &t, exit_after(2), "exit@2", {}};
        m[1] = {std::make_shared<ContextMaxGram>(96), nullptr, {}, "max-gram", {}};
        expect_lossless(c, engine::build_draft_stack(c, m), "cascade depth 2");

        c.levels.resize(3);
        c.gamma    = {5, 3, 4};
        c.lenience = {1.0f, len, len, 1.0f};
        m.resize(3);
        m[1] = {std::make_shared<ContextDrafter>(t, exit_after(0)), &t, exit_after(0), "exit@0", {}};
        m[2] = {std::make_shared<ContextMaxGram>(96), nullptr, {}, "max-gram", {}};
        expect_lossless(c, engine::build_draft_stack(c, m), "cascade depth 3");
    }
}

// Records the calls the engine makes to a drafter (what it was asked, what each call cost), forwarding them.
class RecordingDrafter : public drafts::Drafter {
public:
    struct Call {
        std::string what;
        size_t committed = 0;
        drafts::DraftCost cost;
    };
    explicit RecordingDrafter(std::shared_ptr<drafts::Drafter> inner) : m_inner(std::move(inner)) {}
    std::string name() const override { return m_inner->name(); }
    int32_t n_vocab() const override { return m_inner->n_vocab(); }
    void sync(std::span<const int32_t> committed) override {
        m_size = committed.size();
        m_inner->sync(committed);
    }
    drafts::DraftCost prefill(std::span<const int32_t> committed, const CancelToken& cancel) override {
        const drafts::DraftCost c = m_inner->prefill(committed, cancel);
        calls.push_back({"prefill", committed.size(), c});
        return c;
    }
    drafts::DraftChain propose(int32_t k, const drafts::ProposeParams& p, const CancelToken& cancel) override {
        drafts::DraftChain c = m_inner->propose(k, p, cancel);
        calls.push_back({"propose", m_size, c.cost});
        return c;
    }
    drafts::DraftTree propose_tree(const drafts::TreeShape& s, const drafts::ProposeParams& p,
                                   const CancelToken& cancel) override {
        return m_inner->propose_tree(s, p, cancel);
    }
    std::vector<Call> calls;

private:
    std::shared_ptr<drafts::Drafter> m_inner;
    size_t m_size = 0;
};

// A separate draft evaluates the prompt inside the run's prompt time (Drafter::prefill, once, before any propose),
// so its first propose is one short pass like the others and the level's c is a per-pass cost; cascade levels with
// a model of their own do the same.
TEST(EngineLossless, DraftsEvaluateThePromptInThePromptTime) {
    const model::Model clone = model::make_synthetic_model(engine_target_spec());
    drafts::ModelDrafterConfig dc;
    dc.context = exact_ctx();
    auto rec   = std::make_shared<RecordingDrafter>(std::make_shared<drafts::ModelDrafter>(clone, dc));
    SpecEngine eng(fx().target, base_config(), rec);
    const engine::RunResult r = eng.run(kPrompt);
    EXPECT_EQ(r.tokens, fx().ref);
    EXPECT_GT(r.stats.n_accepted, 0);
    ASSERT_GE(rec->calls.size(), 3u);
    EXPECT_EQ(rec->calls[0].what, "prefill");
    EXPECT_EQ(rec->calls[0].committed, kPrompt.size());
    EXPECT_EQ(rec->calls[0].cost.n_forward, 1);
    for (size_t i = 1; i < rec->calls.size(); ++i) EXPECT_EQ(rec->calls[i].what, "propose") << i;
    // The first propose evaluates the last prompt token only: less than the second, which catches up the accepted
    // drafts and the target's token (without the prefill it carried the whole prompt, ten tokens).
    EXPECT_LT(rec->calls[1].cost.flops, rec->calls[2].cost.flops);
    ASSERT_EQ(r.stats.levels.size(), 2u);
    EXPECT_GT(r.stats.levels[1].t_prefill_s, 0.0);
    EXPECT_GE(r.stats.t_prefill_s, r.stats.levels[1].t_prefill_s);
    EXPECT_EQ(r.stats.levels[0].t_prefill_s, 0.0);

    // A vertical cascade: level 1 reviews with a model of its own (its prompt passes are prompt time too); Max-Gram
    // below it has nothing to evaluate (its sync alone is timed).
    const model::Model& t = fx().target;
    SpecConfig c          = base_config();
    c.levels.resize(2);
    c.gamma    = {5, 3};
    c.lenience = {1.0f, 1.0f, 1.0f};
    std::vector<engine::LevelMaterial> m(2);
    m[0]                       = {std::make_shared<ContextDrafter>(t, exit_after(2)), &t, exit_after(2), "exit@2", {}};
    m[1]                       = {std::make_shared<ContextMaxGram>(96), nullptr, {}, "max-gram", {}};
    const engine::RunResult rc = SpecEngine(t, c, engine::build_draft_stack(c, m)).run(kPrompt);
    EXPECT_EQ(rc.tokens, fx().ref);
    ASSERT_EQ(rc.stats.levels.size(), 3u);
    EXPECT_GT(rc.stats.levels[1].t_prefill_s, 0.0);
    EXPECT_LT(rc.stats.levels[2].t_prefill_s, rc.stats.levels[1].t_prefill_s);
}

TEST(EngineLossless, HorizontalCascadeKMatrix) {
    const model::Model& t = fx().target;
    SpecConfig c          = base_config();
    c.levels.resize(2);
    c.gamma.clear();
    // Target's draft: 2 positions from level 1 (itself reviewing Max-Gram drafts of 3), then 3 raw Max-Gram.
    c.k_matrix = {{0, 2, 3}, {0, 0, 3}, {0, 0, 0}};
    std::vector<engine::LevelMaterial> m(2);
    m[0]       = {std::make_shared<ContextDrafter>(t, exit_after(1)), &t, exit_after(1), "exit@1", {}};
    m[1]       = {std::make_shared<ContextMaxGram>(96), nullptr, {}, "max-gram", {}};
    auto stack = engine::build_draft_stack(c, m);
    EXPECT_NE(stack->name().find("horizontal"), std::string::npos);
    expect_lossless(c, stack, "horizontal cascade");
}

TEST(EngineLossless, FastPathMatchesItsOwnBaselineOnMostTokens) {
    // The fast path's batched GEMM may differ from GEMV in the last bits, so an exact tie can flip; the built-in
    // lossless check reports the first mismatch rather than asserting bit-equality here.
    SpecConfig c   = base_config(4);
    c.context.path = model::ForwardPath::fast;
    c.baseline     = true;
    SpecEngine eng(fx().target, c, std::make_shared<ContextDrafter>(fx().target, exit_after(2)));
    const engine::RunResult r = eng.run(kPrompt);
    EXPECT_TRUE(r.stats.lossless_checked);
    EXPECT_EQ(r.baseline_tokens.size(), r.tokens.size());
    EXPECT_GT(r.stats.baseline_tokens_per_s, 0.0);
    EXPECT_GT(r.stats.speedup, 0.0);
}

// The baseline evaluates a prompt as a speculative run does (model::prefill_as_verified): all but the last token in
// batches of n_batch, then the last alone, so its first logits are bit for bit the engine's first verification row.
// A prompt whose last batch holds 32 tokens (GEMM attention) in one evaluation and 31 (kernels::attend) in the other
// gives other bits (F32 weights show it at once; BF16-rounded activations hide most of it): the bundled target met
// such a near-tie on a code prompt once its small draft was distilled, and the run differed from its baseline.
TEST(EngineLossless, BaselinePrefillEqualsTheEnginesFirstPass) {
    const model::Model m = model::make_synthetic_model(spec_gqa(kernels::GgmlType::F32));
    std::vector<int32_t> prompt;
    for (int32_t i = 0; i < 48; ++i) prompt.push_back((i * 37 + 3) % m.hparams().n_vocab);
    // n_batch 64: the engine evaluates 47 tokens in one batch (GEMM attention), then the last token with the drafts
    // (kernels::attend); the whole prompt would be one batch of 48.
    const model::ContextConfig cc{.n_ctx = 64, .n_batch = 64};
    model::InferenceContext a(m, cc);
    const std::vector<float> base = copy_of(model::prefill_as_verified(a, prompt));
    engine::Reviewer r(m, cc);
    r.sync(prompt, {});
    const std::vector<int32_t> draft{5, 6};
    const model::LogitsView v = r.score_chain(prompt, draft);
    EXPECT_EQ(base, std::vector<float>(v.row(0).begin(), v.row(0).end()));
    const std::vector<float> next = copy_of(a.decode(draft[0], int32_t(prompt.size())));
    EXPECT_EQ(next, std::vector<float>(v.row(1).begin(), v.row(1).end())) << "the first draft token's row";

    // Premise: evaluated as one batch, the prompt gives other bits.
    if (!kernels::attend_fast_available(m.hparams().head_dim())) GTEST_SKIP() << "needs AVX-512 (kernels::attend)";
    model::InferenceContext whole(m, cc);
    EXPECT_NE(copy_of(whole.prefill(prompt)), base)
        << "a whole-prompt batch and the engine's evaluation agree bit for bit: the baseline's split is not needed";
}

}  // namespace
}  // namespace speculum::test

namespace speculum::test {
namespace {

// The bundled trained target (resources/models, from the training branch): greedy speculative decoding with a
// self-draft, Max-Gram and a tree equals its own greedy output. Skips cleanly while the model is absent.
TEST(EngineLossless, BundledTarget) {
    const std::filesystem::path p =
        std::filesystem::path(SPECULUM_SOURCE_DIR) / "resources/models/speculum-target-bf16.gguf";
    if (!std::filesystem::exists(p)) GTEST_SKIP() << "bundled target not present: " << p;
    const model::Model t = model::Model::load(p.string());
    const std::vector<int32_t> prompt{1, 40, 41, 42, 43, 40, 41, 42};
    constexpr int32_t n = 12;
    model::InferenceContext ctx(t, {.n_ctx = 128, .n_batch = 32, .path = model::ForwardPath::reference});
    model::Sampler s;
    std::vector<int32_t> ref;
    model::generate(ctx, s, prompt, n, [&](int32_t x) {
        ref.push_back(x);
        return true;
    });
    engine::SpecConfig c;
    c.levels.resize(1);
    c.gamma          = {3};
    c.max_new_tokens = n;
    c.context        = {.n_ctx = 128, .n_batch = 32, .path = model::ForwardPath::reference};
    c.baseline       = false;
    model::ForwardOptions half;
    half.exit_layer = t.hparams().n_layer / 2 - 1;
    const engine::RunResult mg =
        engine::SpecEngine(t, c, std::make_shared<ContextMaxGram>(t.hparams().n_vocab)).run(prompt);
    EXPECT_EQ(mg.tokens, ref);
    c.verification            = engine::Verification::tree;
    c.tree.kind               = engine::TreeKind::chain_second;
    const engine::RunResult h = engine::SpecEngine(t, c, std::make_shared<ContextDrafter>(t, half)).run(prompt);
    EXPECT_EQ(h.tokens, ref);
    EXPECT_GT(h.stats.n_accepted, 0) << "the half-depth self-draft must have drafts accepted";
}

// Stochastic runs: reproducible for a seed, different across seeds, and the draft distributions are used.
TEST(EngineStochastic, SeededAndReproducible) {
    SpecConfig c           = base_config(3);
    c.sampling.temperature = 1.0f;
    c.sampling.seed        = 5;
    auto run               = [&](uint64_t seed) {
        c.sampling.seed = seed;
        return SpecEngine(fx().target, c, std::make_shared<ContextDrafter>(fx().target, exit_after(2))).run(kPrompt);
    };
    const engine::RunResult a = run(5), b = run(5), d = run(6);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_NE(a.tokens, d.tokens);
    EXPECT_EQ(a.stats.n_generated, kNew);
    EXPECT_GT(a.stats.n_accepted, 0);
    c.verification = engine::Verification::tree;
    c.tree.kind    = engine::TreeKind::top_k;
    EXPECT_EQ(run(9).tokens, run(9).tokens);
}

// A separate verifier (SpecEngine's 4th argument): the target's weights in another layout in real use; here a
// model of the same shape with other weights, so that which model did what is visible in the tokens.
TEST(EngineVerifier, VerifierVerifiesAndTheTargetDecodesTheBaseline) {
    const model::Model other        = model::make_synthetic_model(engine_target_spec(4, 77));
    const std::vector<int32_t> vref = greedy_reference(other, kPrompt, kNew);
    ASSERT_NE(vref, fx().ref) << "the two models must decode differently for this test to mean anything";
    int32_t parts = 0;
    while (vref[parts] == fx().ref[parts]) ++parts;
    SpecConfig c = base_config(4);
    c.baseline   = true;
    SpecEngine eng(fx().target, c, std::make_shared<ContextMaxGram>(96), &other);
    const engine::RunResult r = eng.run(kPrompt);
    EXPECT_EQ(r.tokens, vref);  // lossless with respect to the verifier
    EXPECT_EQ(r.baseline_tokens, fx().ref);
    EXPECT_TRUE(r.stats.lossless_checked);
    EXPECT_EQ(r.stats.lossless_mismatch, -1);
    EXPECT_EQ(r.stats.verifier_mismatch, parts);
    EXPECT_GT(r.stats.baseline_tokens_per_s, 0.0);
}

TEST(EngineVerifier, RejectsAVerifierOfAnotherShape) {
    const model::Model shallow = model::make_synthetic_model(engine_target_spec(2));
    EXPECT_THROW(SpecEngine(fx().target, base_config(), std::make_shared<ContextMaxGram>(96), &shallow),
                 std::invalid_argument);
}

// speculum-cli run --repack end to end: a Q8_0 target verified on its repacked copy (Q8_0_X8) on the fast path, int8
// activations and all, equals the copy's own greedy decode. That needs the repacked kernel's batched pass to equal
// its single-token decode bit for bit (w_down's 2304 columns span two of its column chunks), which
// Q8_0X8.BatchedGemmEqualsSingleVectorGemmBitForBit and RepackedWeights.BatchedPassEqualsSequentialDecodeBitForBit
// check directly: on a model this small a rounding difference rarely reaches the argmax.
TEST(EngineVerifier, RepackedQ8_0VerifierIsLosslessOnTheFastPath) {
    if (!kernels::q8_0_x8_preferred()) GTEST_SKIP() << "no fast Q8_0_X8 kernel on this CPU";
    model::SyntheticSpec s = engine_target_spec(2, 31);
    s.n_vocab = 300, s.n_embd = 256, s.n_ff = 2304, s.type = kernels::GgmlType::Q8_0;
    const model::Model target = model::make_synthetic_model(s);
    const model::Model x8     = model::Model::with_large_pages(target, {}, {}, /*repack_q8=*/true);
    ASSERT_EQ(x8.weight_memory(), model::WeightMemory::large_pages_repacked);
    const model::ContextConfig fast{.n_ctx = 256, .n_batch = 64, .path = model::ForwardPath::fast};
    std::vector<int32_t> own;  // the repacked model's own greedy decode on the fast path
    {
        model::InferenceContext ctx(x8, fast);
        model::Sampler sampler;
        model::generate(ctx, sampler, kPrompt, kNew, [&](int32_t t) {
            own.push_back(t);
            return true;
        });
    }
    for (int32_t gamma : {3, 7}) {
        SCOPED_TRACE(gamma);
        SpecConfig c = base_config(gamma);
        c.context    = fast;
        c.baseline   = true;
        SpecEngine eng(target, c, std::make_shared<ContextDrafter>(target, exit_after(0)), &x8);
        const engine::RunResult r = eng.run(kPrompt);
        EXPECT_EQ(r.tokens, own);
        EXPECT_TRUE(r.stats.lossless_checked);
        EXPECT_EQ(r.stats.lossless_mismatch, -1);
        EXPECT_GT(r.stats.n_steps, 0);
    }
}

}  // namespace
}  // namespace speculum::test
