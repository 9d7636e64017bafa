// Speculative decoding on a mixture-of-experts target (issue #49): greedy verification stays lossless with the
// drafts a MoE target allows (the target itself, an early exit, a layer skip, fewer experts per token, magnitude
// pruning of the stacked experts; an EAGLE-3 head, a separate draft model, the n-gram drafters and suffix
// decoding), drafts are accepted, and the run records the routing of its verification passes: every verified
// token's experts, and the distinct experts each pass read.
#include "core/drafts/draft_bits.h"
#include "core/drafts/eagle3.h"
#include "core/drafts/eagle3_drafter.h"
#include "core/drafts/make_drafter.h"
#include "core/drafts/model_drafter.h"
#include "core/drafts/ngram_drafter.h"
#include "core/drafts/self_draft.h"
#include "core/engine/cats.h"
#include "core/engine/engine.h"
#include "core/model/synthetic.h"
#include "engine_fixtures.h"

#include <gtest/gtest.h>

#include <functional>
#include <numeric>

using namespace speculum;
using namespace speculum::test;

namespace {

const std::vector<int32_t> kPrompt{5, 17, 3, 42, 17, 3, 42, 8, 60, 11, 5, 17, 3, 42};
constexpr int32_t kNew = 32;

model::SyntheticSpec moe_target_spec() {
    model::SyntheticSpec s = engine_target_spec(4, 31);
    s.arch = "qwen3moe", s.n_embd_head = 32, s.n_expert = 16, s.n_expert_used = 4, s.n_ff_exp = 32;
    return s;
}

struct MoeFixture {
    model::Model target      = model::make_synthetic_model(moe_target_spec());
    std::vector<int32_t> ref = greedy_reference(target, kPrompt, kNew);
};
MoeFixture& fx() {
    static MoeFixture f;
    return f;
}

engine::SpecConfig config(int32_t gamma = 4) {
    engine::SpecConfig c = lossless_config(gamma);  // one plain level, the exact path, no baseline
    c.max_new_tokens     = kNew;
    return c;
}

engine::RunResult run(const engine::SpecConfig& c, std::shared_ptr<drafts::Drafter> d) {
    return engine::SpecEngine(fx().target, c, std::move(d)).run(kPrompt);
}

std::shared_ptr<drafts::Drafter> self_draft(const drafts::DraftSpec& s) {
    drafts::DrafterOptions o;
    o.context = exact_ctx();
    return drafts::make_drafter(s, fx().target, o);
}

}  // namespace

TEST(EngineMoe, LosslessWithEveryDraftAMoeTargetAllows) {
    struct Case {
        const char* what;
        drafts::DraftSpec spec;
        bool always_accepted;
    };
    std::vector<Case> cases;
    cases.push_back({"the target itself", {}, true});
    drafts::DraftSpec exit;
    exit.exit_layer = 2;
    cases.push_back({"early exit", exit, false});
    drafts::DraftSpec skip;
    skip.skip_attn = {1}, skip.skip_ffn = {2};
    cases.push_back({"layer skip", skip, false});
    drafts::DraftSpec fewer;
    fewer.experts_used = 2;  // expert-level pruning: 2 of the target's 4 experts per token
    cases.push_back({"2 experts per token", fewer, false});
    drafts::DraftSpec pruned;
    pruned.prune.ratio = 0.3f;  // magnitude, row by row over the stacked experts (kept dense)
    cases.push_back({"pruned experts", pruned, false});
    for (const Case& cs : cases)
        for (const bool tree : {false, true}) {
            SCOPED_TRACE(std::string(cs.what) + (tree ? ", tree" : ", chain"));
            engine::SpecConfig c = config();
            if (tree) {
                c.verification   = engine::Verification::tree;
                c.tree.kind      = engine::TreeKind::static_shape;
                c.tree.branching = {2, 2, 1};
            }
            c.levels[0]               = cs.spec;
            const engine::RunResult r = run(c, self_draft(cs.spec));
            EXPECT_EQ(r.tokens, fx().ref);
            EXPECT_GT(r.stats.n_accepted, 0) << "drafts were accepted";
            if (cs.always_accepted && !tree) {
                EXPECT_EQ(r.stats.n_accepted, r.stats.n_drafted);
            }
        }
}

namespace {

// A MoE target whose layers add nothing (attention output and every expert's down matrix zero) and whose head is its
// embedding table: its greedy continuation repeats the last token, so drafters that predict a repeat are accepted
// while the routers still choose experts for every token.
model::Model moe_repeat_target() {
    model::SyntheticSpec s = moe_target_spec();
    s.tied_output          = true;
    const model::Model m   = model::make_synthetic_model(s);
    model::ModelWeights w  = m.weights();
    silence_layers(w);
    return model::Model::from_weights(m.hparams(), std::move(w), "moe repeat target");
}

}  // namespace

