// Hybrid Gated DeltaNet models (qwen35, qwen35moe; issue #50): the file layout loads back to the model written, a
// batched pass equals the same tokens one at a time, the recurrent state rolls back exactly with either strategy
// (per-token snapshots, or re-running the kept tokens from a checkpoint), a token tree's per-branch states equal the
// chain of its accepted path, and what cannot be rolled back is refused. Agreement with llama.cpp's logits is
// parity_test.cpp's (qwen35-*.json, qwen35moe-*.json); speculation on these targets is engine_hybrid_test.cpp's.
#include "core/cancel.h"
#include "core/model/forward.h"
#include "core/model/gguf_writer.h"
#include "core/model/model_gguf.h"
#include "core/model/synthetic.h"
#include "model_fixtures.h"
#include "support/fresh_path.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace speculum;
using namespace speculum::model;
using kernels::GgmlType;

namespace {

SyntheticSpec hybrid_spec(const std::string& arch, GgmlType t = GgmlType::F32) {
    SyntheticSpec s = test::spec_arch(arch, t);
    s.n_vocab = 256, s.n_layer = 4, s.n_embd_head = 32, s.n_rot = 8;  // 0-2 DeltaNet, 3 gated attention
    s.ssm_d_state = 16, s.ssm_n_group = 2, s.ssm_dt_rank = 4;
    if (arch == "qwen35moe") s.n_expert = 8, s.n_expert_used = 2, s.n_ff_exp = 32, s.n_ff_shexp = 64;
    return s;
}

ContextConfig ctx_of(RollbackStrategy r, ForwardPath p = ForwardPath::reference) {
    ContextConfig c{.n_ctx = 128, .n_batch = 32, .path = p};
    c.rollback = r;
    return c;
}

double max_diff(std::span<const float> a, std::span<const float> b) {
    double d = 0;
    for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(double(a[i]) - double(b[i])));
    return d;
}

std::vector<float> copy(std::span<const float> s) {
    return {s.begin(), s.end()};
}

// Logits of the last of `tokens` fed one at a time to a fresh context.
std::vector<float> sequential(const Model& m, const std::vector<int32_t>& tokens, ContextConfig c) {
    InferenceContext ctx(m, c);
    std::span<const float> l;
    for (size_t i = 0; i < tokens.size(); ++i) l = ctx.decode(tokens[i], int32_t(i));
    return copy(l);
}

const std::vector<int32_t> kPrompt{1, 17, 200, 33, 5, 250, 99, 128, 7, 64};

}  // namespace

TEST(Hybrid, HparamsAndTensorsRoundTripThroughGguf) {
    for (const char* arch : {"qwen35", "qwen35moe"}) {
        SCOPED_TRACE(arch);
        const SyntheticSpec s = hybrid_spec(arch);
        const Model mem       = make_synthetic_model(s);
        const std::string p   = test::fresh_tmp_path(std::string(arch) + ".gguf").string();
        write_synthetic_gguf(s, p);
        const Model file = Model::load(p);
        EXPECT_EQ(file.hparams(), mem.hparams());
        EXPECT_EQ(file.hparams().recurrent_layers, (std::vector<uint8_t>{1, 1, 1, 0}));
        EXPECT_TRUE(file.hparams().attn_gate);
        EXPECT_EQ(file.weights().layers[0].ssm_conv1d, mem.weights().layers[0].ssm_conv1d);
        EXPECT_TRUE(file.weights().layers[0].wq.empty()) << "a DeltaNet layer has no attention matrices";
        EXPECT_EQ(file.weights().layers[3].wq.rows, 2 * file.hparams().n_embd_q()) << "query and gate rows";
        const GgufFile f = GgufFile::open(p);
        EXPECT_EQ(f.get_uint(std::string(arch) + ".full_attention_interval"), 4u);
        EXPECT_NE(f.tensor("blk.0.ssm_a"), nullptr);
        EXPECT_EQ(f.tensor("blk.0.attn_output.weight"), nullptr);
        const std::vector<float> a = sequential(mem, kPrompt, ctx_of(RollbackStrategy::snapshot));
        const std::vector<float> b = sequential(file, kPrompt, ctx_of(RollbackStrategy::snapshot));
        EXPECT_EQ(max_diff(a, b), 0.0);
        // No KV rows for the DeltaNet layers: one attention layer of four keeps them.
        InferenceContext ctx(file, ctx_of(RollbackStrategy::snapshot));
        EXPECT_EQ(ctx.kv().n_kv_layers(), 1);
        EXPECT_EQ(ctx.kv().recurrent().layers(), 3);
    }
}

