// Model loading: GGUF -> views into the mapping, hparams read back, tied output, in-memory models equal to their
// file form, shape errors naming the tensor, load cancellation.
#include "model_fixtures.h"

#include "core/model/forward.h"
#include "core/model/model.h"
#include "core/model/synthetic.h"

#include <gtest/gtest.h>

using namespace speculum;
using namespace speculum::model;
using kernels::GgmlType;

TEST(Model, LoadsWhatTheWriterWrote) {
    const SyntheticSpec spec = test::spec_qwen2(GgmlType::Q8_0);
    const Model m            = test::load_via_gguf(spec, "model_load_qwen2");
    EXPECT_EQ(m.hparams(), synthetic_hparams(spec));
    ASSERT_NE(m.gguf(), nullptr);
    const GgufTensorInfo* t = m.gguf()->tensor("blk.1.attn_k.weight");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(m.weights().layers[1].wk.data, t->data);  // zero-copy view into the mapping
    EXPECT_EQ(m.weights().layers[1].wk.rows, m.hparams().n_embd_kv());
    EXPECT_EQ(m.weights().layers[1].bk.size(), static_cast<size_t>(m.hparams().n_embd_kv()));
}

TEST(Model, TiedOutputSharesTheEmbedding) {
    const Model m = test::load_via_gguf(test::spec_odd_tied(GgmlType::F16), "model_tied");
    EXPECT_TRUE(m.hparams().tied_output);
    EXPECT_EQ(m.weights().output.data, m.weights().token_embd.data);
    EXPECT_EQ(m.weight_bytes_total() + m.weights().token_embd.row_bytes(),
              m.weight_bytes_per_token());  // the tied matrix is counted once in total
}

TEST(Model, InMemoryAndFileFormsGiveIdenticalLogits) {
    const SyntheticSpec spec        = test::spec_gqa(GgmlType::BF16);
    const Model mem                 = make_synthetic_model(spec);
    const Model file                = test::load_via_gguf(spec, "model_mem_vs_file");
    const std::vector<int32_t> toks = {4, 8, 15, 16, 23, 42};
    EXPECT_EQ(test::decode_all(mem, toks, ForwardPath::reference),
              test::decode_all(file, toks, ForwardPath::reference));
}

TEST(Model, ViewsOutliveTheModelTheyCameFrom) {
    // A draft built from a target keeps the target's storage alive through the views' keep_alive.
    ModelWeights shared;
    Hparams hp;
    std::vector<std::vector<float>> expected;
    {
        const Model target = test::load_via_gguf(test::spec_gqa(GgmlType::Q4_0), "model_keep_alive");
        shared             = target.weights();
        hp                 = target.hparams();
        expected           = test::decode_all(target, {1, 2, 3}, ForwardPath::reference);
    }
    const Model draft = Model::from_weights(hp, shared, "draft");
    EXPECT_EQ(test::decode_all(draft, {1, 2, 3}, ForwardPath::reference), expected);
}

TEST(Model, ShapeErrorsNameTheTensor) {
    const Model m  = make_synthetic_model(test::spec_gqa(GgmlType::F32));
    ModelWeights w = m.weights();
    w.layers[1].w_up.rows -= 1;
    try {
        Model::from_weights(m.hparams(), w, "bad");
        FAIL() << "expected invalid_argument";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("blk.1.ffn_up.weight"), std::string::npos) << e.what();
    }
    w = m.weights();
    w.layers[0].attn_norm.pop_back();
    EXPECT_THROW(Model::from_weights(m.hparams(), w), std::invalid_argument);
    Hparams hp = m.hparams();
    hp.arch    = "gpt2";
    EXPECT_THROW(Model::from_weights(hp, m.weights()), std::invalid_argument);
}

TEST(Model, LoadReportsProgressAndCancels) {
    SyntheticSpec spec     = test::spec_gqa(GgmlType::F16);
    spec.n_layer           = 4;
    const std::string path = (test::tmp_dir() / "model_cancel.gguf").string();
    write_synthetic_gguf(spec, path);
    std::vector<double> fractions;
    Model::load(path, [&](double f, const std::string&) { fractions.push_back(f); });
    ASSERT_FALSE(fractions.empty());
    EXPECT_DOUBLE_EQ(fractions.back(), 1.0);
    CancelToken token;
    EXPECT_THROW(Model::load(
                     path,
                     [&](double f, const std::string&) {
                         if (f >= 0.5) token.cancel();
                     },
                     token),
                 Cancelled);
}

TEST(Model, MissingFileIsAClearError) {
    EXPECT_THROW(Model::load((test::tmp_dir() / "does_not_exist.gguf").string()), std::runtime_error);
}

TEST(SyntheticSpec, JsonRoundTripAndValidation) {
    SyntheticSpec s  = test::spec_odd_tied(GgmlType::MXFP4);
    nlohmann::json j = s;
    EXPECT_EQ(j.get<SyntheticSpec>(), s);
    EXPECT_EQ(nlohmann::json::object().get<SyntheticSpec>(), SyntheticSpec{});
    s.n_embd = 100;  // not a multiple of the 32-element block
    EXPECT_THROW(s.validate(), std::invalid_argument);
    EXPECT_EQ(parse_weight_type("Q8_0"), GgmlType::Q8_0);
    EXPECT_FALSE(parse_weight_type("q5_k").has_value());
    EXPECT_EQ(parse_weight_type("IQ4_NL"), GgmlType::IQ4_NL);
}

TEST(Model, RopeFrequencyFactorsDivideTheFrequencies) {
    // Factors of 2 on every frequency turn each pair half as fast: the same as linear scaling by 0.5.
    const Model base = make_synthetic_model(test::spec_gqa(GgmlType::F16));
    ModelWeights w   = base.weights();
    w.rope_freqs.assign(static_cast<size_t>(base.hparams().n_rot / 2), 2.0f);
    const std::string path = (test::tmp_dir() / "model_rope_freqs.gguf").string();
    write_model_gguf(Model::from_weights(base.hparams(), w), path);
    const Model with_factors = Model::load(path);
    ASSERT_EQ(with_factors.weights().rope_freqs.size(), static_cast<size_t>(base.hparams().n_rot / 2));
    Hparams hp                      = base.hparams();
    hp.rope_freq_scale              = 0.5f;
    const Model scaled              = Model::from_weights(hp, base.weights());
    const std::vector<int32_t> toks = {9, 8, 7, 6, 5};
    const auto a                    = test::decode_all(with_factors, toks, ForwardPath::reference);
    const auto b                    = test::decode_all(scaled, toks, ForwardPath::reference);
    const auto c                    = test::decode_all(base, toks, ForwardPath::reference);
    for (size_t i = 1; i < toks.size(); ++i) {  // position 0 has no rotation
        EXPECT_LT(test::rel_diff(a[i], b[i]), 1e-5) << i;
        EXPECT_GT(test::rel_diff(a[i], c[i]), 1e-3) << i;
    }
}