TEST(EngineMoe, LosslessWithHeadsSeparateDraftsAndStatisticalDrafters) {
    const model::Model target = moe_repeat_target();
    ASSERT_TRUE(target.hparams().moe());
    const std::vector<int32_t> prompt{5, 17, 3, 42, 17, 3, 42, 8};
    const std::vector<int32_t> ref = greedy_reference(target, prompt, kNew);
    struct Case {
        std::string what;
        std::function<std::shared_ptr<drafts::Drafter>()> make;
        drafts::DraftKind kind;
    };
    const drafts::Eagle3Head head = drafts::eagle3_head_from_gguf(
        model::GgufFile::from_bytes(drafts::eagle3_synthetic_gguf(target, {.echo = true}), "head"), target);
    std::vector<Case> cases;
    cases.push_back({"EAGLE-3 head", [&] { return std::make_shared<drafts::Eagle3Drafter>(target, head, exact_ctx()); },
                     drafts::DraftKind::eagle3});
    cases.push_back({"separate draft model (a dense llama)",
                     [&] {
                         model::SyntheticSpec d = engine_target_spec(2, 5);  // same vocabulary, 2 layers
                         d.tied_output          = true;
                         const model::Model dm  = model::make_synthetic_model(d);
                         model::ModelWeights w  = dm.weights();
                         w.token_embd           = target.weights().token_embd;  // the target's tokens
                         w.output               = target.weights().output;
                         silence_layers(w);
                         drafts::ModelDrafterConfig mc;
                         mc.context = exact_ctx();
                         return std::make_shared<drafts::ModelDrafter>(
                             model::Model::from_weights(dm.hparams(), std::move(w), "dense draft"), mc);
                     },
                     drafts::DraftKind::model});
    for (const drafts::NgramMethod m : {drafts::NgramMethod::prompt_lookup, drafts::NgramMethod::suffix}) {
        drafts::NgramSpec ns;
        ns.method = m, ns.size_n = 2, ns.size_m = 8;
        cases.push_back({drafts::to_string(m),
                         [&target, ns] { return std::make_shared<drafts::NgramDrafter>(target.hparams().n_vocab, ns); },
                         drafts::DraftKind::ngram});
    }
    for (const Case& cs : cases)
        for (const bool tree : {false, true}) {
            SCOPED_TRACE(cs.what + (tree ? ", tree" : ", chain"));
            engine::SpecConfig c = config();
            c.levels[0].kind     = cs.kind;
            if (cs.kind == drafts::DraftKind::eagle3 || cs.kind == drafts::DraftKind::model)
                c.levels[0].model_path = "draft.gguf";
            if (tree) {
                c.verification   = engine::Verification::tree;
                c.tree.kind      = engine::TreeKind::static_shape;
                c.tree.branching = {2, 1, 1};
            }
            const engine::RunResult r = engine::SpecEngine(target, c, cs.make()).run(prompt);
            EXPECT_EQ(r.tokens, ref);
            EXPECT_GT(r.stats.n_accepted, r.stats.n_drafted / 4) << "drafts were accepted";
            EXPECT_LT(r.stats.n_steps, kNew) << "fewer target passes than tokens";
            EXPECT_FALSE(r.stats.experts.empty()) << "the verification passes' routing was recorded";
        }
}

TEST(EngineMoe, FewerExpertsPerTokenReadLess) {
    drafts::DraftSpec fewer;
    fewer.experts_used = 1;
    drafts::DrafterOptions o;
    o.context                 = exact_ctx();
    const drafts::SelfDraft d = drafts::build_self_draft(fx().target, fewer);
    EXPECT_EQ(d.model.hparams().n_expert_used, 1);
    EXPECT_LT(d.model.weight_bytes_per_token(), fx().target.weight_bytes_per_token());
    drafts::DraftSpec dense_target = fewer;
    EXPECT_THROW(drafts::build_self_draft(model::make_synthetic_model(engine_target_spec()), dense_target),
                 std::invalid_argument)
        << "a dense target has no experts to prune";
    fewer.experts_used = 17;
    EXPECT_THROW(drafts::build_self_draft(fx().target, fewer), std::invalid_argument);
    drafts::DraftSpec wanda;
    wanda.prune.ratio  = 0.3f;
    wanda.prune.method = drafts::PruneMethod::wanda;
    drafts::ActivationNorms none;
    EXPECT_THROW(drafts::build_self_draft(fx().target, wanda, &none), std::invalid_argument);
}

