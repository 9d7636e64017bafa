// hparams_from_gguf on small GGUFs written with GgufWriter (random weights): llama and qwen2, GQA, tied and
// untied output, q/k/v biases, quantized matrices, RoPE scaling; and one test per rejected inconsistency.
#include "core/model/hparams.h"
#include "core/model/gguf_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <random>

using namespace speculum::model;
using speculum::kernels::GgmlType;
using testing::HasSubstr;

// ---- GGUF fixtures ----

namespace {

struct TensorDesc {
    std::string name;
    std::vector<uint64_t> dims;
    GgmlType type;
};

// A model description that tests can edit (drop or change keys and tensors) before it is written.
struct ModelDesc {
    std::vector<std::pair<std::string, GgufValue>> kvs;
    std::vector<TensorDesc> tensors;

    void set(const std::string& key, GgufValue v) {
        for (auto& kv : kvs)
            if (kv.first == key) return void(kv.second = std::move(v));
        kvs.emplace_back(key, std::move(v));
    }
    void drop_key(const std::string& key) {
        std::erase_if(kvs, [&](const auto& kv) { return kv.first == key; });
    }
    void drop_tensor(const std::string& n) {
        std::erase_if(tensors, [&](const auto& t) { return t.name == n; });
    }
    TensorDesc& tensor(const std::string& n) {
        for (auto& t : tensors)
            if (t.name == n) return t;
        throw std::runtime_error("no tensor " + n);
    }
};

GgufValue u32(uint32_t v) {
    GgufValue x;
    x.type = GgufType::UINT32, x.i = v, x.u = v;
    return x;
}
GgufValue f32(float v) {
    GgufValue x;
    x.type = GgufType::FLOAT32, x.f = v;
    return x;
}
GgufValue str(const std::string& s) {
    GgufValue x;
    x.type = GgufType::STRING, x.s = s;
    return x;
}

struct Shape {
    std::string arch = "llama";
    uint32_t n_vocab = 40, n_embd = 64, n_layer = 2, n_head = 4, n_head_kv = 4, n_ff = 96;
    bool tied = false, qkv_bias = false;
    GgmlType matrix_type = GgmlType::F32, vector_type = GgmlType::F32;
};

ModelDesc describe(const Shape& s) {
    ModelDesc d;
    const std::string a = s.arch + ".";
    d.set("general.architecture", str(s.arch));
    d.set(a + "context_length", u32(256));
    d.set(a + "embedding_length", u32(s.n_embd));
    d.set(a + "block_count", u32(s.n_layer));
    d.set(a + "feed_forward_length", u32(s.n_ff));
    d.set(a + "attention.head_count", u32(s.n_head));
    d.set(a + "attention.head_count_kv", u32(s.n_head_kv));
    d.set(a + "rope.dimension_count", u32(s.n_embd / s.n_head));
    d.set(a + "rope.freq_base", f32(500000.0f));
    d.set(a + "attention.layer_norm_rms_epsilon", f32(1e-6f));
    const uint64_t E = s.n_embd, V = s.n_vocab, KV = s.n_embd / s.n_head * s.n_head_kv, FF = s.n_ff;
    const GgmlType M = s.matrix_type, N = s.vector_type;
    d.tensors.push_back({"token_embd.weight", {E, V}, M});
    d.tensors.push_back({"output_norm.weight", {E}, N});
    if (!s.tied) d.tensors.push_back({"output.weight", {E, V}, M});
    for (uint32_t il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        d.tensors.push_back({p + "attn_norm.weight", {E}, N});
        d.tensors.push_back({p + "attn_q.weight", {E, E}, M});
        d.tensors.push_back({p + "attn_k.weight", {E, KV}, M});
        d.tensors.push_back({p + "attn_v.weight", {E, KV}, M});
        if (s.qkv_bias) {
            d.tensors.push_back({p + "attn_q.bias", {E}, N});
            d.tensors.push_back({p + "attn_k.bias", {KV}, N});
            d.tensors.push_back({p + "attn_v.bias", {KV}, N});
        }
        d.tensors.push_back({p + "attn_output.weight", {E, E}, M});
        d.tensors.push_back({p + "ffn_norm.weight", {E}, N});
        d.tensors.push_back({p + "ffn_gate.weight", {E, FF}, M});
        d.tensors.push_back({p + "ffn_up.weight", {E, FF}, M});
        d.tensors.push_back({p + "ffn_down.weight", {FF, E}, M});
    }
    return d;
}

GgufFile write(const ModelDesc& d) {
    GgufWriter w;
    for (const auto& [k, v] : d.kvs) w.set_value(k, v);
    std::mt19937 rng(7);
    for (const auto& t : d.tensors) {
        uint64_t rows = 1;
        for (size_t i = 1; i < t.dims.size(); ++i) rows *= t.dims[i];
        std::vector<uint8_t> bytes(speculum::kernels::ggml_row_size(t.type, t.dims[0]) * rows);
        for (auto& b : bytes) b = static_cast<uint8_t>(rng());
        w.add_tensor(t.name, t.dims, t.type, bytes.data(), bytes.size());
    }
    return GgufFile::from_bytes(w.to_bytes(), "model.gguf");
}

std::string error_of(const ModelDesc& d) {
    GgufFile f = write(d);
    try {
        hparams_from_gguf(f);
    } catch (const GgufError& e) {
        return e.what();
    }
    return "accepted";
}

ModelDesc edited(std::function<void(ModelDesc&)> edit, Shape s = {}) {
    ModelDesc d = describe(s);
    edit(d);
    return d;
}

}  // namespace

