// Greedy speculative decoding with compact self-drafts (issue #21) is lossless and accepts drafts: Cassandra-style
// pruned + truncated BF16 drafts, a pruned Q8_0 draft, chains and a tree, on the reference path (a batched pass
// equals sequential decoding bit for bit, so the outputs compare exactly). Each run also reports the draft's bytes
// as measured, not modeled.
#include "engine_fixtures.h"

#include "core/drafts/make_drafter.h"

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
    for (const Case& k : {Case{kernels::GgmlType::BF16, 0.5f, 4, false}, Case{kernels::GgmlType::BF16, 0.25f, 2, true},
                          Case{kernels::GgmlType::BF16, 0.0f, 6, false}, Case{kernels::GgmlType::Q8_0, 0.4f, 0, false}}) {
        SCOPED_TRACE(std::string(kernels::ggml_type_traits(k.type)->name) + " p " + std::to_string(k.prune) + " t " +
                     std::to_string(k.trunc));
        model::SyntheticSpec ts = engine_target_spec();
        ts.type                 = k.type;
        const model::Model target = model::make_synthetic_model(ts);
        const std::vector<int32_t> ref = greedy_reference(target, kPrompt, kNew);
        drafts::DraftSpec d;
        d.prune.ratio       = k.prune;
        d.weight_trunc_bits = k.trunc;
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
