// EAGLE-3 heads (issue #28, item 3): llama.cpp's eagle3 GGUF layout loads and bad heads are refused by name, the
// target's cache keeps its streams at the head's extract layers, the head's layer computes what EAGLE-3 defines
// (checked by hand), greedy runs are lossless as chains, static trees and EAGLE-2 dynamic trees, and drafts are
// accepted where the head predicts the target. Plus the dynamic tree expansion itself.
#include "engine_fixtures.h"
#include "head_reference.h"

#include "core/drafts/eagle3.h"
#include "core/drafts/eagle3_drafter.h"
#include "core/drafts/make_drafter.h"
#include "core/drafts/model_drafter.h"
#include "core/model/gguf.h"
#include "core/model/gguf_writer.h"
#include "core/model/rope.h"
#include "core/resources.h"
#include "kernels/gemv.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>

namespace speculum::test {
namespace {

drafts::Eagle3Head head_for(const model::Model& target, const drafts::Eagle3Synthetic& s = {}) {
    return drafts::eagle3_head_from_gguf(model::GgufFile::from_bytes(drafts::eagle3_synthetic_gguf(target, s), "head"),
                                         target);
}

TEST(Eagle3Head, LoadsLlamaCppsLayout) {
    const model::Model target  = model::make_synthetic_model(engine_target_spec());
    const drafts::Eagle3Head h = head_for(target);
    EXPECT_EQ(h.extract_layers, drafts::eagle3_default_layers(4));
    EXPECT_EQ(h.extract_layers, (std::vector<int32_t>{2, 2, 1}));
    EXPECT_EQ(h.block.hparams().n_layer, 1);
    EXPECT_EQ(h.block.hparams().n_embd_attn_in, 2 * target.hparams().n_embd);
    EXPECT_EQ(h.block.weights().layers[0].wq.cols, 2 * target.hparams().n_embd);
    EXPECT_EQ(h.fc.cols, 3 * target.hparams().n_embd);
    EXPECT_EQ(h.n_draft_vocab(), target.hparams().n_vocab);
    EXPECT_TRUE(h.d2t.empty());
    EXPECT_EQ(h.embed.data, target.weights().token_embd.data) << "no token_embd: the target's";
    EXPECT_GT(h.weight_bytes(), h.fc.n_bytes());

    const drafts::Eagle3Head r = head_for(target, {.n_draft_vocab = 40, .own_embedding = true});
    EXPECT_EQ(r.n_draft_vocab(), 40);
    ASSERT_EQ(r.d2t.size(), 40u);
    EXPECT_EQ(r.d2t[3], 6) << "draft id j is target id j + d2t[j]";
    EXPECT_NE(r.embed.data, target.weights().token_embd.data) << "its own table";
}

std::string load_error(const std::vector<uint8_t>& bytes, const model::Model& target) {
    try {
        drafts::eagle3_head_from_gguf(model::GgufFile::from_bytes(bytes, "bad.gguf"), target);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "no error";
}

// The synthetic head's file with one key or tensor replaced (a copy through GgufWriter::set_value).
std::vector<uint8_t> edited(const std::vector<uint8_t>& bytes, const std::string& drop_tensor,
                            const std::function<void(model::GgufWriter&)>& add) {
    const model::GgufFile f = model::GgufFile::from_bytes(bytes, "head");
    model::GgufWriter g;
    for (const model::GgufKv& kv : f.metadata())
        if (kv.key != "general.alignment") g.set_value(kv.key, kv.value);
    add(g);
    for (const model::GgufTensorInfo& t : f.tensors())
        if (t.name != drop_tensor) g.add_tensor(t.name, t.dims, t.type, t.data, t.n_bytes);
    return g.to_bytes();
}

TEST(Eagle3Head, BadHeadsAreRefusedByName) {
    const model::Model target       = model::make_synthetic_model(engine_target_spec());
    const std::vector<uint8_t> good = drafts::eagle3_synthetic_gguf(target, {});
    auto expect                     = [&](const std::vector<uint8_t>& b, const std::string& what) {
        const std::string e = load_error(b, target);
        EXPECT_NE(e.find(what), std::string::npos) << e;
    };
    // A plain llama file is not a head.
    expect(edited(good, "", [](model::GgufWriter& g) { g.set_string("general.architecture", "llama"); }),
           "general.architecture");
    // Extract layers beyond the target's.
    expect(edited(good, "",
                  [](model::GgufWriter& g) {
                      g.set_array_int32("eagle3.extract_layers", {2, 9, 1});
                  }),
           "extract_layers");
    // A head trained for a target of another width.
    expect(edited(good, "", [](model::GgufWriter& g) { g.set_uint32("eagle3.target_hidden_size", 128); }),
           "target_hidden_size");
    // A head dimension that is odd, or whose value length differs (key_length: heads whose attention is not
    // n_embd / n_head wide, as for Qwen 3 and gpt-oss targets).
    expect(edited(good, "", [](model::GgufWriter& g) { g.set_uint32("eagle3.attention.key_length", 7); }),
           "key_length");
    expect(edited(good, "",
                  [](model::GgufWriter& g) {
                      g.set_uint32("eagle3.attention.key_length", 16);
                      g.set_uint32("eagle3.attention.value_length", 32);
                  }),
           "value_length");
    // Norm epsilon and RoPE base: positive and finite, as the model loader requires (issue #51, item 3).
    for (const float bad : {std::nanf(""), 0.0f, -1.0f, INFINITY})
        for (const char* k : {"eagle3.attention.layer_norm_rms_epsilon", "eagle3.rope.freq_base"})
            expect(edited(good, "", [&](model::GgufWriter& g) { g.set_float32(k, bad); }), k);
    // 64-bit counts are checked whole, not cut to 32 bits (item 4).
    expect(edited(good, "",
                  [](model::GgufWriter& g) { g.set_uint64("eagle3.attention.head_count_kv", (1ull << 32) + 4); }),
           "head_count_kv");
    expect(
        edited(good, "", [](model::GgufWriter& g) { g.set_uint64("eagle3.rope.dimension_count", (1ull << 32) + 64); }),
        "rope.dimension_count");
    // fc missing; an unknown tensor.
    expect(edited(good, "fc.weight", [](model::GgufWriter&) {}), "fc.weight");
    expect(edited(good, "",
                  [](model::GgufWriter& g) {
                      const float x[4] = {1, 2, 3, 4};
                      g.add_tensor("t2d", {4}, kernels::GgmlType::F32, x, sizeof x);
                  }),
           "t2d");
    // A d2t that leaves the target's vocabulary.
    const std::vector<uint8_t> small = drafts::eagle3_synthetic_gguf(target, {.n_draft_vocab = 40});
    expect(edited(small, "d2t.weight",
                  [](model::GgufWriter& g) {
                      std::vector<int64_t> d(40, 0);
                      d[39] = 1000;
                      g.add_tensor("d2t.weight", {40}, kernels::GgmlType::I64, d.data(), d.size() * 8);
                  }),
           "d2t");
    // Truncated bytes: a GGUF error, no crash.
    std::vector<uint8_t> cut(good.begin(), good.begin() + long(good.size() / 2));
    EXPECT_NE(load_error(cut, target), "no error");
}

TEST(Eagle3Drafter, TheTargetCacheKeepsTheStreamsEnteringTheExtractLayers) {
    const model::Model target = model::make_synthetic_model(engine_target_spec());
    const int64_t e           = target.hparams().n_embd;
    const std::vector<int32_t> prompt{5, 17, 3, 42, 8, 60};
    const std::vector<int32_t> layers{0, 2, 4};  // the embedding, the input of layer 2, after the last layer
    model::InferenceContext ctx(target, exact_ctx());
    ctx.kv().keep_hidden(layers, int32_t(e));
    ctx.prefill(prompt);
    for (size_t k = 0; k < layers.size(); ++k) {
        model::InferenceContext ref(target, exact_ctx());
        std::vector<float> want(prompt.size() * size_t(e));
        if (layers[k] == 0) {
            for (size_t i = 0; i < prompt.size(); ++i)
                kernels::dequantize_row_ref(&want[i * size_t(e)], target.weights().token_embd.type,
                                            target.weights().token_embd.row(prompt[i]), e);
        } else {
            model::ForwardOptions o;
            o.exit_layer = layers[k] - 1;
            o.hidden_out = want.data();
            std::vector<int32_t> pos(prompt.size());
            for (size_t i = 0; i < pos.size(); ++i) pos[i] = int32_t(i);
            ref.forward_batch(prompt, pos, {}, o);
        }
        for (size_t i = 0; i < prompt.size(); ++i)
            for (int64_t c = 0; c < e; ++c)
                ASSERT_EQ(ctx.kv().hidden(int32_t(i))[k * size_t(e) + size_t(c)], want[i * size_t(e) + size_t(c)])
                    << "layer " << layers[k] << " position " << i;
    }
    EXPECT_THROW(ctx.kv().keep_hidden({5}, int32_t(e)), std::invalid_argument) << "beyond the target's layers";
}

// One token on a fresh cache attends only itself: each head's attention output is its KV head's v. So the layer
// is, by hand: g = fc streams; a = [attn_norm(emb); hidden_norm(g)]; h = g + wo (v heads of wv a, repeated for
// GQA); out = h + down(silu(gate n) * up n), n = ffn_norm(h); logits = output(output_norm(out)).
TEST(Eagle3Drafter, TheLayerComputesEagle3ByHand) {
    const model::Model target = model::make_synthetic_model(engine_target_spec());
    for (bool reduced : {false, true}) {
        SCOPED_TRACE(reduced ? "reduced vocabulary (d2t)" : "full vocabulary");
        const drafts::Eagle3Head h = head_for(target, {.n_draft_vocab = reduced ? 40 : 0});
        drafts::Eagle3Drafter d(target, h, exact_ctx());
        const model::Hparams& hp = h.block.hparams();
        const int64_t e = hp.n_embd, hd = hp.head_dim();
        std::vector<float> row(3 * size_t(e));
        for (size_t i = 0; i < row.size(); ++i) row[i] = std::sin(0.37f * float(i)) * 2.0f;
        const int32_t token = 42, pos = 7;
        const std::vector<float> got = d.logits_for(row.data(), token, pos);

        const model::LayerWeights& L = h.block.weights().layers[0];
        const std::vector<float> g   = matvec(h.fc, row);
        std::vector<float> emb(static_cast<size_t>(e));
        kernels::dequantize_row_ref(emb.data(), h.embed.type, h.embed.row(token), e);
        std::vector<float> a        = norm(emb.data(), L.attn_norm, hp.rms_eps);
        const std::vector<float> gn = norm(g.data(), h.hidden_norm, hp.rms_eps);
        a.insert(a.end(), gn.begin(), gn.end());
        const std::vector<float> v = matvec(L.wv, a);
        std::vector<float> heads(size_t(hp.n_head * hd));
        for (int32_t q = 0; q < hp.n_head; ++q)
            for (int64_t c = 0; c < hd; ++c)
                heads[size_t(q * hd + c)] = v[size_t((q / (hp.n_head / hp.n_head_kv)) * hd + c)];
        const std::vector<float> o = matvec(L.wo, heads);
        std::vector<float> x(static_cast<size_t>(e));
        for (int64_t c = 0; c < e; ++c) x[size_t(c)] = g[size_t(c)] + o[size_t(c)];
        const std::vector<float> n    = norm(x.data(), L.ffn_norm, hp.rms_eps);
        const std::vector<float> gate = matvec(L.w_gate, n), up = matvec(L.w_up, n);
        std::vector<float> act(gate.size());
        for (size_t i = 0; i < act.size(); ++i) act[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
        const std::vector<float> down = matvec(L.w_down, act);
        for (int64_t c = 0; c < e; ++c) x[size_t(c)] += down[size_t(c)];
        const std::vector<float> want =
            matvec(h.block.weights().output, norm(x.data(), h.block.weights().output_norm, hp.rms_eps));
        ASSERT_EQ(got.size(), size_t(target.hparams().n_vocab)) << "logits in the target's vocabulary";
        for (int32_t j = 0; j < h.n_draft_vocab(); ++j) {
            const int32_t t = reduced ? h.d2t[size_t(j)] : j;
            ASSERT_NEAR(got[size_t(t)], want[size_t(j)], 1e-4f) << "draft token " << j;
        }
        if (reduced) {
            // target tokens outside the draft vocabulary cannot be drafted
            EXPECT_TRUE(std::isinf(got[1]) && got[1] < 0);
        }
    }
}

// A target whose layers add nothing (attn_output and ffn_down zero) and whose head is its embedding table: its
// greedy continuation repeats the last token, and every stream is the token's embedding, so the echo head
// predicts it.
model::Model repeat_target() {
    model::SyntheticSpec s = engine_target_spec();
    s.tied_output          = true;
    const model::Model m   = model::make_synthetic_model(s);
    model::ModelWeights w  = m.weights();
    silence_layers(w);  // logits = E rmsnorm(e_x): the largest is x's own
    return model::Model::from_weights(m.hparams(), std::move(w), "repeat target");
}

engine::RunResult run_head(const model::Model& target, const drafts::Eagle3Head& head, const engine::SpecConfig& c,
                           const std::vector<int32_t>& prompt) {
    auto d = std::make_shared<drafts::Eagle3Drafter>(target, head, exact_ctx());
    return engine::SpecEngine(target, c, d).run(prompt);
}

TEST(Eagle3Drafter, GreedyRunsAreLosslessAsChainsTreesAndDynamicTrees) {
    const std::vector<int32_t> prompt{5, 17, 3, 42, 17, 3, 42, 8, 60, 11};
    for (bool echo : {false, true}) {
        SCOPED_TRACE(echo ? "echo head on a repeating target" : "random head");
        const model::Model target    = echo ? repeat_target() : model::make_synthetic_model(engine_target_spec());
        const drafts::Eagle3Head h   = head_for(target, {.echo = echo});
        const std::vector<int32_t> r = greedy_reference(target, prompt, 40);
        engine::SpecConfig cfg       = lossless_config(3);
        drafts::DraftSpec s;
        s.kind       = drafts::DraftKind::eagle3;
        s.model_path = "head.gguf";
        cfg.levels   = {s};
        ASSERT_NO_THROW(cfg.validate(target.hparams().n_layer));
        for (int mode = 0; mode < 3; ++mode) {
            SCOPED_TRACE(mode == 0 ? "chain" : mode == 1 ? "static tree" : "dynamic tree");
            engine::SpecConfig c = cfg;
            if (mode == 1) c.verification = engine::Verification::tree, c.tree.branching = {2, 1, 1};
            if (mode == 2) {
                c.verification     = engine::Verification::tree;
                c.tree.kind        = engine::TreeKind::dynamic;
                c.tree.top_k       = 2;
                c.tree.depth       = 4;
                c.tree.node_budget = 6;
            }
            const engine::RunResult res = run_head(target, h, c, prompt);
            EXPECT_EQ(res.tokens, r);
            ASSERT_GE(res.stats.levels.size(), 2u);
            EXPECT_GT(res.stats.levels[1].n_forward, 0) << "the head ran";
            EXPECT_GT(res.stats.n_drafted, 0);
            if (echo) {
                EXPECT_GT(res.stats.n_accepted, res.stats.n_drafted / 4) << "the echo head's drafts were accepted";
                EXPECT_LT(res.stats.n_steps, 40) << "fewer target passes than tokens";
            }
        }
    }
}

TEST(Eagle3Drafter, MakeDrafterLoadsTheHeadAndCountsItsCost) {
    const model::Model target       = model::make_synthetic_model(engine_target_spec());
    const std::filesystem::path dir = tmp_dir() / "eagle3";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "head.gguf").string();
    {
        const std::vector<uint8_t> b = drafts::eagle3_synthetic_gguf(target, {});
        std::FILE* f                 = std::fopen(path.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        std::fwrite(b.data(), 1, b.size(), f);
        std::fclose(f);
    }
    drafts::DraftSpec s;
    s.kind       = drafts::DraftKind::eagle3;
    s.model_path = path;
    drafts::DrafterOptions o;
    o.context                          = exact_ctx();
    std::unique_ptr<drafts::Drafter> d = drafts::make_drafter(s, target, o);
    EXPECT_EQ(d->target_hidden_layers(), (std::vector<int32_t>{2, 2, 1}));
    engine::SpecConfig c = lossless_config(3);
    c.levels             = {s};
    const engine::RunResult res =
        engine::SpecEngine(target, c, std::shared_ptr<drafts::Drafter>(std::move(d))).run({5, 17, 3, 42});
    const engine::LevelStats& l = res.stats.levels[1];
    // Each pass reads the layer and the head; fc once per step; no embedding table but one row per token.
    const drafts::Eagle3Head h = drafts::load_eagle3_head(path, target);
    EXPECT_GT(l.bytes_weights, uint64_t(l.n_forward) * (h.weight_bytes() - h.fc.n_bytes()));
    EXPECT_GT(l.flops, 0.0);
    s.model_path = (dir / "missing.gguf").string();
    EXPECT_THROW(drafts::make_drafter(s, target, o), std::exception);
}

// MTP layers and EAGLE-3 heads read the target's states: one level, drafting for the target, and not CATS.
TEST(Eagle3Drafter, HeadsThatReadTheTargetsStatesMustBeTheOnlyLevel) {
    for (drafts::DraftKind kind : {drafts::DraftKind::mtp, drafts::DraftKind::eagle3}) {
        SCOPED_TRACE(drafts::to_string(kind));
        engine::SpecConfig c = lossless_config(3);
        drafts::DraftSpec m, g;
        m.kind   = kind;
        g.kind   = drafts::DraftKind::maxgram;
        c.levels = {m, g};
        c.gamma  = {3, 4};
        EXPECT_THROW(c.validate(4), std::invalid_argument);
        c.levels       = {m};
        c.gamma        = {3};
        c.verification = engine::Verification::cats;
        EXPECT_THROW(c.validate(4), std::invalid_argument);
    }
}

// A fixed draft distribution at every node (0.5, 0.3, 0.2, 0, ...): path probabilities are products, so the
// dynamic tree's choices are known by hand.
TEST(DynamicTree, ExpandsTheMostProbableNodesAndKeepsTheMostProbablePaths) {
    std::vector<float> fixed(8, -30.0f);
    fixed[0] = std::log(0.5f), fixed[1] = std::log(0.3f), fixed[2] = std::log(0.2f);
    std::vector<std::vector<int32_t>> calls;
    drafts::TreeNodeEval eval = [&](const std::vector<int32_t>& nodes, const std::vector<int32_t>& parents,
                                    const std::vector<int32_t>&, const std::vector<int32_t>& depths,
                                    const std::vector<uint8_t>& mask, std::vector<std::vector<float>>& logits) {
        calls.push_back(nodes);
        const size_t m = nodes.size();
        EXPECT_EQ(mask.size(), m * m);
        for (size_t r = 0; r < m; ++r) {
            EXPECT_TRUE(mask[r * m + r]);
            if (parents[r] >= 0) {  // the parent is among the rows, before, and attended
                const auto it = std::find(nodes.begin(), nodes.end(), parents[r]);
                EXPECT_NE(it, nodes.end());
                EXPECT_LT(size_t(it - nodes.begin()), r);
                EXPECT_TRUE(mask[r * m + size_t(it - nodes.begin())]);
                EXPECT_EQ(depths[size_t(it - nodes.begin())] + 1, depths[r]);
            }
        }
        logits.assign(m, fixed);
        return true;
    };
    drafts::ProposeParams p;
    const drafts::DraftTree t = drafts::expand_dynamic_tree({2, 2, 2}, 5, fixed, p, eval, {});
    // Made: a .5, b .3 | aa .25, ab .15, ba .15, bb .09 | (aa, ab expanded) aaa .125, aab .075, aba .075, abb .045.
    // Kept: a, b, aa, ab, ba.
    ASSERT_EQ(t.size(), 5);
    EXPECT_EQ(t.tokens, (std::vector<int32_t>{0, 1, 0, 1, 0}));
    EXPECT_EQ(t.parent, (std::vector<int32_t>{-1, -1, 0, 0, 1}));
    EXPECT_EQ(t.depth, (std::vector<int32_t>{1, 1, 2, 2, 2}));
    EXPECT_EQ(t.rank, (std::vector<int32_t>{0, 1, 0, 1, 0}));
    EXPECT_NEAR(t.q[3], 0.3f, 1e-5f);
    ASSERT_EQ(calls.size(), 2u) << "one pass per depth below the first";
    EXPECT_EQ(calls[0], (std::vector<int32_t>{0, 1})) << "depth 1: both nodes expanded";
    EXPECT_EQ(calls[1], (std::vector<int32_t>{0, 2, 3})) << "depth 2: aa and ab (the top 2), with their parent a";
    // A larger budget keeps the depth-3 nodes in probability order: aaa .125 before bb .09.
    const drafts::DraftTree big = drafts::expand_dynamic_tree({2, 2, 2}, 7, fixed, p, eval, {});
    ASSERT_EQ(big.size(), 7);
    EXPECT_EQ(big.depth.back(), 3);
}

TEST(DynamicTree, DraftersWithoutProbabilitiesExpandTheBreadthFirstStandIn) {
    drafts::TreeShape s;
    s.branching     = {3, 3, 3};
    s.dynamic_nodes = 5;
    std::vector<int32_t> parent, rank;
    drafts::tree_shape_nodes(s, parent, rank);
    EXPECT_EQ(parent, (std::vector<int32_t>{-1, -1, -1, 0, 0}));
    EXPECT_EQ(rank, (std::vector<int32_t>{0, 1, 2, 0, 1}));
    s.parent = {-1};
    s.rank   = {0};
    EXPECT_THROW(drafts::tree_shape_nodes(s, parent, rank), std::invalid_argument);
}

TEST(DynamicTree, ModelDraftsAreLosslessAndTheConfigRoundTrips) {
    const model::Model target = model::make_synthetic_model(engine_target_spec());
    const std::vector<int32_t> prompt{5, 17, 3, 42, 17, 3, 42, 8, 60, 11};
    engine::SpecConfig c = lossless_config(3);
    drafts::DraftSpec s;  // the identity self-draft: the target's own tokens, always accepted
    c.levels           = {s};
    c.verification     = engine::Verification::tree;
    c.tree.kind        = engine::TreeKind::dynamic;
    c.tree.top_k       = 3;
    c.tree.depth       = 3;
    c.tree.node_budget = 7;
    ASSERT_NO_THROW(c.validate(4));
    drafts::DrafterOptions o;
    o.context                   = exact_ctx();
    const engine::RunResult res = engine::SpecEngine(target, c, drafts::make_drafter(s, target, o)).run(prompt);
    EXPECT_EQ(res.tokens, greedy_reference(target, prompt, 40));
    EXPECT_GT(res.stats.n_accepted, 0);
    nlohmann::json j = c;
    EXPECT_EQ(j["tree"]["kind"], "dynamic");
    EXPECT_EQ(j.get<engine::SpecConfig>(), c);
    c.tree.node_budget = 0;
    EXPECT_THROW(c.validate(4), std::invalid_argument);
}

}  // namespace
}  // namespace speculum::test

namespace speculum::test {
namespace {

// The bundled head (tools/train/train_eagle3.py) on the bundled target: it loads, drafts the greedy tokens the
// training tool's torch head gives from the target's streams (resources/models/eagle3_reference.json, F16-rounded
// head: a few may differ by precision, the BF16 target computed in f32 either way), and its drafts are accepted.
TEST(Eagle3Bundled, TheBundledHeadMatchesItsTrainerAndIsAccepted) {
    if (!resources_dir() || !std::filesystem::exists(resource_path(kBundledEagle3Head)))
        GTEST_SKIP() << "no bundled EAGLE-3 head";
    const model::Model target = model::Model::load(resource_path(kBundledTargetModel).string());
    drafts::Eagle3Drafter d(target, drafts::load_eagle3_head(resource_path(kBundledEagle3Head).string(), target),
                            exact_ctx());
    std::ifstream in(resource_path("models/eagle3_reference.json"));
    ASSERT_TRUE(in) << "resources/models/eagle3_reference.json";
    const nlohmann::json ref = nlohmann::json::parse(in);
    ASSERT_EQ(ref["extract_layers"].get<std::vector<int32_t>>(), d.target_hidden_layers());
    expect_head_matches_reference(d, target, ref);
    // Lossless with accepted drafts on held-out prose (16 tokens: the reference path is slow on a 37 M-parameter
    // target); the spec's empty model_path is the bundled head.
    const std::vector<int32_t> prompt = ref["cases"][0]["tokens"].get<std::vector<int32_t>>();
    drafts::DraftSpec s;
    s.kind                      = drafts::DraftKind::eagle3;
    const engine::RunResult res = greedy_run(target, s, 4, prompt, 16);
    EXPECT_EQ(res.tokens, greedy_reference(target, prompt, 16));
    EXPECT_GT(double(res.stats.n_accepted), 0.3 * double(res.stats.n_drafted));
}

}  // namespace
}  // namespace speculum::test