TEST(EngineMoe, RunRecordsTheRoutingOfItsVerificationPasses) {
    drafts::DraftSpec exit;
    exit.exit_layer              = 2;
    engine::SpecConfig c         = config(4);
    c.levels[0]                  = exit;
    const engine::RunResult r    = run(c, self_draft(exit));
    const engine::ExpertUsage& u = r.stats.experts;
    const model::Hparams& hp     = fx().target.hparams();
    ASSERT_FALSE(u.empty());
    EXPECT_EQ(u.n_expert, hp.n_expert);
    EXPECT_EQ(u.n_layer, hp.n_layer);
    EXPECT_EQ(std::accumulate(u.width_passes.begin(), u.width_passes.end(), int64_t(0)), r.stats.n_steps);
    int64_t tokens = 0;
    for (size_t w = 0; w < u.width_passes.size(); ++w) {
        tokens += int64_t(w) * u.width_passes[w];
        if (u.width_passes[w] == 0) continue;
        EXPECT_GE(u.mean_distinct(w), double(hp.n_expert_used)) << w;
        EXPECT_LE(u.mean_distinct(w), double(std::min<int64_t>(hp.n_expert, int64_t(w) * hp.n_expert_used))) << w;
    }
    EXPECT_EQ(std::accumulate(u.hist.begin(), u.hist.end(), int64_t(0)), tokens * hp.n_expert_used * hp.n_layer)
        << "every verified token's experts, in every layer";
    const std::vector<double> usage = u.usage();
    EXPECT_NEAR(std::accumulate(usage.begin(), usage.end(), 0.0), double(hp.n_expert_used), 1e-9);
    // The target's bytes count the distinct experts read, not the per-token model.
    EXPECT_GT(r.stats.levels[0].bytes_weights, 0u);
    engine::RunStats twice = r.stats;
    engine::accumulate(twice, r.stats);
    EXPECT_EQ(twice.experts.width_passes[4], 2 * u.width_passes[4]);
    const nlohmann::json j = r.stats;
    EXPECT_TRUE(j.contains("experts"));
    EXPECT_FALSE(nlohmann::json(engine::RunStats{}).contains("experts")) << "dense runs keep their report";
    // The measured verification cost curve (the Speedup panel's): every width that ran, its mean pass, and the
    // distinct experts it read; in plain decoding steps once there is a baseline.
    const std::vector<engine::VerifyCost> curve = r.stats.verify_cost_curve();
    ASSERT_FALSE(curve.empty());
    int64_t passes = 0;
    for (const engine::VerifyCost& v : curve) {
        passes += v.passes;
        EXPECT_DOUBLE_EQ(v.seconds, r.stats.verify_width_s[size_t(v.width)] / double(v.passes));
        EXPECT_DOUBLE_EQ(v.distinct_experts, u.mean_distinct(size_t(v.width)));
        EXPECT_EQ(v.steps, 0.0) << "no baseline in this run";
    }
    EXPECT_EQ(passes, r.stats.n_steps);
    engine::RunStats with_base      = r.stats;
    with_base.baseline_tokens_per_s = 200.0;
    EXPECT_DOUBLE_EQ(with_base.verify_cost_curve()[0].steps, curve[0].seconds * 200.0);
}

// The bits a self-draft of a MoE target reads per forward count the experts a token uses, as the built draft does.
TEST(EngineMoe, DraftBitsCountTheUsedExperts) {
    drafts::DraftSpec same, fewer;
    fewer.experts_used          = 1;
    const drafts::DraftBits all = drafts::draft_bits(same, fx().target);
    const drafts::DraftBits one = drafts::draft_bits(fewer, fx().target);
    const drafts::SelfDraft d   = drafts::build_self_draft(fx().target, fewer);
    EXPECT_LT(one.weight_bytes_per_forward_real, all.weight_bytes_per_forward_real);
    EXPECT_NEAR(double(all.weight_bytes_per_forward_real), double(fx().target.weight_bytes_per_token()),
                0.01 * double(fx().target.weight_bytes_per_token()));
    EXPECT_NEAR(double(one.weight_bytes_per_forward_real), double(d.model.weight_bytes_per_token()),
                0.01 * double(d.model.weight_bytes_per_token()));
}

// CATS's stage bytes per pass count a token's experts; its resident set counts every expert.
TEST(EngineMoe, CatsLayerBytesCountTheUsedExperts) {
    const model::Model& t        = fx().target;
    const model::Hparams& hp     = t.hparams();
    const model::LayerWeights& L = t.weights().layers[0];
    const uint64_t all_experts   = L.w_gate.n_bytes() + L.w_up.n_bytes() + L.w_down.n_bytes();
    EXPECT_EQ(engine::layer_bytes(t, 0, 1, true) - engine::layer_bytes(t, 0, 1),
              all_experts - L.expert_bytes(hp.n_expert) * uint64_t(hp.n_expert_used));
}
