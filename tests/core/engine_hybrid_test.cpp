// Speculative decoding on hybrid Gated DeltaNet targets (qwen35, qwen35moe; issue #50): greedy verification is
// lossless with chains and trees under both rollback strategies, with self-drafts (the target itself, an early exit,
// a draft that skips DeltaNet layers) and with the file's own MTP (NextN) layer, chained several steps; drafts are
// accepted; the run reports what rolling the recurrent state back cost.
#include "core/drafts/make_drafter.h"
#include "core/engine/engine.h"
#include "core/model/synthetic.h"
#include "engine_fixtures.h"

#include <gtest/gtest.h>

#include <cstring>

using namespace speculum;
using namespace speculum::test;

namespace {

const std::vector<int32_t> kPrompt{5, 17, 3, 42, 17, 3, 42, 8, 60, 11, 5, 17};
constexpr int32_t kNew = 24;

model::SyntheticSpec hybrid_target_spec(const std::string& arch, int32_t n_nextn = 0) {
    model::SyntheticSpec s = engine_target_spec(4, 31);
    s.arch = arch, s.n_embd_head = 32, s.n_rot = 8, s.ssm_d_state = 16, s.n_nextn = n_nextn;
    if (arch == "qwen35moe") s.n_expert = 8, s.n_expert_used = 2, s.n_ff_exp = 32, s.n_ff_shexp = 64;
    return s;
}

engine::SpecConfig config(model::RollbackStrategy r, bool tree) {
    engine::SpecConfig c = lossless_config(4);
    c.max_new_tokens     = kNew;
    c.context.rollback   = r;
    if (tree) {
        c.verification   = engine::Verification::tree;
        c.tree.kind      = engine::TreeKind::static_shape;
        c.tree.branching = {2, 2, 1};
    }
    return c;
}

std::shared_ptr<drafts::Drafter> drafter(const drafts::DraftSpec& s, const model::Model& target,
                                         model::RollbackStrategy r) {
    drafts::DrafterOptions o;
    o.context          = exact_ctx();
    o.context.rollback = r;
    return drafts::make_drafter(s, target, o);
}

// A hybrid target whose layers add nothing (DeltaNet and attention outputs and the FFNs' down matrices zero) with a
// tied head, and an MTP layer that echoes its input token: the target repeats its last token and the MTP head
// predicts a repeat, so its drafts are accepted while the recurrent layers still run and roll back.
model::Model echo_hybrid(const std::string& arch) {
    model::SyntheticSpec s = hybrid_target_spec(arch, 1);
    s.tied_output          = true;
    const model::Model m   = model::make_synthetic_model(s);
    model::ModelWeights w  = m.weights();
    auto zero              = [](model::WeightView& v) {
        std::vector<uint8_t> z(size_t(v.rows * v.cols) * 4, 0);
        v = model::make_owned_view(kernels::GgmlType::F32, v.rows, v.cols, std::move(z));
    };
    for (model::LayerWeights& L : w.layers)
        for (model::WeightView* v : {&L.wo, &L.ssm_out, &L.w_down, &L.w_down_shexp})
            if (!v->empty()) zero(*v);
    w.output_norm.assign(w.output_norm.size(), 1.0f);
    model::NextnWeights& n = w.nextn[0];
    const int64_t e        = m.hparams().n_embd;
    std::vector<float> eh(size_t(e * 2 * e), 0.0f);
    for (int64_t r = 0; r < e; ++r) eh[size_t(r * 2 * e + r)] = 1.0f;
    std::vector<uint8_t> bytes(eh.size() * 4);
    std::memcpy(bytes.data(), eh.data(), bytes.size());
    n.eh_proj = model::make_owned_view(kernels::GgmlType::F32, e, 2 * e, std::move(bytes));
    for (model::WeightView* v : {&n.block.wo, &n.block.w_down, &n.block.w_down_shexp})
        if (!v->empty()) zero(*v);
    n.enorm.assign(size_t(e), 1.0f);
    n.head_norm.clear();
    return model::Model::from_weights(m.hparams(), std::move(w), "echo hybrid " + arch);
}

}  // namespace

