// Multi-token-prediction heads (issue #28, item 2): GGUF files with NextN blocks in llama.cpp's layout load (the
// main forward ignores the extra block), bad files are refused by name, the target's cache keeps its states, the
// MTP layer's arithmetic follows llama.cpp's (embedding half first, the target's state after its final norm), and
// greedy runs with the MTP draft are lossless, with drafts accepted when the head predicts the target.
#include "engine_fixtures.h"

#include "core/drafts/make_drafter.h"
#include "core/drafts/mtp_drafter.h"
#include "core/model/gguf.h"
#include "core/model/gguf_writer.h"
#include "core/model/model_gguf.h"
#include "core/model/rope.h"
#include "kernels/gemv.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

namespace speculum::test {
namespace {

model::SyntheticSpec mtp_spec() {
    model::SyntheticSpec s = engine_target_spec();
    s.n_nextn              = 1;
    return s;
}

TEST(MtpModel, NextnBlocksLoadInLlamaCppsLayoutAndTheMainForwardIgnoresThem) {
    const std::filesystem::path dir = tmp_dir() / "mtp";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "mtp.gguf").string();
    model::write_synthetic_gguf(mtp_spec(), path);
    const model::GgufFile f = model::GgufFile::open(path);
    EXPECT_EQ(f.get_uint("llama.block_count"), uint64_t(mtp_spec().n_layer + 1));
    EXPECT_EQ(f.get_uint("llama.nextn_predict_layers"), 1u);
    const std::string blk = "blk." + std::to_string(mtp_spec().n_layer) + ".";
    ASSERT_NE(f.tensor(blk + "nextn.eh_proj.weight"), nullptr);
    EXPECT_EQ(f.tensor(blk + "nextn.eh_proj.weight")->dims,
              (std::vector<uint64_t>{2 * uint64_t(mtp_spec().n_embd), uint64_t(mtp_spec().n_embd)}));
    ASSERT_NE(f.tensor(blk + "attn_q.weight"), nullptr) << "the NextN block is an ordinary block too";