TEST(Hybrid, RopeSectionsTurnOnlyTheTextAxesPairs) {
    Hparams hp;
    hp.rope_sections = {11, 11, 10, 0}, hp.rope_interleaved = true;  // Qwen 3.5: all 32 pairs turn
    for (int32_t i = 0; i < 32; ++i) EXPECT_TRUE(hp.rope_pair_rotates(i)) << i;
    hp.rope_sections = {2, 1, 1, 2};  // interleaved t h w t ... then the fourth axis (position 0)
    EXPECT_TRUE(hp.rope_pair_rotates(0));
    EXPECT_TRUE(hp.rope_pair_rotates(3));
    EXPECT_FALSE(hp.rope_pair_rotates(4));  // sector 4: h only below 3 * 1
    EXPECT_FALSE(hp.rope_pair_rotates(5));
    hp.rope_interleaved = false;  // in blocks: t t h w e e
    EXPECT_TRUE(hp.rope_pair_rotates(3));
    EXPECT_FALSE(hp.rope_pair_rotates(4));
    EXPECT_TRUE(hp.rope_pair_rotates(6)) << "sectors wrap every sum(sections) pairs";
}

// A batched causal pass equals the same tokens decoded one at a time (the state runs token by token either way).
TEST(Hybrid, BatchedPassEqualsTokensOneAtATime) {
    for (const char* arch : {"qwen35", "qwen35moe"})
        for (const ForwardPath p : {ForwardPath::reference, ForwardPath::fast}) {
            SCOPED_TRACE(std::string(arch) + (p == ForwardPath::fast ? " fast" : " reference"));
            const Model m = make_synthetic_model(hybrid_spec(arch));
            InferenceContext batch(m, ctx_of(RollbackStrategy::snapshot, p));
            std::vector<int32_t> pos(kPrompt.size());
            for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
            const LogitsView v = batch.forward_batch(kPrompt, pos);
            InferenceContext one(m, ctx_of(RollbackStrategy::snapshot, p));
            for (size_t i = 0; i < kPrompt.size(); ++i) {
                const std::vector<float> l = copy(one.decode(kPrompt[i], int32_t(i)));
                EXPECT_LT(max_diff(l, v.row(int32_t(i))), 1e-4) << "position " << i;
            }
        }
}

// Verify a chain of draft tokens, keep the first `accept`, then continue: the next logits equal those of a context
// that never saw the rejected tokens, with either strategy, on both architectures; the strategies agree bit for bit.
TEST(Hybrid, RollbackRestoresTheStateExactlyWithEitherStrategy) {
    const std::vector<int32_t> draft{44, 45, 46, 47, 48, 49};
    for (const char* arch : {"qwen35", "qwen35moe"}) {
        const Model m = make_synthetic_model(hybrid_spec(arch));
        for (const int32_t accept : {0, 2, 6}) {
            SCOPED_TRACE(std::string(arch) + " accept " + std::to_string(accept));
            std::vector<int32_t> kept = kPrompt;
            kept.insert(kept.end(), draft.begin(), draft.begin() + accept);
            kept.push_back(90);  // the next token
            const std::vector<float> want = sequential(m, kept, ctx_of(RollbackStrategy::snapshot));
            std::vector<std::vector<float>> got;
            for (const RollbackStrategy r : {RollbackStrategy::snapshot, RollbackStrategy::rerun}) {
                InferenceContext ctx(m, ctx_of(r));
                ctx.prefill(kPrompt);
                ctx.kv().commit();  // the prompt is committed: a rerun starts after it
                std::vector<int32_t> pos(draft.size());
                for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(kPrompt.size() + i);
                ctx.forward_batch(draft, pos);
                ctx.kv().truncate(int32_t(kPrompt.size()) + accept);
                got.push_back(copy(ctx.decode(90, ctx.kv().size())));
                EXPECT_LT(max_diff(got.back(), want), 1e-4) << to_string(r);
                if (accept < 6) {
                    EXPECT_EQ(ctx.kv().recurrent().stats().rollbacks, 1u);
                }
                if (r == RollbackStrategy::rerun && accept < 6) {
                    EXPECT_EQ(ctx.kv().recurrent().stats().tokens_rerun, uint64_t(accept))
                        << "the kept draft tokens ran again, the prompt did not";
                }
            }
            EXPECT_EQ(max_diff(got[0], got[1]), 0.0) << "snapshot and rerun restore the same bits";
        }
    }
}