TEST(EngineHybrid, SelfDraftsAreLosslessWithEitherRollbackStrategy) {
    for (const char* arch : {"qwen35", "qwen35moe"}) {
        const model::Model target      = model::make_synthetic_model(hybrid_target_spec(arch));
        const std::vector<int32_t> ref = greedy_reference(target, kPrompt, kNew);
        drafts::DraftSpec itself, exit, skip;
        exit.exit_layer = 2;
        skip.skip_attn  = {1, 2};  // two DeltaNet layers skipped: the draft's own state never sees them
        for (const auto& [what, spec, all] :
             {std::tuple{"the target itself", itself, true}, std::tuple{"early exit", exit, false},
              std::tuple{"DeltaNet layers skipped", skip, false}})
            for (const model::RollbackStrategy r : {model::RollbackStrategy::snapshot, model::RollbackStrategy::rerun})
                for (const bool tree : {false, true}) {
                    SCOPED_TRACE(std::string(arch) + ", " + what + ", " + model::to_string(r) +
                                 (tree ? ", tree" : ", chain"));
                    engine::SpecConfig c        = config(r, tree);
                    c.levels[0]                 = spec;
                    const engine::RunResult res = engine::SpecEngine(target, c, drafter(spec, target, r)).run(kPrompt);
                    EXPECT_EQ(res.tokens, ref);
                    EXPECT_GT(res.stats.n_accepted, 0) << "drafts were accepted";
                    if (all && !tree) {
                        EXPECT_EQ(res.stats.n_accepted, res.stats.n_drafted);
                    }
                    const engine::RecurrentReport& rr = res.stats.recurrent;
                    EXPECT_EQ(rr.strategy, model::to_string(r));
                    if (!all || tree) {
                        EXPECT_GT(rr.rollbacks, 0u) << "rejected drafts rolled the state back";
                    }
                    if (r == model::RollbackStrategy::rerun && rr.rollbacks > 0) {
                        EXPECT_GT(rr.tokens_rerun, 0u);
                    }
                    EXPECT_GT(rr.peak_bytes, 0u);
                }
    }
}

TEST(EngineHybrid, TheFilesOwnMtpLayerDraftsChainsAndTreesLosslessly) {
    for (const char* arch : {"qwen35", "qwen35moe"})
        for (const bool echo : {false, true}) {
            const model::Model target =
                echo ? echo_hybrid(arch) : model::make_synthetic_model(hybrid_target_spec(arch, 1));
            const std::vector<int32_t> ref = greedy_reference(target, kPrompt, kNew);
            drafts::DraftSpec s;
            s.kind = drafts::DraftKind::mtp;
            for (const model::RollbackStrategy r : {model::RollbackStrategy::snapshot, model::RollbackStrategy::rerun})
                for (const bool tree : {false, true}) {
                    SCOPED_TRACE(std::string(arch) + (echo ? ", echo" : ", random") + ", " + model::to_string(r) +
                                 (tree ? ", tree" : ", chain"));
                    engine::SpecConfig c        = config(r, tree);
                    c.levels                    = {s};
                    const engine::RunResult res = engine::SpecEngine(target, c, drafter(s, target, r)).run(kPrompt);
                    EXPECT_EQ(res.tokens, ref);
                    EXPECT_GT(res.stats.n_drafted, 0);
                    if (echo) {
                        // (a tree's side branches are drafted and rejected: a tree's share is lower)
                        EXPECT_GT(res.stats.n_accepted, res.stats.n_drafted / (tree ? 4 : 2)) << "the echo's drafts";
                        EXPECT_LT(res.stats.n_steps, kNew / 2) << "several tokens per target pass";
                    }
                }
        }
}

// draft-mtp-adaptive's idea: a chain stops early when the MTP head is unsure (p_min).
TEST(EngineHybrid, PMinStopsAnUnsureMtpChainEarly) {
    const model::Model target      = model::make_synthetic_model(hybrid_target_spec("qwen35", 1));
    const std::vector<int32_t> ref = greedy_reference(target, kPrompt, kNew);
    drafts::DraftSpec s;
    s.kind                  = drafts::DraftKind::mtp;
    engine::SpecConfig all  = config(model::RollbackStrategy::snapshot, false);
    all.levels              = {s};
    engine::SpecConfig sure = all;
    sure.p_min              = 0.99f;  // random weights: the head is never this sure after its first token
    const engine::RunResult a =
        engine::SpecEngine(target, all, drafter(s, target, model::RollbackStrategy::snapshot)).run(kPrompt);
    const engine::RunResult b =
        engine::SpecEngine(target, sure, drafter(s, target, model::RollbackStrategy::snapshot)).run(kPrompt);
    EXPECT_EQ(a.tokens, ref);
    EXPECT_EQ(b.tokens, ref);
    EXPECT_LT(b.stats.n_drafted, a.stats.n_drafted) << "p_min cut chains short";
}

TEST(EngineHybrid, WhatIsNotDoneForHybridsIsRefusedByName) {
    const model::Model target = model::make_synthetic_model(hybrid_target_spec("qwen35"));
    drafts::DraftSpec pruned;
    pruned.prune.ratio = 0.3f;
    try {
        drafter(pruned, target, model::RollbackStrategy::snapshot);
        FAIL() << "pruning a hybrid's self-draft should be refused";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("hybrid"), std::string::npos) << e.what();
    }
    engine::SpecConfig c = config(model::RollbackStrategy::snapshot, false);
    c.verification       = engine::Verification::cats;
    c.cats.draft_layers = 1, c.cats.sv_layers = 2;
    try {
        engine::SpecEngine(target, c, drafter({}, target, model::RollbackStrategy::snapshot)).run(kPrompt);
        FAIL() << "CATS on a hybrid should be refused";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("hybrid"), std::string::npos) << e.what();
    }
}