    const model::Model m = model::Model::load(path, {}, {}, model::WeightMemory::mapped);
    EXPECT_EQ(m.hparams().n_layer, mtp_spec().n_layer);
    EXPECT_EQ(m.hparams().n_nextn, 1);
    ASSERT_EQ(m.weights().nextn.size(), 1u);
    EXPECT_TRUE(m.weights().nextn[0].head.empty()) << "no shared_head_head: the model's output";
    // The main forward is the model without its NextN block: the same greedy tokens as the spec without one.
    const model::Model plain = model::make_synthetic_model(engine_target_spec());
    const std::vector<int32_t> prompt{5, 17, 3, 42};
    EXPECT_EQ(greedy_reference(m, prompt, 12), greedy_reference(plain, prompt, 12));
}

TEST(MtpModel, BadNextnMetadataIsRefusedByName) {
    const std::filesystem::path dir = tmp_dir() / "mtp";
    std::filesystem::create_directories(dir);
    const model::Model m = model::make_synthetic_model(mtp_spec());
    auto write           = [&](const std::string& name, int32_t nextn_key, bool with_nextn_tensors) {
        model::GgufWriter g;
        g.set_string("general.architecture", "llama");
        model::add_hparams_metadata(g, m.hparams(), m.hparams().n_layer, with_nextn_tensors ? 1 : 0);
        if (nextn_key >= 0) g.set_uint32("llama.nextn_predict_layers", uint32_t(nextn_key));
        model::add_model_tensors(g, m.hparams(), m.weights(), m.hparams().n_layer, true, with_nextn_tensors);
        const std::string p = (dir / name).string();
        g.write(p);
        return p;
    };
    auto error = [](const std::string& p) {
        try {
            model::Model::load(p);
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    // Every block a NextN block: none left to run.
    EXPECT_NE(error(write("all.gguf", mtp_spec().n_layer + 1, true)).find("nextn_predict_layers"), std::string::npos);
    // NextN tensors without the key: extra tensors are refused, not ignored.
    EXPECT_NE(error(write("nokey.gguf", 0, true)).find("nextn"), std::string::npos);
}

TEST(MtpDrafter, TheLayerFusesTheEmbeddingThenTheTargetsNormedState) {
    const model::Model target = model::make_synthetic_model(mtp_spec());
    model::ContextConfig cfg  = exact_ctx();
    drafts::MtpDrafter d(target, 0, cfg);
    const model::Hparams& hp = target.hparams();
    const int64_t e          = hp.n_embd;
    std::vector<float> h(static_cast<size_t>(e));
    for (int64_t i = 0; i < e; ++i) h[size_t(i)] = std::sin(0.37f * float(i)) * 3.0f;
    const int32_t token = 42, pos = 7;
    // By hand: u = eh_proj [enorm(embed(token)); hnorm(output_norm(h))], then the block and head as a one-layer
    // model given u in place of the embedding.
    const model::NextnWeights& n = target.weights().nextn[0];
    std::vector<float> emb(static_cast<size_t>(e)), hn(static_cast<size_t>(e)), cat(static_cast<size_t>(2 * e)),
        u(static_cast<size_t>(e));
    kernels::dequantize_row(emb.data(), target.weights().token_embd.type, target.weights().token_embd.row(token), e);
    model::rms_norm(cat.data(), emb.data(), n.enorm.data(), e, hp.rms_eps);
    model::rms_norm(hn.data(), h.data(), target.weights().output_norm.data(), e, hp.rms_eps);
    model::rms_norm(cat.data() + e, hn.data(), n.hnorm.data(), e, hp.rms_eps);
    kernels::gemv_ref(u.data(), n.eh_proj.type, n.eh_proj.data, cat.data(), 2 * e, 0, e);
    model::InferenceContext ctx(d.block(), cfg);
    model::ForwardOptions o;
    o.hidden_in                  = u.data();
    const model::LogitsView want = ctx.forward_batch({token}, {pos}, {}, o);
    const std::vector<float> got = d.logits_for(h.data(), token, pos);
    ASSERT_EQ(got.size(), size_t(hp.n_vocab));
    for (int32_t v = 0; v < hp.n_vocab; ++v) ASSERT_NEAR(got[size_t(v)], want.row(0)[size_t(v)], 1e-4f) << v;
    // The order matters: the state half first gives other logits.
    std::swap_ranges(cat.begin(), cat.begin() + e, cat.begin() + e);
    kernels::gemv_ref(u.data(), n.eh_proj.type, n.eh_proj.data, cat.data(), 2 * e, 0, e);
    model::InferenceContext ctx2(d.block(), cfg);
    const model::LogitsView swapped = ctx2.forward_batch({token}, {pos}, {}, o);
    double diff                     = 0;
    for (int32_t v = 0; v < hp.n_vocab; ++v) diff += std::fabs(swapped.row(0)[size_t(v)] - got[size_t(v)]);
    EXPECT_GT(diff, 1e-2);
}

TEST(MtpDrafter, TargetWithoutNextnLayersIsAClearError) {
    const model::Model target = model::make_synthetic_model(engine_target_spec());
    drafts::DraftSpec s;
    s.kind = drafts::DraftKind::mtp;
    try {
        drafts::make_drafter(s, target);
        ADD_FAILURE() << "no error";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("no MTP head"), std::string::npos) << e.what();
    }
}

// The head's weights as a copy of a layer that makes it predict "the token just seen": a block that adds nothing
// (zero output projections) and a fusion that passes the embedding half through, so the head reads
// norm(embed(token)) and, with a tied output, prefers the same token. On a target that repeats a token, such a
// head's drafts are accepted.
model::Model echo_head_target() {
    model::SyntheticSpec s = mtp_spec();
    s.tied_output          = true;
    const model::Model m   = model::make_synthetic_model(s);
    model::ModelWeights w  = m.weights();
    model::NextnWeights& n = w.nextn[0];
    const int64_t e        = m.hparams().n_embd;
    std::vector<float> eh(static_cast<size_t>(e * 2 * e), 0.0f);
    for (int64_t r = 0; r < e; ++r) eh[size_t(r * 2 * e + r)] = 1.0f;
    std::vector<uint8_t> bytes(eh.size() * 4);
    std::memcpy(bytes.data(), eh.data(), bytes.size());
    n.eh_proj = model::make_owned_view(kernels::GgmlType::F32, e, 2 * e, std::move(bytes));
    for (model::WeightView* v : {&n.block.wo, &n.block.w_down}) {
        std::vector<uint8_t> zero(size_t(v->rows * v->cols) * 4, 0);
        *v = model::make_owned_view(kernels::GgmlType::F32, v->rows, v->cols, std::move(zero));
    }
    n.enorm.assign(size_t(e), 1.0f);
    n.head_norm.clear();
    return model::Model::from_weights(m.hparams(), std::move(w), "echo-head target");
}

TEST(MtpDrafter, GreedyRunsAreLosslessAndAnEchoHeadIsAccepted) {
    const std::vector<int32_t> prompt{5, 17, 3, 42, 17, 3, 42, 8, 60, 11};
    for (bool echo : {false, true}) {
        SCOPED_TRACE(echo ? "echo head" : "random head");
        const model::Model target    = echo ? echo_head_target() : model::make_synthetic_model(mtp_spec());
        const std::vector<int32_t> r = greedy_reference(target, prompt, 40);
        drafts::DraftSpec s;
        s.kind                 = drafts::DraftKind::mtp;
        engine::SpecConfig cfg = lossless_config(3);
        cfg.levels             = {s};
        ASSERT_NO_THROW(cfg.validate(target.hparams().n_layer));
        drafts::DrafterOptions o;
        o.context = exact_ctx();
        for (bool tree : {false, true}) {
            engine::SpecConfig c = cfg;
            if (tree) c.verification = engine::Verification::tree, c.tree.branching = {2, 1, 1};
            const engine::RunResult res =
                engine::SpecEngine(target, c, std::shared_ptr<drafts::Drafter>(drafts::make_drafter(s, target, o)))
                    .run(prompt);
            EXPECT_EQ(res.tokens, r) << (tree ? "tree" : "chain");
            ASSERT_GE(res.stats.levels.size(), 2u);
            EXPECT_GT(res.stats.levels[1].n_forward, 0) << "the MTP layer ran";
            // One pass per call to catch up and draft the first token, one per further token: at most gamma.
            EXPECT_LE(res.stats.levels[1].n_forward, 3 * res.stats.levels[1].n_calls);
            EXPECT_GT(res.stats.n_drafted, 0);
            if (echo) EXPECT_GT(res.stats.n_accepted, 0) << "the echo head's drafts were accepted";
            if (tree) {  // the head's second choice is offered beside its first at the first depth
                const engine::RankCounts& rc = res.stats.rank_counts;
                ASSERT_FALSE(rc.offered.empty());
                ASSERT_GE(rc.offered[0].size(), 2u);
                EXPECT_GT(rc.offered[0][1], 0);
            }
        }
    }
}

}  // namespace
}  // namespace speculum::test