// ---- accepted models ----

TEST(Hparams, LlamaUntied) {
    Hparams h = hparams_from_gguf(write(describe({})));
    EXPECT_EQ(h.arch, "llama");
    EXPECT_EQ(h.n_vocab, 40);
    EXPECT_EQ(h.n_ctx_train, 256);
    EXPECT_EQ(h.n_embd, 64);
    EXPECT_EQ(h.n_layer, 2);
    EXPECT_EQ(h.n_head, 4);
    EXPECT_EQ(h.n_head_kv, 4);
    EXPECT_EQ(h.n_ff, 96);
    EXPECT_EQ(h.n_rot, 16);
    EXPECT_EQ(h.head_dim(), 16);
    EXPECT_EQ(h.n_embd_kv(), 64);
    EXPECT_FLOAT_EQ(h.rope_freq_base, 500000.0f);
    EXPECT_FLOAT_EQ(h.rope_freq_scale, 1.0f);
    EXPECT_FLOAT_EQ(h.rms_eps, 1e-6f);
    EXPECT_EQ(h.rope_style, RopeStyle::normal);
    EXPECT_FALSE(h.tied_output);
    EXPECT_FALSE(h.qkv_bias);
    EXPECT_FALSE(h.rope_freqs);
}

TEST(Hparams, GqaTiedQuantized) {
    Shape s;
    s.n_embd = 128, s.n_head = 8, s.n_head_kv = 2, s.n_layer = 3, s.n_ff = 160, s.tied = true;
    s.matrix_type = GgmlType::Q8_0, s.vector_type = GgmlType::F16;
    Hparams h = hparams_from_gguf(write(describe(s)));
    EXPECT_EQ(h.n_head_kv, 2);
    EXPECT_EQ(h.n_embd_kv(), 32);
    EXPECT_EQ(h.n_layer, 3);
    EXPECT_TRUE(h.tied_output);
}

TEST(Hparams, Qwen2WithBiases) {
    Shape s;
    s.arch = "qwen2", s.n_head = 4, s.n_head_kv = 1, s.qkv_bias = true, s.tied = true, s.vector_type = GgmlType::BF16;
    Hparams h = hparams_from_gguf(write(describe(s)));
    EXPECT_EQ(h.arch, "qwen2");
    EXPECT_EQ(h.rope_style, RopeStyle::neox);
    EXPECT_TRUE(h.qkv_bias);
    EXPECT_TRUE(h.tied_output);
    EXPECT_EQ(h.n_embd_kv(), 16);
}

TEST(Hparams, DefaultsWhenOptionalKeysAreAbsent) {
    ModelDesc d = describe({});
    for (const char* k : {"llama.attention.head_count_kv", "llama.rope.dimension_count", "llama.rope.freq_base"})
        d.drop_key(k);
    Hparams h = hparams_from_gguf(write(d));
    EXPECT_EQ(h.n_head_kv, 4);
    EXPECT_EQ(h.n_rot, 16);
    EXPECT_FLOAT_EQ(h.rope_freq_base, 10000.0f);
}

TEST(Hparams, LinearRopeScaling) {
    Hparams h = hparams_from_gguf(write(edited([](ModelDesc& d) {
        d.set("llama.rope.scaling.type", str("linear"));
        d.set("llama.rope.scaling.factor", f32(4.0f));
    })));
    EXPECT_FLOAT_EQ(h.rope_freq_scale, 0.25f);
    Hparams old = hparams_from_gguf(write(edited([](ModelDesc& d) { d.set("llama.rope.scale_linear", f32(2.0f)); })));
    EXPECT_FLOAT_EQ(old.rope_freq_scale, 0.5f);
}

