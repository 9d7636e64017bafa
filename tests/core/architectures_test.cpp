// The architectures beyond llama/qwen2 (issue #23): their hparams survive a GGUF round trip, files that lack one of
// their parts are refused naming the tensor or key, and each part changes the logits (so a loader that ignored one
// would be caught). Numerical agreement with llama.cpp is parity_test.cpp's job.
#include "core/model/forward.h"
#include "core/model/gguf_writer.h"
#include "core/model/model_gguf.h"
#include "core/model/synthetic.h"
#include "model_fixtures.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

using namespace speculum;
using namespace speculum::model;
using kernels::GgmlType;
using testing::HasSubstr;

namespace {

const char* const kArchs[] = {"llama",  "qwen2", "qwen3",   "qwen3moe", "gpt-oss",  "gemma2",
                              "gemma3", "phi3",  "smollm3", "qwen35",   "qwen35moe"};

using test::file_of;

std::string error_of(const GgufFile& f) {
    try {
        hparams_from_gguf(f);
    } catch (const GgufError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(Architectures, HparamsRoundTripThroughGguf) {
    for (const char* arch : kArchs) {
        SCOPED_TRACE(arch);
        const SyntheticSpec spec = test::spec_arch(arch, GgmlType::F16);
        EXPECT_EQ(hparams_from_gguf(file_of(spec)), synthetic_hparams(spec));
        const Model m = test::load_via_gguf(spec, std::string("arch_") + arch);
        EXPECT_EQ(m.hparams(), synthetic_hparams(spec));
    }
}

TEST(Architectures, WhatEachOneSwitchesOn) {
    auto hp = [](const char* a) { return synthetic_hparams(test::spec_arch(a, GgmlType::F16)); };
    EXPECT_TRUE(hp("qwen3").qk_norm);
    EXPECT_EQ(hp("qwen3").head_dim(), 32);
    EXPECT_EQ(hp("qwen3").n_embd_q(), 128);  // 4 heads of 32 on a width of 64
    EXPECT_TRUE(hp("gemma2").post_norms && hp("gemma2").scale_embd);
    EXPECT_EQ(hp("gemma2").ffn_act, FfnActivation::gelu);
    EXPECT_FLOAT_EQ(hp("gemma2").attn_softcap, 50.0f);
    EXPECT_FLOAT_EQ(hp("gemma2").final_softcap, 30.0f);
    EXPECT_EQ(hp("gemma2").swa_layers, (std::vector<uint8_t>{1, 0}));  // every other layer windowed
    EXPECT_EQ(hp("gemma3").swa_layers, (std::vector<uint8_t>{1, 0, 1}));
    EXPECT_FLOAT_EQ(hp("gemma3").attn_softcap, 0.0f);
    EXPECT_TRUE(hp("phi3").fused_qkv && hp("phi3").fused_gate_up);
    EXPECT_EQ(hp("phi3").rope_style, RopeStyle::neox);
    EXPECT_FALSE(hp("smollm3").uses_rope(3));
    EXPECT_TRUE(hp("smollm3").uses_rope(2));
    EXPECT_EQ(hp("smollm3").rope_style, RopeStyle::normal);
}

TEST(Architectures, MissingPartsAreRefusedByName) {
    EXPECT_THAT(error_of(file_of(test::spec_arch("qwen3", GgmlType::F16), {}, {"blk.1.attn_k_norm.weight"})),
                HasSubstr("tensor 'blk.1.attn_k_norm.weight': missing"));
    EXPECT_THAT(error_of(file_of(test::spec_arch("gemma3", GgmlType::F16), {}, {"blk.0.post_ffw_norm.weight"})),
                HasSubstr("tensor 'blk.0.post_ffw_norm.weight': missing"));
    EXPECT_THAT(error_of(file_of(test::spec_arch("phi3", GgmlType::F16), {}, {"blk.0.ffn_up.weight"})),
                HasSubstr("tensor 'blk.0.ffn_up.weight': missing"));
    // A value head size other than the key's is not something the runtime does.
    EXPECT_THAT(error_of(file_of(test::spec_arch("qwen3", GgmlType::F16),
                                 [](GgufWriter& g) { g.set_uint32("qwen3.attention.value_length", 16); })),
                HasSubstr("qwen3.attention.value_length: 16 differs from key_length 32"));
    // Phi-3 128k's LongRoPE factors are refused, not ignored.
    EXPECT_THAT(error_of(file_of(test::spec_arch("phi3", GgmlType::F16),
                                 [](GgufWriter& g) {
                                     const std::vector<float> f(16, 1.0f);
                                     g.add_tensor("rope_factors_long.weight", {16}, GgmlType::F32, f.data(), 64);
                                 })),
                HasSubstr("LongRoPE scaling (Phi-3 128k) is not supported"));
    // A gemma2 file that carries a separate (unfused) layout of phi3 is not silently half-read.
    EXPECT_THAT(error_of(file_of(test::spec_arch("gemma2", GgmlType::F16),
                                 [](GgufWriter& g) {
                                     const std::vector<float> b(64, 0.0f);
                                     g.add_tensor("blk.0.ffn_up.bias", {64}, GgmlType::F32, b.data(), 256);
                                 })),
                HasSubstr("tensor 'blk.0.ffn_up.bias': not part of a gemma2 model"));
}

// Each part is live: switching it off in the hparams of the same weights changes the logits.
TEST(Architectures, EveryPartChangesTheLogits) {
    const std::vector<int32_t> tokens = {1, 17, 42, 5, 99, 3, 64, 7};
    auto last_logits = [&](const Model& m) { return test::decode_all(m, tokens, ForwardPath::reference).back(); };
    struct Toggle {
        const char* arch;
        const char* what;
        std::function<void(Hparams&)> off;
    };
    const Toggle toggles[] = {
        {"gemma2", "attention soft-cap (50 -> 0.5: random scores are far below 50)",
         [](Hparams& h) { h.attn_softcap = 0.5f; }},
        {"gemma2", "final soft-cap", [](Hparams& h) { h.final_softcap = 0; }},
        {"gemma2", "sliding window", [](Hparams& h) { h.n_swa = 0; }},
        {"gemma2", "embedding scale", [](Hparams& h) { h.scale_embd = false; }},
        {"gemma2", "GeGLU", [](Hparams& h) { h.ffn_act = FfnActivation::silu; }},
        {"gemma3", "query scale", [](Hparams& h) { h.attn_scale = 0.5f; }},
        {"gemma3", "window RoPE base", [](Hparams& h) { h.rope_freq_base_swa = 500.0f; }},
        {"smollm3", "RoPE-less layers", [](Hparams& h) { h.nope_period = 0; }},
        {"qwen3moe", "the kept experts' weights normalised", [](Hparams& h) { h.expert_weights_norm = false; }},
        {"qwen3moe", "experts per token", [](Hparams& h) { h.n_expert_used = 3; }},
        {"gpt-oss", "attention sinks", [](Hparams& h) { h.attn_sinks = false; }},
        {"gpt-oss", "the attention output's bias", [](Hparams& h) { h.attn_out_bias = false; }},
        {"gpt-oss", "the router's and experts' biases", [](Hparams& h) { h.moe_biases = false; }},
        {"gpt-oss", "clamped SwiGLU", [](Hparams& h) { h.expert_act = ExpertActivation::swiglu; }},
        {"gpt-oss", "YaRN (as linear scaling)", [](Hparams& h) { h.rope_yarn = false; }},
        {"gpt-oss", "sliding window", [](Hparams& h) { h.n_swa = 0; }},
    };
    for (const Toggle& t : toggles) {
        SCOPED_TRACE(std::string(t.arch) + ": " + t.what);
        const Model m = make_synthetic_model(test::spec_arch(t.arch, GgmlType::F32));
        Hparams hp    = m.hparams();
        t.off(hp);
        const Model changed = Model::from_weights(hp, m.weights());
        EXPECT_GT(test::rel_diff(last_logits(m), last_logits(changed)), 1e-3);
    }
}

// A softmax over the kept experts' logits is the full softmax renormalised over them: with qwen3moe's weight
// normalisation the two gatings give the same logits (so gpt-oss's gating needs no normalisation).
TEST(Architectures, KeptSoftmaxEqualsNormalisedSoftmax) {
    const std::vector<int32_t> tokens = {1, 17, 42, 5, 99, 3, 64, 7};
    const Model m                     = make_synthetic_model(test::spec_arch("qwen3moe", GgmlType::F32));
    Hparams hp                        = m.hparams();
    hp.expert_gating                  = ExpertGating::softmax_weight;
    hp.expert_weights_norm            = false;
    const Model kept                  = Model::from_weights(hp, m.weights());
    const auto a                      = test::decode_all(m, tokens, ForwardPath::reference).back();
    EXPECT_LT(test::rel_diff(test::decode_all(kept, tokens, ForwardPath::reference).back(), a), 1e-5);
}

// Inside its window a windowed layer sees what a full one does: a sequence no longer than the window gives the
// same logits with the window as without it.
TEST(Architectures, SlidingWindowIsInvisibleWithinTheWindow) {
    const Model m                     = make_synthetic_model(test::spec_arch("gemma2", GgmlType::F32));
    Hparams hp                        = m.hparams();
    hp.n_swa                          = 1000;
    const Model wide                  = Model::from_weights(hp, m.weights());
    const std::vector<int32_t> short_ = {1, 17, 42};  // 3 tokens: the fixture's window is 3
    const auto a                      = test::decode_all(m, short_, ForwardPath::fast);
    const auto b                      = test::decode_all(wide, short_, ForwardPath::fast);
    for (size_t i = 0; i < short_.size(); ++i) EXPECT_LT(test::rel_diff(a[i], b[i]), 1e-6) << i;
}
