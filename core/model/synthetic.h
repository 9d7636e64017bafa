// Random-weight models of every supported architecture for tests and benchmarks: built in memory (owned buffers) or
// written as GGUF. Weights are random bit patterns with a per-matrix scale of about 1/sqrt(cols), not trained: logits
// are meaningful only as numbers to compare between code paths, and timings only as memory traffic.
#pragma once

#include "core/cancel.h"
#include "core/model/model.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace speculum::model {

struct SyntheticSpec {
    // llama (normal RoPE), qwen2 (QKV biases, neox RoPE), qwen3 (q/k norms), gemma2 (GeGLU, post-norms, soft-caps,
    // sliding windows), gemma3 (gemma2's parts with q/k norms and no soft-caps), phi3 (fused QKV and gate/up),
    // smollm3 (every 4th layer without RoPE), qwen3moe (qwen3's attention, a mixture of experts in every layer),
    // gpt-oss (biases everywhere, attention sinks, every other layer windowed, clamped SwiGLU experts), qwen35 (Gated
    // DeltaNet layers, every 4th gated attention with partial IMROPE), qwen35moe (qwen35 with experts and a shared one)
    std::string arch      = "llama";
    int32_t n_vocab       = 256;  // tokens
    int32_t n_embd        = 64;   // model width
    int32_t n_layer       = 2;    // blocks
    int32_t n_nextn       = 0;    // multi-token-prediction (NextN) blocks after them, in llama.cpp's layout
    int32_t n_head        = 4;    // query heads
    int32_t n_head_kv     = 2;    // KV heads (GQA when < n_head)
    int32_t n_ff          = 128;  // feed-forward width
    int32_t n_ctx         = 256;  // training context length written to the metadata
    int32_t n_rot         = 0;    // rotated dims per head; 0 = the whole head
    int32_t n_embd_head   = 0;    // head dimension (attention.key_length); 0 = n_embd / n_head
    int32_t n_swa         = 0;    // gemma2/gemma3: sliding window (tokens); 0 = none for gemma3, 4096 for gemma2
    int32_t swa_period    = 0;    // every swa_period-th layer is global; 0 = the architecture's (gemma2 2, gemma3 6)
    float rope_freq_base  = 10000.0f;  // RoPE base
    float rope_freq_scale = 1.0f;      // linear RoPE scaling (positions are multiplied by it)
    bool tied_output      = false;     // no output.weight: the LM head reuses token_embd
    bool rope_freqs       = false;     // llama: a rope_freqs.weight of Llama 3.1-style divisors (1 for high frequencies
                                       // rising to 8 for the lowest), as the long-context Llama 3.x files carry
    // Mixture of experts (qwen3moe and gpt-oss, which need them): experts per layer, experts a token uses, and each
    // expert's width (0 = n_ff / n_expert_used, as llama.cpp reads a file without expert_feed_forward_length).
    int32_t n_expert      = 0;
    int32_t n_expert_used = 0;
    int32_t n_ff_exp      = 0;
    // YaRN RoPE scaling by this factor (gpt-oss's files use 32); 0 = none. Its original context: yarn_orig_ctx
    // (0 = n_ctx).
    float yarn_factor     = 0.0f;
    int32_t yarn_orig_ctx = 0;
    // Hybrid Gated DeltaNet models (qwen35, qwen35moe; 0 = the default in brackets): the state size per head [32],
    // key heads [2], value heads [4], convolution taps [4], every full_attention_interval-th layer gated attention
    // [4]; qwen35moe's shared expert width [n_ff].
    int32_t ssm_d_state             = 0;
    int32_t ssm_n_group             = 0;
    int32_t ssm_dt_rank             = 0;
    int32_t ssm_d_conv              = 0;
    int32_t full_attention_interval = 0;
    int32_t n_ff_shexp              = 0;
    kernels::GgmlType type          = kernels::GgmlType::F16;  // storage type of every matrix (norms, biases and a MoE
                                                               // router are f32, as converters keep them)
    uint64_t seed                               = 1;           // weights are a pure function of the spec
    bool operator==(const SyntheticSpec&) const = default;
    // Throws std::invalid_argument naming the field (also: cols not a multiple of the type's block size).
    void validate() const;
};
void to_json(nlohmann::json& j, const SyntheticSpec& s);
void from_json(const nlohmann::json& j, SyntheticSpec& s);

// "f16", "Q8_0", ... (case-insensitive) -> the type, for the types synthetic models support; nullopt otherwise.
std::optional<kernels::GgmlType> parse_weight_type(const std::string& name);

// The hparams a model of this spec has (what hparams_from_gguf reads back from write_synthetic_gguf).
Hparams synthetic_hparams(const SyntheticSpec& spec);
// Bytes of the weight matrices a model of this spec holds (norms and biases are left out: they are tiny).
uint64_t synthetic_weight_bytes(const SyntheticSpec& spec);
// Builds the random weights in memory. Cancelled/progress once per layer. A model whose weights (plus an eighth for
// the build's scratch) do not fit in the memory available now is refused first, with both sizes in the message:
// std::runtime_error (a 64-layer, 65536-wide f16 target allocated 4 GB before bad_alloc).
Model make_synthetic_model(const SyntheticSpec& spec, const ProgressFn& progress = {}, const CancelToken& cancel = {});
// Writes the same model as GGUF v3 (llama.cpp tensor and key names) to `path`.
void write_synthetic_gguf(const SyntheticSpec& spec, const std::string& path);
// Writes the weights of any model (hparams + views) as GGUF v3. With `tokenizer_from`, every `tokenizer.*` key of
// that file is copied too (a random-weight model with a real vocabulary, for text-level tests).
void write_model_gguf(const Model& model, const std::string& path, const GgufFile* tokenizer_from = nullptr);

}  // namespace speculum::model