TEST(Hparams, RopeFreqsTensorIsReported) {
    Hparams h = hparams_from_gguf(write(edited([](ModelDesc& d) {
        d.tensors.push_back({"rope_freqs.weight", {8}, GgmlType::F32});
    })));
    EXPECT_TRUE(h.rope_freqs);
    EXPECT_THAT(error_of(edited([](ModelDesc& d) {
                    d.tensors.push_back({"rope_freqs.weight", {16}, GgmlType::F32});
                })),
                HasSubstr("tensor 'rope_freqs.weight': shape [16] does not match [n_rot / 2] = [8]"));
}

// ---- rejected metadata ----

TEST(Hparams, UnsupportedArchitecture) {
    EXPECT_EQ(error_of(edited([](ModelDesc& d) { d.set("general.architecture", str("gpt2")); })),
              "model.gguf: general.architecture: architecture 'gpt2' is not supported (llama, qwen2, qwen3, qwen3moe, "
              "gpt-oss, gemma2, gemma3, phi3, smollm3, qwen35, qwen35moe are)");
    EXPECT_EQ(error_of(edited([](ModelDesc& d) { d.drop_key("general.architecture"); })),
              "model.gguf: general.architecture: missing");
}

TEST(Hparams, MissingRequiredKey) {
    for (const char* k :
         {"llama.context_length", "llama.embedding_length", "llama.block_count", "llama.feed_forward_length",
          "llama.attention.head_count", "llama.attention.layer_norm_rms_epsilon"})
        EXPECT_EQ(error_of(edited([&](ModelDesc& d) { d.drop_key(k); })),
                  std::string("model.gguf: ") + k + ": missing");
}

TEST(Hparams, WrongKeyTypeOrRange) {
    EXPECT_THAT(error_of(edited([](ModelDesc& d) { d.set("llama.block_count", str("two")); })),
                HasSubstr("llama.block_count: expected a non-negative integer, got string"));
    EXPECT_THAT(error_of(edited([](ModelDesc& d) { d.set("llama.block_count", u32(0)); })),
                HasSubstr("llama.block_count: value 0 is out of range"));
    EXPECT_THAT(error_of(edited([](ModelDesc& d) { d.set("llama.attention.layer_norm_rms_epsilon", f32(-1.0f)); })),
                HasSubstr("llama.attention.layer_norm_rms_epsilon: value -1.0"));
}

TEST(Hparams, HeadsMustDivide) {
    EXPECT_THAT(error_of(edited([](ModelDesc& d) { d.set("llama.attention.head_count", u32(5)); })),
                HasSubstr("llama.attention.head_count: 5 heads do not divide embedding_length 64"));
    EXPECT_THAT(error_of(edited([](ModelDesc& d) { d.set("llama.attention.head_count_kv", u32(3)); })),
                HasSubstr("llama.attention.head_count_kv: 3 KV heads do not divide the 4 query heads"));
}

TEST(Hparams, UnsupportedRopeScalingOrRotaryDims) {
    EXPECT_THAT(error_of(edited([](ModelDesc& d) { d.set("llama.rope.scaling.type", str("longrope")); })),
                HasSubstr("llama.rope.scaling.type: RoPE scaling 'longrope' is not supported (linear, yarn or none)"));
    EXPECT_THAT(error_of(edited([](ModelDesc& d) {
                    d.set("llama.rope.scaling.type", str("yarn"));
                    d.set("llama.rope.scaling.yarn_log_multiplier", f32(0.1f));
                })),
                HasSubstr("llama.rope.scaling.yarn_log_multiplier: DeepSeek's YaRN magnitude is not supported"));
    EXPECT_THAT(error_of(edited([](ModelDesc& d) {
                    d.set("llama.rope.scaling.type", str("yarn"));
                    d.set("llama.rope.scaling.yarn_beta_fast", f32(-1.0f));
                })),
                HasSubstr("llama.rope.scaling.yarn_beta_fast: value -1"));
    EXPECT_THAT(error_of(edited([](ModelDesc& d) { d.set("llama.rope.dimension_count", u32(8)); })),
                HasSubstr("llama.rope.dimension_count: 8 must equal the head dimension 16 for llama"));
    Shape q;
    q.arch = "qwen2";
    EXPECT_THAT(error_of(edited([](ModelDesc& d) { d.set("qwen2.rope.dimension_count", u32(7)); }, q)),
                HasSubstr("qwen2.rope.dimension_count: 7 must be even"));
}

// Experts on a dense architecture are refused, naming the MoE architectures that are read (tests/core/moe_test.cpp
// covers qwen3moe's own files).
TEST(Hparams, MixtureOfExpertsRejected) {
    EXPECT_THAT(error_of(edited([](ModelDesc& d) { d.set("llama.expert_count", u32(8)); })),
                HasSubstr("llama.expert_count: mixture-of-experts 'llama' models are not supported (of the MoE "
                          "architectures, qwen3moe, gpt-oss and qwen35moe are)"));
}

