// Hyper-parameters of a Llama-family model (architectures `llama` and `qwen2`), read from GGUF metadata with
// llama.cpp's key names, and validated against the tensors present.
#pragma once

#include "core/model/gguf.h"

#include <cstdint>
#include <string>

namespace speculum::model {

enum class RopeStyle { normal, neox };  // llama: adjacent pairs (GGUF weights are permuted); qwen2: halves

struct Hparams {
    std::string arch;              // "llama" or "qwen2"
    int32_t n_vocab      = 0;      // tokens (rows of token_embd)
    int32_t n_ctx_train  = 2048;   // <arch>.context_length
    int32_t n_embd       = 0;      // <arch>.embedding_length
    int32_t n_layer      = 0;      // <arch>.block_count
    int32_t n_head       = 0;      // <arch>.attention.head_count
    int32_t n_head_kv    = 0;      // <arch>.attention.head_count_kv (defaults to n_head)
    int32_t n_ff         = 0;      // <arch>.feed_forward_length
    int32_t n_rot        = 0;      // <arch>.rope.dimension_count (defaults to head dim)
    float rope_freq_base  = 10000.0f;  // <arch>.rope.freq_base
    float rope_freq_scale = 1.0f;      // 1 / <arch>.rope.scaling.factor (linear scaling), 1 when absent
    float rms_eps         = 1e-5f;     // <arch>.attention.layer_norm_rms_epsilon
    RopeStyle rope_style  = RopeStyle::normal;
    bool tied_output      = false;  // no `output.weight`: the LM head reuses token_embd
    bool qkv_bias         = false;  // qwen2: attn_q/k/v have biases
    bool rope_freqs       = false;  // `rope_freqs.weight` present: [n_rot/2] f32 divisors of the rotary
                                    // frequencies (Llama 3.1+ long-context scaling); the runtime must apply them

    int32_t head_dim() const { return n_head > 0 ? n_embd / n_head : 0; }
    int32_t n_embd_kv() const { return head_dim() * n_head_kv; }
    bool operator==(const Hparams&) const = default;
};

// Reads and validates hparams from a GGUF: missing required keys, unsupported architectures, inconsistent
// shapes (n_embd % n_head, n_head % n_head_kv, tensor dims that disagree with the metadata) and missing
// tensors all throw GgufError naming the file and the key or tensor. Tensors the two architectures do not define
// (MoE experts, output/FFN biases, unknown names, layers past block_count) are rejected rather than ignored.
// Norm vectors and biases may be F32, F16 or BF16; matrices may be any known ggml type (the runtime checks
// which ones its kernels support).
Hparams hparams_from_gguf(const GgufFile& file);

}  // namespace speculum::model