// Draft chains decoded one pass per token then rolled back together (what a self-draft's context does), over
// several rounds: every round's logits equal a fresh context's.
TEST(Hybrid, MultiPassSpeculationRollsBackAcrossPasses) {
    const Model m = make_synthetic_model(hybrid_spec("qwen35"));
    for (const RollbackStrategy r : {RollbackStrategy::snapshot, RollbackStrategy::rerun}) {
        SCOPED_TRACE(to_string(r));
        InferenceContext ctx(m, ctx_of(r));
        std::vector<int32_t> committed = kPrompt;
        ctx.prefill(committed);
        ctx.kv().commit();  // speculation begins: passes keep what a rollback needs
        for (int32_t round = 0; round < 4; ++round) {
            const int32_t base = ctx.kv().size();
            for (int32_t j = 0; j < 3; ++j) ctx.decode(60 + round + j, base + j);  // three drafted tokens
            ctx.kv().truncate(base + 1);                                           // one accepted
            committed.push_back(60 + round);
            const int32_t next           = 80 + round;
            const std::vector<float> got = copy(ctx.decode(next, ctx.kv().size()));
            committed.push_back(next);
            EXPECT_LT(max_diff(got, sequential(m, committed, ctx_of(r))), 1e-4) << "round " << round;
        }
    }
}

// A token tree: every node runs from its parent's state (per-branch states); compacting the accepted path leaves
// the state of that path, so the next token's logits equal a chain's.
TEST(Hybrid, TreePassesRunEachBranchFromItsParentsState) {
    // root r; children a (1), b (2); a's children c (3), d (4); b's child e (5)
    const std::vector<int32_t> toks{70, 71, 72, 73, 74, 75};
    const std::vector<int32_t> parent{-1, 0, 0, 1, 1, 2};
    const int32_t n = int32_t(toks.size());
    std::vector<uint8_t> mask(static_cast<size_t>(n * n), 0);
    std::vector<int32_t> depth(static_cast<size_t>(n), 0);
    for (int32_t i = 0; i < n; ++i) {
        if (parent[size_t(i)] >= 0) {
            std::copy_n(&mask[size_t(parent[size_t(i)] * n)], n, &mask[size_t(i * n)]);
            depth[size_t(i)] = depth[size_t(parent[size_t(i)])] + 1;
        }
        mask[size_t(i * n + i)] = 1;
    }
    const Model m = make_synthetic_model(hybrid_spec("qwen35moe"));
    for (const RollbackStrategy r : {RollbackStrategy::snapshot, RollbackStrategy::rerun}) {
        SCOPED_TRACE(to_string(r));
        InferenceContext ctx(m, ctx_of(r));
        ctx.prefill(kPrompt);
        ctx.kv().commit();
        const int32_t base = ctx.kv().size();
        std::vector<int32_t> pos(static_cast<size_t>(n));
        for (int32_t i = 0; i < n; ++i) pos[size_t(i)] = base + depth[size_t(i)];
        const LogitsView v = ctx.forward_batch(toks, pos, mask);
        // Each node's logits equal the chain root .. node.
        for (const std::vector<int32_t>& path : {std::vector<int32_t>{0, 1, 4}, {0, 2, 5}}) {
            std::vector<int32_t> chain = kPrompt;
            for (int32_t node : path) chain.push_back(toks[size_t(node)]);
            EXPECT_LT(max_diff(v.row(path.back()), sequential(m, chain, ctx_of(r))), 1e-4);
        }
        ctx.kv().compact(base, {base + 0, base + 2, base + 5});  // accept root, b, e
        std::vector<int32_t> chain = kPrompt;
        for (int32_t node : {0, 2, 5}) chain.push_back(toks[size_t(node)]);
        const std::vector<float> got = copy(ctx.decode(91, ctx.kv().size()));
        chain.push_back(91);
        EXPECT_LT(max_diff(got, sequential(m, chain, ctx_of(r))), 1e-4);
    }
}

