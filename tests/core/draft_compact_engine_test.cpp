// Greedy speculative decoding with compact self-drafts (issue #21) is lossless and accepts drafts: Cassandra-style
// pruned + truncated BF16 drafts and a pruned Q8_0 draft, chains and a tree, on the reference path (a batched pass
// equals sequential decoding bit for bit, so the outputs compare exactly); each run reports the draft's bytes as
// measured, not modeled. Self-drafts that read the target's KV cache (KV selection as in Cassandra) are lossless too.
#include "engine_fixtures.h"

#include "core/drafts/make_drafter.h"
#include "core/drafts/model_drafter.h"

#include <gtest/gtest.h>

namespace speculum::test {
namespace {

const std::vector<int32_t> kPrompt{5, 17, 3, 42, 17, 3, 42, 8, 60, 11};
constexpr int32_t kNew = 40;

engine::SpecConfig config(const drafts::DraftSpec& d, int32_t gamma) {
    engine::SpecConfig c;
    c.levels         = {d};
    c.gamma          = {gamma};
    c.max_new_tokens = kNew;
    c.context        = exact_ctx();
    c.baseline       = false;
    return c;
}

TEST(CompactDraftEngine, GreedyRunsAreLosslessAndAcceptDrafts) {
    struct Case {
        kernels::GgmlType type;
        float prune;
        int32_t trunc;
        bool tree;
    };
    for (const Case& k :
         {Case{kernels::GgmlType::BF16, 0.5f, 4, false}, Case{kernels::GgmlType::BF16, 0.25f, 2, true},
          Case{kernels::GgmlType::BF16, 0.0f, 6, false}, Case{kernels::GgmlType::Q8_0, 0.4f, 0, false}}) {
        SCOPED_TRACE(std::string(kernels::ggml_type_traits(k.type)->name) + " p " + std::to_string(k.prune) + " t " +
                     std::to_string(k.trunc));
        model::SyntheticSpec ts        = engine_target_spec();
        ts.type                        = k.type;
        const model::Model target      = model::make_synthetic_model(ts);
        const std::vector<int32_t> ref = greedy_reference(target, kPrompt, kNew);
        drafts::DraftSpec d;
        d.prune.ratio          = k.prune;
        d.weight_trunc_bits    = k.trunc;
        engine::SpecConfig cfg = config(d, 4);
        if (k.tree) cfg.verification = engine::Verification::tree;
        drafts::DrafterOptions o;
        o.context = exact_ctx();
        engine::SpecEngine eng(target, cfg, std::shared_ptr<drafts::Drafter>(drafts::make_drafter(d, target, o)));
        const engine::RunResult r = eng.run(kPrompt);
        EXPECT_EQ(r.tokens, ref);
        EXPECT_GT(r.stats.n_accepted, 0) << "no draft token was accepted";
        ASSERT_GE(r.stats.levels.size(), 2u);
        EXPECT_FALSE(r.stats.levels[1].bytes_modeled);
        EXPECT_GT(r.stats.levels[1].bytes_weights, 0u);
    }
}

}  // namespace
}  // namespace speculum::test

namespace speculum::test {
namespace {

struct SharedRun {
    engine::RunResult result;
    int64_t from_target = 0;
};

SharedRun run_self_draft(const model::Model& target, drafts::DraftSpec d, bool tree = false) {
    drafts::DrafterOptions o;
    o.context = exact_ctx();
    std::shared_ptr<drafts::Drafter> dr(drafts::make_drafter(d, target, o));
    auto* md               = dynamic_cast<drafts::ModelDrafter*>(dr.get());
    engine::SpecConfig cfg = config(d, 4);
    if (tree) cfg.verification = engine::Verification::tree;
    engine::SpecEngine eng(target, cfg, dr);
    SharedRun r{eng.run(kPrompt), 0};
    r.from_target = md ? md->tokens_from_target() : -1;
    return r;
}

// Cassandra's self-draft reads the target's cache (a selected, truncated view of it) for every committed token the
// target has evaluated, so it runs no prefill and no catch-up of its own; greedy decoding stays lossless.
TEST(SharedKvDraft, ReadsTheTargetsCacheLosslessly) {
    model::SyntheticSpec ts        = engine_target_spec();
    ts.type                        = kernels::GgmlType::BF16;
    const model::Model target      = model::make_synthetic_model(ts);
    const std::vector<int32_t> ref = greedy_reference(target, kPrompt, kNew);

    // The identity self-draft reading the target's own K/V computes the target's own logits: every greedy draft
    // token is accepted, and the prompt came from the target's cache, not a draft prefill.
    drafts::DraftSpec id;
    const SharedRun a = run_self_draft(target, id);
    EXPECT_EQ(a.result.tokens, ref);
    EXPECT_GT(a.result.stats.n_drafted, 0);
    EXPECT_EQ(a.result.stats.n_accepted, a.result.stats.n_drafted);
    EXPECT_GE(a.from_target, int64_t(kPrompt.size()) - 1);

    // Pruned + truncated weights with KV selection and truncation on the target's cache: lossless, accepts drafts,
    // copies from the target; the same draft with its own cache copies nothing.
    for (bool tree : {false, true}) {
        SCOPED_TRACE(tree ? "tree" : "chain");
        drafts::DraftSpec d;
        d.prune.ratio       = 0.3f;
        d.weight_trunc_bits = 3;
        d.kv_drop_ratio     = 0.25f;
        d.kv_trunc_bits     = 4;
        const SharedRun s   = run_self_draft(target, d, tree);
        EXPECT_EQ(s.result.tokens, ref);
        EXPECT_GT(s.result.stats.n_accepted, 0);
        EXPECT_GT(s.from_target, int64_t(kPrompt.size()));
        d.kv_from_target  = false;
        const SharedRun o = run_self_draft(target, d, tree);
        EXPECT_EQ(o.result.tokens, ref);
        EXPECT_GT(o.result.stats.n_accepted, 0);
        EXPECT_EQ(o.from_target, 0);
    }
}

}  // namespace
}  // namespace speculum::test