// ---- rejected tensors ----

TEST(Hparams, MissingTensor) {
    EXPECT_EQ(error_of(edited([](ModelDesc& d) { d.drop_tensor("blk.1.ffn_down.weight"); })),
              "model.gguf: tensor 'blk.1.ffn_down.weight': missing");
    EXPECT_EQ(error_of(edited([](ModelDesc& d) { d.drop_tensor("token_embd.weight"); })),
              "model.gguf: tensor 'token_embd.weight': missing");
    EXPECT_EQ(error_of(edited([](ModelDesc& d) { d.drop_tensor("output_norm.weight"); })),
              "model.gguf: tensor 'output_norm.weight': missing");
}

TEST(Hparams, WrongTensorShape) {
    EXPECT_EQ(error_of(edited([](ModelDesc& d) {
                  d.tensor("blk.0.attn_k.weight").dims = {64, 32};
              })),
              "model.gguf: tensor 'blk.0.attn_k.weight': shape [64, 32] does not match [n_embd, n_embd_kv] = [64, 64]");
    EXPECT_THAT(error_of(edited([](ModelDesc& d) {
                    d.tensor("blk.1.ffn_down.weight").dims = {64, 96};
                })),
                HasSubstr("tensor 'blk.1.ffn_down.weight': shape [64, 96] does not match [n_ff, n_embd] = [96, 64]"));
    EXPECT_THAT(error_of(edited([](ModelDesc& d) {
                    d.tensor("output.weight").dims = {64, 41};
                })),
                HasSubstr("tensor 'output.weight': shape [64, 41] does not match [n_embd, n_vocab] = [64, 40]"));
    EXPECT_THAT(error_of(edited([](ModelDesc& d) {
                    d.tensor("token_embd.weight").dims = {64, 40, 2};
                })),
                HasSubstr("tensor 'token_embd.weight': shape [64, 40, 2] is not [n_embd, n_vocab]"));
    // A trailing 1 is the same shape to ggml.
    EXPECT_EQ(error_of(edited([](ModelDesc& d) { d.tensor("output_norm.weight").dims = {64, 1}; })), "accepted");
}

TEST(Hparams, NormVectorMustBeFloat) {
    EXPECT_THAT(error_of(edited([](ModelDesc& d) { d.tensor("blk.0.ffn_norm.weight").type = GgmlType::Q8_0; })),
                HasSubstr("tensor 'blk.0.ffn_norm.weight': type q8_0 is not supported for a norm or bias vector"));
}

TEST(Hparams, BiasesMustBeInEveryLayer) {
    Shape s;
    s.arch = "qwen2", s.qkv_bias = true;
    EXPECT_THAT(error_of(edited([](ModelDesc& d) { d.drop_tensor("blk.1.attn_v.bias"); }, s)),
                HasSubstr("tensor 'blk.1.attn_v.bias': missing"));
}

TEST(Hparams, UnexpectedTensorsAreRejected) {
    EXPECT_THAT(error_of(edited([](ModelDesc& d) {
                    d.tensors.push_back({"blk.2.attn_norm.weight", {64}, GgmlType::F32});
                })),
                HasSubstr("tensor 'blk.2.attn_norm.weight': not part of a llama model with 2 layers"));
    EXPECT_THAT(error_of(edited([](ModelDesc& d) {
                    d.tensors.push_back({"blk.0.attn_output.bias", {64}, GgmlType::F32});
                })),
                HasSubstr("tensor 'blk.0.attn_output.bias': not part of a llama model"));
}

// ---- vocabulary size ----

TEST(Hparams, TokenizerSizeMustMatchEmbeddings) {
    EXPECT_THAT(error_of(edited([](ModelDesc& d) {
                    GgufValue toks;
                    toks.type = GgufType::ARRAY, toks.array_type = GgufType::STRING;
                    toks.strings.assign(39, "t");
                    d.set("tokenizer.ggml.tokens", toks);
                })),
                HasSubstr("tokenizer.ggml.tokens: 39 tokens, but token_embd.weight has 40 rows"));
}

TEST(Hparams, VocabSizeKeyMustMatchEmbeddings) {
    EXPECT_THAT(error_of(edited([](ModelDesc& d) { d.set("llama.vocab_size", u32(41)); })),
                HasSubstr("llama.vocab_size: 41, but token_embd.weight has 40 rows"));
    EXPECT_EQ(error_of(edited([](ModelDesc& d) { d.set("llama.vocab_size", u32(40)); })), "accepted");
}