TEST(Hybrid, WhatCannotBeRolledBackIsRefused) {
    const Model m   = make_synthetic_model(hybrid_spec("qwen35"));
    ContextConfig c = ctx_of(RollbackStrategy::snapshot);
    c.max_rollback  = 4;
    InferenceContext ctx(m, c);
    ctx.prefill(kPrompt);  // longer than max_rollback: nothing kept per token
    EXPECT_EQ(ctx.kv().restorable(5), 0) << "inside the prompt: start again";
    EXPECT_EQ(ctx.kv().restorable(int32_t(kPrompt.size())), int32_t(kPrompt.size()));
    EXPECT_THROW(ctx.kv().truncate(5), std::logic_error);
    EXPECT_EQ(ctx.kv().restorable(0), 0) << "a pass that kept nothing can still be undone whole";
    // A mask that is not a tree (token 2 sees token 0 but not its parent 1's path) is refused by name.
    std::vector<uint8_t> bad{1, 0, 0, 0, 1, 0, 1, 1, 1};  // row 2 sees 0 and 1, but 1 does not see 0
    try {
        ctx.forward_batch({1, 2, 3}, {10, 11, 11}, bad);
        FAIL() << "expected a refusal";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("not a token tree"), std::string::npos) << e.what();
    }
    EXPECT_EQ(ctx.kv().size(), int32_t(kPrompt.size())) << "the refused pass changed nothing";
    // A cancelled pass leaves the recurrent state as it was.
    const std::vector<float> before = sequential(m, {1, 17, 200, 33, 5, 250, 99, 128, 7, 64, 90}, c);
    CancelToken cancel;
    ctx.set_cancel(cancel);
    cancel.cancel();
    EXPECT_THROW(ctx.forward_batch({44, 45}, {10, 11}), Cancelled);
    ctx.set_cancel({});
    EXPECT_LT(max_diff(ctx.decode(90, 10), before), 1e-4);
}

// Plain decoding (no commit) keeps nothing per token; a pass can still be undone whole.
TEST(Hybrid, PlainDecodingKeepsNothing) {
    const Model m = make_synthetic_model(hybrid_spec("qwen35"));
    InferenceContext ctx(m, ctx_of(RollbackStrategy::snapshot));
    for (int32_t i = 0; i < 8; ++i) ctx.decode(kPrompt[size_t(i)], i);
    EXPECT_EQ(ctx.kv().recurrent().stats().tokens_kept, 0u);
    EXPECT_EQ(ctx.kv().restorable(6), 0);
    ctx.kv().truncate(7);  // the last pass, whole
    EXPECT_LT(max_diff(copy(ctx.decode(90, 7)),
                       sequential(m, {1, 17, 200, 33, 5, 250, 99, 90}, ctx_of(RollbackStrategy::snapshot))),
              1e-4);
}

TEST(Hybrid, ConfigChoosesTheStrategyAndRoundTrips) {
    ContextConfig c;
    EXPECT_EQ(c.rollback, RollbackStrategy::snapshot);
    c.rollback = RollbackStrategy::rerun, c.max_rollback = 17;
    nlohmann::json j = c;
    EXPECT_EQ(j["rollback"], "rerun");
    EXPECT_EQ(j.get<ContextConfig>(), c);
    j["rollback"] = "checkpoint";
    EXPECT_THROW(j.get<ContextConfig>(), std::invalid_argument);
    c.max_rollback = 0;
    EXPECT_THROW(c.validate(), std::invalid_argument);
}

// Memory held for rollback: snapshots grow by a whole state per kept token, rerun by one token's inputs.
TEST(Hybrid, SnapshotsHoldStatesRerunHoldsInputs) {
    const Model m    = make_synthetic_model(hybrid_spec("qwen35"));
    uint64_t held[2] = {0, 0};
    for (const RollbackStrategy r : {RollbackStrategy::snapshot, RollbackStrategy::rerun}) {
        InferenceContext ctx(m, ctx_of(r));
        ctx.prefill({1, 2, 3});
        ctx.kv().commit();
        std::vector<int32_t> pos{3, 4, 5, 6, 7, 8, 9, 10};
        ctx.forward_batch({4, 5, 6, 7, 8, 9, 10, 11}, pos);
        held[r == RollbackStrategy::rerun] = ctx.kv().recurrent().rollback_bytes();
        const DeltaNetShape s              = ctx.kv().recurrent().shape();
        const uint64_t layers = 3, f = sizeof(float);
        // The prompt keeps nothing per token; the 8-token pass keeps from its start (3 tokens).
        if (r == RollbackStrategy::snapshot)
            EXPECT_EQ(held[0], 9 * layers * uint64_t(s.state_floats()) * f) << "the states after 3 .. 11 tokens";
        else
            EXPECT_EQ(held[1], layers * uint64_t(s.state_floats() + 8 * s.input_floats()) * f);
    }
    EXPECT_LT(held[1], held[0]);
}
