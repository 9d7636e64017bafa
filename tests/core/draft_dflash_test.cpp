// Block drafts (issue #56, items 1-2): llama.cpp's dflash GGUF layout loads and bad files are refused by name, the
// block pass computes what DFlash defines (injected context K/V, a block attending itself both ways; checked by
// hand), DSpark's Markov bias and confidence are what the layout says, greedy runs are lossless as chains, trees
// and dynamic trees with both kinds, and drafts are accepted where the draft predicts the target.
#include "engine_fixtures.h"
#include "head_reference.h"

#include "core/drafts/dflash.h"
#include "core/drafts/dflash_drafter.h"
#include "core/drafts/make_drafter.h"
#include "core/model/gguf.h"
#include "core/model/gguf_writer.h"
#include "core/model/rope.h"
#include "core/resources.h"
#include "kernels/gemv.h"
#include "support/test_paths.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>

namespace speculum::test {
namespace {

drafts::DflashModel draft_for(const model::Model& target, const drafts::DflashSynthetic& s = {}) {
    return drafts::dflash_from_gguf(model::GgufFile::from_bytes(drafts::dflash_synthetic_gguf(target, s), "dflash"),
                                    target);
}

// The engine's synthetic target with as many KV heads as heads (the echo draft's identities need it).
model::SyntheticSpec full_kv_spec() {
    model::SyntheticSpec s = engine_target_spec();
    s.n_head_kv            = s.n_head;
    return s;
}

TEST(DflashModel, LoadsLlamaCppsLayout) {
    const model::Model target   = model::make_synthetic_model(engine_target_spec());
    const drafts::DflashModel d = draft_for(target, {.n_layer = 2, .block_size = 6});
    EXPECT_EQ(d.target_layers, (std::vector<int32_t>{1, 2, 3}));
    EXPECT_EQ(d.block_size, 6);
    EXPECT_EQ(d.mask_token, target.hparams().n_vocab - 1);
    EXPECT_EQ(d.decoder.hparams().n_layer, 2);
    EXPECT_TRUE(d.decoder.hparams().qk_norm);
    EXPECT_EQ(d.decoder.hparams().rope_style, model::RopeStyle::neox) << "llama.cpp: NeoX for DFlash backbones";
    EXPECT_EQ(d.fc.cols, 3 * target.hparams().n_embd);
    EXPECT_EQ(d.embed.data, target.weights().token_embd.data) << "no token_embd: the target's";
    EXPECT_EQ(d.decoder.weights().output.data, target.weights().output.data) << "no output: the target's head";
    EXPECT_FALSE(d.dspark_heads());
    EXPECT_GT(d.weight_bytes(), d.fc.n_bytes());

    const drafts::DflashModel s = draft_for(target, {.markov_rank = 8});
    ASSERT_TRUE(s.dspark_heads());
    EXPECT_EQ(s.markov_rank(), 8);
    EXPECT_EQ(s.conf_proj.size(), size_t(target.hparams().n_embd + 8));
    EXPECT_FLOAT_EQ(s.conf_bias, 0.5f);
    EXPECT_EQ(
        s.weight_bytes(), d.weight_bytes() - d.decoder.weights().layers[1].vector_bytes() -
                              [&] {
                                  uint64_t b = 0;
                                  for (auto* v : d.decoder.weights().layers[1].matrices()) b += v->n_bytes();
                                  return b;
                              }() +
                              s.markov_w1.n_bytes() + s.markov_w2.n_bytes() + s.conf_proj.size() * 4)
        << "the heads' bytes counted";
}

std::string load_error(const std::vector<uint8_t>& bytes, const model::Model& target) {
    try {
        drafts::dflash_from_gguf(model::GgufFile::from_bytes(bytes, "bad.gguf"), target);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "no error";
}

// The file with one tensor dropped and keys set by `add` (a copy through GgufWriter::set_value).
std::vector<uint8_t> edited(const std::vector<uint8_t>& bytes, const std::string& drop,
                            const std::function<void(model::GgufWriter&)>& add, const std::string& drop_key = "") {
    const model::GgufFile f = model::GgufFile::from_bytes(bytes, "dflash");
    model::GgufWriter g;
    for (const model::GgufKv& kv : f.metadata())
        if (kv.key != "general.alignment" && kv.key != drop_key) g.set_value(kv.key, kv.value);
    add(g);
    for (const model::GgufTensorInfo& t : f.tensors())
        if (t.name != drop) g.add_tensor(t.name, t.dims, t.type, t.data, t.n_bytes);
    return g.to_bytes();
}

TEST(DflashModel, BadFilesAreRefusedByName) {
    const model::Model target       = model::make_synthetic_model(engine_target_spec());
    const std::vector<uint8_t> good = drafts::dflash_synthetic_gguf(target, {.markov_rank = 4});
    auto expect                     = [&](const std::vector<uint8_t>& b, const std::string& what) {
        const std::string e = load_error(b, target);
        EXPECT_NE(e.find(what), std::string::npos) << e;
    };
    auto none = [](model::GgufWriter&) {};
    ASSERT_EQ(load_error(good, target), "no error");
    expect(edited(good, "", [](model::GgufWriter& g) { g.set_string("general.architecture", "eagle3"); }),
           "general.architecture");
    expect(edited(good, "",
                  [](model::GgufWriter& g) {
                      g.set_array_int32("dflash.target_layers", {1, 9});
                  }),
           "target_layers");
    expect(edited(good, "", none, "dflash.target_layers"), "target_layers");
    expect(edited(good, "", none, "dflash.mask_token_id"), "mask_token_id");
    expect(edited(good, "", [](model::GgufWriter& g) { g.set_uint32("dflash.mask_token_id", 96); }), "mask_token_id");
    expect(edited(good, "", [](model::GgufWriter& g) { g.set_uint32("dflash.block_size", 1); }), "block_size");
    expect(edited(good, "", [](model::GgufWriter& g) { g.set_uint64("dflash.block_size", (1ull << 32) + 8); }),
           "block_size");
    expect(edited(good, "", [](model::GgufWriter& g) { g.set_uint32("dflash.hyper_connection_count", 4); }),
           "DeepSeek-V4");
    for (const char* t : {"fc.weight", "enc.output_norm.weight", "blk.0.attn_q_norm.weight", "output_norm.weight",
                          "markov_w2.weight", "conf_proj.weight"})
        expect(edited(good, t, none), t);
    expect(edited(good, "",
                  [](model::GgufWriter& g) {
                      const float x[4] = {};
                      g.add_tensor("blk.0.attn_sinks.weight", {4}, kernels::GgmlType::F32, x, sizeof x);
                  }),
           "attn_sinks");
    // conf_proj as ggml's own writer stores {n_embd + rank, 1}: one dimension (the oracle's quantize writes it so).
    const model::GgufFile src       = model::GgufFile::from_bytes(good, "dflash");
    const model::GgufTensorInfo& cp = *src.tensor("conf_proj.weight");
    const std::vector<uint8_t> flat = edited(good, "conf_proj.weight", [&](model::GgufWriter& g) {
        g.add_tensor("conf_proj.weight", {cp.dims[0]}, cp.type, cp.data, cp.n_bytes);
    });
    ASSERT_EQ(load_error(flat, target), "no error");
    EXPECT_EQ(drafts::dflash_from_gguf(model::GgufFile::from_bytes(flat, "flat"), target).conf_proj,
              drafts::dflash_from_gguf(model::GgufFile::from_bytes(good, "good"), target).conf_proj);
    expect(edited(good, "conf_proj.weight",
                  [&](model::GgufWriter& g) {
                      g.add_tensor("conf_proj.weight", {cp.dims[0] - 1}, cp.type, cp.data, cp.n_bytes - 4);
                  }),
           "conf_proj.weight");
    // A draft for a wider target.
    model::SyntheticSpec wide = engine_target_spec();
    wide.n_embd               = 128;
    const model::Model wider  = model::make_synthetic_model(wide);
    EXPECT_NE(load_error(good, wider).find("fc.weight"), std::string::npos) << load_error(good, wider);
    // A truncated file, and every prefix of the header, fail cleanly.
    for (size_t cut : {size_t(8), size_t(64), good.size() / 2})
        EXPECT_NE(load_error(std::vector<uint8_t>(good.begin(), good.begin() + long(cut)), target), "no error");
    // The DSpark kind needs its heads.
    EXPECT_THROW(drafts::DflashDrafter(target, draft_for(target), true, exact_ctx(), "x"), std::invalid_argument);
}

// The block pass by hand: context rows enter each layer's cache as K = rope(k_norm(wk g_p), p), V = wv g_p with
// g_p = enc_norm(fc row_p); the block rows attend every cached row and every block row (no causal mask).
std::vector<std::vector<float>> block_by_hand(const model::Model& target, const drafts::DflashModel& d,
                                              const std::vector<std::vector<float>>& ctx_rows, int32_t anchor,
                                              int32_t rows) {
    const model::Hparams& hp = d.decoder.hparams();
    const int64_t e = hp.n_embd, hd = hp.head_dim(), nh = hp.n_head, nkv = hp.n_head_kv;
    const int32_t n = int32_t(ctx_rows.size());
    std::vector<float> inv(size_t(hp.n_rot / 2));
    for (int32_t i = 0; i < hp.n_rot / 2; ++i)
        inv[size_t(i)] = float(std::pow(double(hp.rope_freq_base), -2.0 * i / hp.n_rot));
    auto head_norm = [&](std::vector<float>& x, int64_t heads, const std::vector<float>& w) {
        for (int64_t h = 0; h < heads; ++h) {
            const std::vector<float> y = norm(&x[size_t(h * hd)], w, hp.rms_eps);
            std::copy(y.begin(), y.end(), &x[size_t(h * hd)]);
        }
    };
    std::vector<std::vector<float>> x(static_cast<size_t>(rows), std::vector<float>(static_cast<size_t>(e)));
    for (int32_t r = 0; r < rows; ++r)
        kernels::dequantize_row_ref(x[size_t(r)].data(), d.embed.type, d.embed.row(r == 0 ? anchor : d.mask_token), e);
    std::vector<std::vector<float>> g;
    for (const auto& row : ctx_rows) g.push_back(norm(matvec(d.fc, row).data(), d.enc_norm, hp.rms_eps));
    for (int32_t il = 0; il < hp.n_layer; ++il) {
        const model::LayerWeights& L = d.decoder.weights().layers[size_t(il)];
        std::vector<std::vector<float>> K, V, Q;
        for (int32_t p = 0; p < n; ++p) {
            std::vector<float> k = matvec(L.wk, g[size_t(p)]);
            head_norm(k, nkv, L.k_norm);
            model::rope(k.data(), int32_t(nkv), int32_t(hd), hp.n_rot, inv.data(), p, 1.0f, model::RopeStyle::neox);
            K.push_back(k), V.push_back(matvec(L.wv, g[size_t(p)]));
        }
        for (int32_t r = 0; r < rows; ++r) {
            const std::vector<float> xn = norm(x[size_t(r)].data(), L.attn_norm, hp.rms_eps);
            std::vector<float> q = matvec(L.wq, xn), k = matvec(L.wk, xn);
            head_norm(q, nh, L.q_norm), head_norm(k, nkv, L.k_norm);
            model::rope(q.data(), int32_t(nh), int32_t(hd), hp.n_rot, inv.data(), n + r, 1.0f, model::RopeStyle::neox);
            model::rope(k.data(), int32_t(nkv), int32_t(hd), hp.n_rot, inv.data(), n + r, 1.0f, model::RopeStyle::neox);
            Q.push_back(q), K.push_back(k), V.push_back(matvec(L.wv, xn));
        }
        for (int32_t r = 0; r < rows; ++r) {
            std::vector<float> att(size_t(nh * hd), 0.0f);
            for (int64_t h = 0; h < nh; ++h) {
                const int64_t kh = h / (nh / nkv);
                std::vector<double> s;
                for (const auto& k : K) {
                    double dot = 0;
                    for (int64_t c = 0; c < hd; ++c)
                        dot += double(Q[size_t(r)][size_t(h * hd + c)]) * k[size_t(kh * hd + c)];
                    s.push_back(dot / std::sqrt(double(hd)));
                }
                const double mx = *std::max_element(s.begin(), s.end());
                double sum      = 0;
                for (double& v : s) sum += v = std::exp(v - mx);
                for (size_t j = 0; j < K.size(); ++j)
                    for (int64_t c = 0; c < hd; ++c)
                        att[size_t(h * hd + c)] += float(s[j] / sum * V[j][size_t(kh * hd + c)]);
            }
            const std::vector<float> o = matvec(L.wo, att);
            for (int64_t c = 0; c < e; ++c) x[size_t(r)][size_t(c)] += o[size_t(c)];
        }
        for (int32_t r = 0; r < rows; ++r) {
            const std::vector<float> fn = norm(x[size_t(r)].data(), L.ffn_norm, hp.rms_eps);
            std::vector<float> gate     = matvec(L.w_gate, fn);
            const std::vector<float> up = matvec(L.w_up, fn);
            model::swiglu(gate.data(), up.data(), int64_t(gate.size()));
            const std::vector<float> dn = matvec(L.w_down, gate);
            for (int64_t c = 0; c < e; ++c) x[size_t(r)][size_t(c)] += dn[size_t(c)];
        }
    }
    std::vector<std::vector<float>> out;
    for (int32_t r = 0; r < rows; ++r)
        out.push_back(
            matvec(d.decoder.weights().output, norm(x[size_t(r)].data(), d.decoder.weights().output_norm, hp.rms_eps)));
    (void)target;
    return out;
}

// Hostile block-draft files: seeded mutations of a valid DSpark file's header (keys, values, tensor dims, types and
// offsets) either load and draft a block, or are refused with a GgufError or std::invalid_argument; nothing else is
// thrown and nothing crashes (the sanitizer build runs this too).
TEST(DflashModel, MutatedFilesDraftOrAreRefused) {
    const model::Model target = model::make_synthetic_model(engine_target_spec());
    const std::vector<uint8_t> good =
        drafts::dflash_synthetic_gguf(target, {.n_layer = 1, .n_ff = 32, .block_size = 4, .markov_rank = 4});
    const uint64_t header = model::GgufFile::from_bytes(good, "good").data_offset();
    std::mt19937_64 rng(56);
    const uint32_t edges[] = {0, 1, 2, 3, 4, 7, 8, 63, 64, 255, 4096, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFFu};
    int loaded = 0, refused = 0;
    for (int i = 0; i < 1500; ++i) {
        std::vector<uint8_t> b = good;
        for (int m = 1 + int(rng() % 3); m > 0; --m) {
            const size_t at = size_t(rng() % (header - 4));
            switch (rng() % 3) {
                case 0:
                    b[at] ^= uint8_t(1u << (rng() % 8));
                    break;
                case 1:
                    b[at] = rng() % 2 ? 0x00 : 0xFF;
                    break;
                default: {
                    const uint32_t v = edges[rng() % std::size(edges)];
                    std::memcpy(&b[at], &v, 4);
                }
            }
        }
        try {
            drafts::DflashModel d =
                drafts::dflash_from_gguf(model::GgufFile::from_bytes(std::move(b), "m.gguf"), target);
            const bool dspark   = d.dspark_heads();
            const int64_t width = d.fc.cols;
            drafts::DflashDrafter dr(target, std::move(d), dspark, exact_ctx(), "mutated");
            const std::vector<float> rows(static_cast<size_t>(2 * width), 0.25f);
            std::vector<float> conf;
            const auto block = dr.block_logits(rows.data(), 2, 3, std::min(3, dr.max_draft() + 1), &conf);
            ASSERT_FALSE(block.empty()) << "input " << i;
            ++loaded;
        } catch (const model::GgufError&) {
            ++refused;
        } catch (const std::invalid_argument&) {
            ++refused;
        }
    }
    RecordProperty("loaded", loaded), RecordProperty("refused", refused);
    EXPECT_GT(loaded, 0) << "some mutations (names' bytes, values that still fit) load";
    EXPECT_GT(refused, 500) << "most are refused";
}

// The random draft's spec (what the parity goldens record) round-trips through JSON; unknown keys and values out of
// range are errors naming them.
TEST(DflashModel, TheSyntheticSpecRoundTripsThroughJsonStrictly) {
    const drafts::DflashSynthetic s{
        .n_layer = 2, .n_ff = 96, .block_size = 6, .mask_token = 3, .markov_rank = 4, .seed = 9, .scale = 0.2f};
    const nlohmann::json j          = s;
    const drafts::DflashSynthetic b = j;
    EXPECT_EQ(b.n_layer, 2);
    EXPECT_EQ(b.n_ff, 96);
    EXPECT_EQ(b.block_size, 6);
    EXPECT_EQ(b.mask_token, 3);
    EXPECT_EQ(b.markov_rank, 4);
    EXPECT_EQ(b.seed, 9u);
    EXPECT_FLOAT_EQ(b.scale, 0.2f);
    EXPECT_EQ(nlohmann::json::object().get<drafts::DflashSynthetic>().block_size, drafts::DflashSynthetic{}.block_size)
        << "absent keys keep their defaults";
    nlohmann::json bad = j;
    bad["bogus"]       = 1;
    try {
        (void)bad.get<drafts::DflashSynthetic>();
        ADD_FAILURE() << "an unknown key was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("bogus"), std::string::npos) << e.what();
    }
    bad               = j;
    bad["block_size"] = 1;
    EXPECT_THROW((void)bad.get<drafts::DflashSynthetic>(), std::invalid_argument);
}

TEST(DflashDrafter, TheBlockComputesDflashByHand) {
    const model::Model target   = model::make_synthetic_model(engine_target_spec());
    const drafts::DflashModel d = draft_for(target, {.n_layer = 2, .block_size = 6, .scale = 0.2f});
    drafts::DflashDrafter dr(target, d, false, exact_ctx(), "dflash");
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const int64_t width = d.fc.cols;
    for (int32_t n : {0, 1, 5}) {
        SCOPED_TRACE("context rows " + std::to_string(n));
        std::vector<std::vector<float>> ctx(static_cast<size_t>(n), std::vector<float>(static_cast<size_t>(width)));
        std::vector<float> flat;
        for (auto& row : ctx) {
            for (float& v : row) v = nd(rng);
            flat.insert(flat.end(), row.begin(), row.end());
        }
        const auto got  = dr.block_logits(flat.data(), n, 7, 5);
        const auto want = block_by_hand(target, d, ctx, 7, 5);
        ASSERT_EQ(got.size(), 5u);
        for (size_t r = 0; r < 5; ++r)
            for (size_t t = 0; t < want[r].size(); ++t)
                ASSERT_NEAR(got[r][t], want[r][t], 2e-4f) << "row " << r << " token " << t;
    }
    // The fast path agrees with the reference (products in another order).
    model::ContextConfig fast = exact_ctx();
    fast.path                 = model::ForwardPath::fast;
    drafts::DflashDrafter df(target, d, false, fast, "dflash");
    std::vector<float> rows(size_t(3 * width));
    for (float& v : rows) v = nd(rng);
    const auto a = dr.block_logits(rows.data(), 3, 9, 4), b = df.block_logits(rows.data(), 3, 9, 4);
    for (size_t r = 0; r < 4; ++r)
        for (size_t t = 0; t < a[r].size(); ++t) ASSERT_NEAR(a[r][t], b[r][t], 1e-3f);
}

// A target whose layers add nothing and whose head is its embedding table: it repeats its last token, and every
// stream it keeps is the token's embedding.
model::Model repeat_target() {
    model::SyntheticSpec s = full_kv_spec();
    s.tied_output          = true;
    const model::Model m   = model::make_synthetic_model(s);
    model::ModelWeights w  = m.weights();
    silence_layers(w);
    return model::Model::from_weights(m.hparams(), std::move(w), "repeat target");
}

engine::RunResult run_block(const model::Model& target, const drafts::DflashModel& d, bool dspark,
                            const engine::SpecConfig& c, const std::vector<int32_t>& prompt) {
    auto dr = std::make_shared<drafts::DflashDrafter>(target, d, dspark, exact_ctx(), dspark ? "dspark" : "dflash");
    return engine::SpecEngine(target, c, dr).run(prompt);
}

TEST(DflashDrafter, GreedyRunsAreLosslessAsChainsTreesAndDynamicTreesWithBothKinds) {
    const std::vector<int32_t> prompt{5, 17, 3, 42, 17, 3, 42, 8, 60, 11};
    for (bool echo : {false, true})
        for (bool dspark : {false, true}) {
            SCOPED_TRACE(std::string(echo ? "echo draft on a repeating target" : "random draft") +
                         (dspark ? ", dspark" : ", dflash"));
            const model::Model target = echo ? repeat_target() : model::make_synthetic_model(full_kv_spec());
            const drafts::DflashModel d =
                draft_for(target, {.block_size = 6, .markov_rank = dspark ? 4 : 0, .echo = echo});
            const std::vector<int32_t> r = greedy_reference(target, prompt, 40);
            engine::SpecConfig cfg       = lossless_config(4);
            drafts::DraftSpec s;
            s.kind       = dspark ? drafts::DraftKind::dspark : drafts::DraftKind::dflash;
            s.model_path = "draft.gguf";
            cfg.levels   = {s};
            ASSERT_NO_THROW(cfg.validate(target.hparams().n_layer));
            for (int mode = 0; mode < 3; ++mode) {
                SCOPED_TRACE(mode == 0 ? "chain" : mode == 1 ? "static tree" : "dynamic tree");
                engine::SpecConfig c = cfg;
                if (mode == 1) c.verification = engine::Verification::tree, c.tree.branching = {2, 2, 1};
                if (mode == 2) {
                    c.verification     = engine::Verification::tree;
                    c.tree.kind        = engine::TreeKind::dynamic;
                    c.tree.top_k       = 2;
                    c.tree.depth       = 4;
                    c.tree.node_budget = 6;
                }
                const engine::RunResult res = run_block(target, d, dspark, c, prompt);
                EXPECT_EQ(res.tokens, r);
                ASSERT_GE(res.stats.levels.size(), 2u);
                EXPECT_GT(res.stats.levels[1].n_forward, 0) << "the draft ran";
                EXPECT_GT(res.stats.n_drafted, 0);
                if (echo) {  // a tree's siblings count as drafted: only the chain's share is high
                    if (mode == 0) {
                        EXPECT_GT(res.stats.n_accepted, res.stats.n_drafted / 3) << "the echo draft's tokens accepted";
                    }
                    EXPECT_GT(res.stats.n_accepted, 10);
                    EXPECT_LT(res.stats.n_steps, 25) << "fewer target passes than tokens";
                }
                if (mode == 0) {
                    EXPECT_LE(res.stats.levels[1].n_forward, res.stats.n_steps) << "one pass per block";
                }
            }
        }
}

TEST(DflashDrafter, DsparkStopsTheBlockWhereItsConfidenceFallsBelowPMin) {
    const model::Model target = repeat_target();
    drafts::DflashDrafter d(target, draft_for(target, {.block_size = 6, .markov_rank = 4, .echo = true}), true,
                            exact_ctx(), "dspark");
    const std::vector<int32_t> toks{5, 17, 3, 42, 11, 11, 11};
    model::InferenceContext ctx(target, exact_ctx());
    ctx.kv().keep_hidden(d.target_hidden_layers(), int32_t(target.hparams().n_embd));
    ctx.prefill(std::vector<int32_t>(toks.begin(), toks.end() - 1));
    const std::vector<int32_t> cached(toks.begin(), toks.end() - 1);
    d.attach_target_kv(&ctx.kv(), &cached);
    d.sync(toks);
    const drafts::DraftChain all = d.propose(6, {}, {});
    ASSERT_EQ(all.tokens.size(), 6u) << "DSpark drafts the whole block (row 0 drafts)";
    ASSERT_EQ(all.confidence.size(), 6u);
    for (float c : all.confidence) EXPECT_TRUE(c > 0.0f && c < 1.0f) << "a sigmoid";
    // A threshold between two confidences cuts the block at the first one below it.
    std::vector<float> sorted = all.confidence;
    std::sort(sorted.begin(), sorted.end());
    const float cut    = 0.5f * (sorted[2] + sorted[3]);
    size_t first_below = 0;
    while (first_below < 6 && all.confidence[first_below] >= cut) ++first_below;
    const drafts::DraftChain some = d.propose(6, {.p_min = cut}, {});
    EXPECT_EQ(some.tokens.size(), first_below);
    EXPECT_EQ(std::vector<int32_t>(all.tokens.begin(), all.tokens.begin() + long(first_below)), some.tokens);
    // DFlash reads rows 1.. and drafts at most block_size - 1.
    drafts::DflashDrafter f(target, draft_for(target, {.block_size = 6, .echo = true}), false, exact_ctx(), "dflash");
    f.attach_target_kv(&ctx.kv(), &cached);
    f.sync(toks);
    EXPECT_EQ(f.propose(9, {}, {}).tokens.size(), 5u);
    EXPECT_EQ(f.max_draft(), 5);
    EXPECT_EQ(d.max_draft(), 6);
}

TEST(DflashDrafter, TheMarkovBiasAndConfidenceAreWhatTheLayoutSays) {
    const model::Model target   = model::make_synthetic_model(full_kv_spec());
    const drafts::DflashModel m = draft_for(target, {.block_size = 4, .markov_rank = 6, .scale = 0.3f});
    drafts::DflashDrafter d(target, m, true, exact_ctx(), "dspark");
    const std::vector<int32_t> toks{5, 17, 3};
    model::InferenceContext ctx(target, exact_ctx());
    ctx.kv().keep_hidden(d.target_hidden_layers(), int32_t(target.hparams().n_embd));
    const std::vector<int32_t> cached{5, 17};
    ctx.prefill(cached);
    std::vector<float> rows;
    for (int32_t p = 0; p < 2; ++p) rows.insert(rows.end(), ctx.kv().hidden(p), ctx.kv().hidden(p) + d.draft().fc.cols);
    const auto base = d.block_logits(rows.data(), 2, 3, 3);
    d.attach_target_kv(&ctx.kv(), &cached);
    d.sync(toks);
    const drafts::DraftChain ch = d.propose(3, {}, {});
    ASSERT_EQ(ch.tokens.size(), 3u);
    const int64_t R = m.markov_rank();
    int32_t prev    = 3;
    for (size_t i = 0; i < 3; ++i) {
        std::vector<float> w1(static_cast<size_t>(R));
        kernels::dequantize_row_ref(w1.data(), m.markov_w1.type, m.markov_w1.row(prev), R);
        const std::vector<float> bias = matvec(m.markov_w2, w1);
        std::vector<float> l          = base[i];
        for (size_t t = 0; t < l.size(); ++t) l[t] += bias[t];
        const int32_t want = int32_t(std::max_element(l.begin(), l.end()) - l.begin());
        EXPECT_EQ(ch.tokens[i], want) << "row " << i << ": argmax of the biased logits";
        prev = want;
    }
    // block_logits with the confidence applies the same chain over rows 0.. (llama.cpp's graph) and gives each
    // row's confidence, the ones propose records.
    std::vector<float> conf;
    const auto biased = d.block_logits(rows.data(), 2, 3, 3, &conf);
    ASSERT_EQ(conf.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(model::argmax(biased[i]), ch.tokens[i]) << "row " << i;
        EXPECT_FLOAT_EQ(conf[i], ch.confidence[i]) << "row " << i;
    }
    // The same file in DFlash's layout (row 0 holds the anchor) drafts rows 1..: llama.cpp's graph chains the bias
    // from row 0, so row 1's previous token is row 0's biased argmax, not the anchor.
    const auto four = d.block_logits(rows.data(), 2, 3, 4, &conf);
    drafts::DflashDrafter f(target, m, false, exact_ctx(), "dflash");
    f.attach_target_kv(&ctx.kv(), &cached);
    f.sync(toks);
    const drafts::DraftChain fc = f.propose(3, {}, {});
    ASSERT_EQ(fc.tokens.size(), 3u);
    for (size_t i = 0; i < 3; ++i)
        EXPECT_EQ(fc.tokens[i], model::argmax(four[i + 1])) << "DFlash layout, row " << i + 1;
}

TEST(DflashDrafter, MakeDrafterLoadsTheFileAndCountsOnePassPerBlock) {
    const model::Model target       = model::make_synthetic_model(full_kv_spec());
    const std::filesystem::path dir = tmp_dir() / "dflash";
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "draft.gguf").string();
    {
        const std::vector<uint8_t> b = drafts::dflash_synthetic_gguf(target, {.block_size = 6});
        std::FILE* f                 = std::fopen(path.c_str(), "wb");
        ASSERT_NE(f, nullptr);
        std::fwrite(b.data(), 1, b.size(), f);
        std::fclose(f);
    }
    drafts::DraftSpec s;
    s.kind                      = drafts::DraftKind::dflash;
    s.model_path                = path;
    const engine::RunResult res = greedy_run(target, s, 5, {5, 17, 3, 42}, 24);
    const engine::LevelStats& l = res.stats.levels[1];
    // One block pass per target step (γ = 5 < block), but the last step, which has no room to draft.
    EXPECT_LE(l.n_forward, res.stats.n_steps);
    EXPECT_GE(l.n_forward, res.stats.n_steps - 1);
    const drafts::DflashModel m = drafts::load_dflash(path, target);
    EXPECT_GT(l.bytes_weights, uint64_t(l.n_forward) * (m.weight_bytes() - m.fc.n_bytes()));
    EXPECT_GT(l.flops, 0.0);
    s.kind = drafts::DraftKind::dspark;
    EXPECT_THROW(greedy_run(target, s, 5, {5, 17, 3, 42}, 8), std::invalid_argument) << "no DSpark heads in it";
    s.model_path = (dir / "missing.gguf").string();
    s.kind       = drafts::DraftKind::dflash;
    EXPECT_THROW(greedy_run(target, s, 5, {5, 17, 3, 42}, 8), std::exception);
}

// The bundled block drafts (tools/train/train_dflash.py) on the bundled target: each loads, drafts the greedy
// blocks the trainer's torch draft gives from the target's streams (resources/models/{dflash,dspark}_reference.json,
// F16-rounded matrices: a few tokens may differ by precision, the BF16 target computed in f32 either way), and
// greedy speculation with it is lossless and accepts its drafts.
TEST(DflashBundled, TheBundledDraftsMatchTheirTrainerAndAreAccepted) {
    for (const bool dspark : {false, true}) {
        SCOPED_TRACE(dspark ? "dspark" : "dflash");
        const char* file = dspark ? kBundledDspark : kBundledDflash;
        if (!resources_dir() || !std::filesystem::exists(*resources_dir() / file))
            GTEST_SKIP() << "no bundled block draft " << file;
        const model::Model target = model::Model::load(resource_path(kBundledTargetModel).string());
        drafts::DflashDrafter d(target, drafts::load_dflash(resource_path(file).string(), target), dspark, exact_ctx(),
                                dspark ? "dspark" : "dflash");
        std::ifstream in(resource_path(dspark ? "models/dspark_reference.json" : "models/dflash_reference.json"));
        ASSERT_TRUE(in) << "the reference file beside " << file;
        const nlohmann::json ref = nlohmann::json::parse(in);
        ASSERT_EQ(ref["target_layers"].get<std::vector<int32_t>>(), d.target_hidden_layers());
        int64_t same = 0, total = 0, first_same = 0, blocks = 0;
        for (const auto& c : ref["cases"]) {
            const std::vector<int32_t> toks = c["tokens"].get<std::vector<int32_t>>();
            model::InferenceContext ctx(target, {.n_ctx = 256, .n_batch = 64, .int8_activations = false});
            ctx.kv().keep_hidden(d.target_hidden_layers(), int32_t(target.hparams().n_embd));
            ctx.prefill(toks);
            d.attach_target_kv(&ctx.kv(), &toks);
            const auto& want_blocks = c["blocks"];
            for (size_t a = 0; a < want_blocks.size(); ++a) {
                const std::vector<int32_t> want = want_blocks[a].get<std::vector<int32_t>>();
                d.sync(std::span<const int32_t>(toks.data(), a + 2));  // the anchor is tokens[a + 1]
                const drafts::DraftChain ch = d.propose(int32_t(want.size()), {}, {});
                ASSERT_EQ(ch.tokens.size(), want.size());
                for (size_t i = 0; i < want.size(); ++i) same += ch.tokens[i] == want[i];
                total += int64_t(want.size()), first_same += ch.tokens[0] == want[0], ++blocks;
            }
            d.attach_target_kv(nullptr, nullptr);
        }
        EXPECT_GE(first_same, blocks - 2) << "the first drafted token of each block";
        EXPECT_GE(double(same), 0.9 * double(total)) << "every drafted token";
        // Lossless with accepted drafts on held-out prose (16 tokens: the reference path is slow on a 37 M-parameter
        // target); the spec's empty model_path is the bundled draft.
        const std::vector<int32_t> prompt = ref["cases"][0]["tokens"].get<std::vector<int32_t>>();
        drafts::DraftSpec s;
        s.kind                      = dspark ? drafts::DraftKind::dspark : drafts::DraftKind::dflash;
        const engine::RunResult res = greedy_run(target, s, 6, prompt, 16);
        EXPECT_EQ(res.tokens, greedy_reference(target, prompt, 16));
        EXPECT_GT(double(res.stats.n_accepted), 0.2 * double(res.stats.n_drafted));
        if (dspark) {
            EXPECT_FALSE(res.stats.pos_predicted.empty()) << "the confidence head's predictions are recorded";
        }
    }
}

}  // namespace
}  // namespace speculum::test
