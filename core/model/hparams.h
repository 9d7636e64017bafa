// Hyper-parameters of a Llama-family decoder (architectures `llama`, `qwen2`, `qwen3`, `gemma2`, `gemma3`, `phi3`,
// `smollm3`, the mixture-of-experts `qwen3moe` and `gpt-oss`, and the hybrid Gated DeltaNet `qwen35` and `qwen35moe`),
// read from GGUF metadata with llama.cpp's key names,
// and validated against the tensors present. One layer loop runs them all: the fields below switch its parts
// (docs/models.md lists which architecture sets what).
#pragma once

#include "core/model/gguf.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace speculum::model {

enum class RopeStyle { normal, neox };    // llama: adjacent pairs (GGUF weights are permuted); qwen2: halves
enum class FfnActivation { silu, gelu };  // SwiGLU (llama) or GeGLU with the tanh GELU (gemma)
// How a mixture-of-experts layer weighs the experts it routes a token to (llama.cpp's gating functions): softmax over
// all experts, then the top k (qwen3moe); or the top k of the raw router logits, then a softmax over those (gpt-oss).
enum class ExpertGating { softmax, softmax_weight };
// An expert's activation: SwiGLU, or gpt-oss's clamped variant (gate clamped above at 7, up to [-7, 7],
// gate * sigmoid(1.702 gate) * (up + 1); ggml's swiglu_oai).
enum class ExpertActivation { swiglu, swiglu_oai };

// The architectures hparams_from_gguf accepts, as one comma-separated list for messages.
const char* supported_architectures();
bool is_supported_architecture(const std::string& arch);

struct Hparams {
    std::string arch;                  // general.architecture (supported_architectures())
    int32_t n_vocab     = 0;           // tokens (rows of token_embd)
    int32_t n_ctx_train = 2048;        // <arch>.context_length
    int32_t n_embd      = 0;           // <arch>.embedding_length
    int32_t n_layer     = 0;           // main blocks: <arch>.block_count less n_nextn
    int32_t n_nextn     = 0;           // <arch>.nextn_predict_layers: multi-token-prediction blocks after the main
                                       // ones (block_count counts them; blk.N.nextn.*; drafts/mtp_drafter.h)
    int32_t n_head        = 0;         // <arch>.attention.head_count
    int32_t n_head_kv     = 0;         // <arch>.attention.head_count_kv (defaults to n_head)
    int32_t n_ff          = 0;         // <arch>.feed_forward_length
    int32_t n_rot         = 0;         // <arch>.rope.dimension_count (defaults to head dim)
    int32_t n_embd_head   = 0;         // <arch>.attention.key_length: the head dimension; 0 = n_embd / n_head
    float rope_freq_base  = 10000.0f;  // <arch>.rope.freq_base
    float rope_freq_scale = 1.0f;      // 1 / <arch>.rope.scaling.factor (linear or YaRN scaling), 1 when absent
    // YaRN scaling (<arch>.rope.scaling.type "yarn", gpt-oss): frequencies below the correction range are
    // interpolated by rope_freq_scale, those above kept, a linear ramp between; rotated values scaled by yarn_mscale.
    bool rope_yarn         = false;
    int32_t yarn_orig_ctx  = 0;      // <arch>.rope.scaling.original_context_length (default: context_length)
    float yarn_beta_fast   = 32.0f;  // <arch>.rope.scaling.yarn_beta_fast
    float yarn_beta_slow   = 1.0f;   // <arch>.rope.scaling.yarn_beta_slow
    float yarn_attn_factor = 1.0f;   // <arch>.rope.scaling.attn_factor
    // The magnitude YaRN gives the rotated values: (1 + 0.1 ln factor) for a factor above 1, times attn_factor.
    float yarn_mscale() const {
        const float factor = 1.0f / rope_freq_scale;
        return (factor > 1.0f ? 1.0f + 0.1f * std::log(factor) : 1.0f) * yarn_attn_factor;
    }
    float rms_eps        = 1e-5f;  // <arch>.attention.layer_norm_rms_epsilon
    RopeStyle rope_style = RopeStyle::normal;
    bool tied_output     = false;  // no `output.weight`: the LM head reuses token_embd
    bool qkv_bias        = false;  // qwen2: attn_q/k/v have biases
    bool rope_freqs      = false;  // `rope_freqs.weight` present: [n_rot/2] f32 divisors of the rotary
                                   // frequencies (Llama 3.1+ long-context scaling); the runtime must apply them

    // ---- parts other architectures switch on (all off for llama / qwen2) ----
    bool qk_norm = false;     // attn_q_norm / attn_k_norm: RMSNorm of each head of q and k before RoPE
                              // (qwen3, gemma3)
    bool post_norms = false;  // post_attention_norm / post_ffw_norm: RMSNorm of each block's output before
                              // the residual add (gemma2, gemma3)
    FfnActivation ffn_act = FfnActivation::silu;
    bool scale_embd       = false;  // embeddings multiplied by sqrt(n_embd) (gemma)
    float attn_scale      = 0.0f;   // query scale; 0 = 1 / sqrt(head_dim)
    float attn_softcap    = 0.0f;   // scores s -> c tanh(s / c) before the softmax; 0 = off (gemma2)
    float final_softcap   = 0.0f;   // logits z -> c tanh(z / c); 0 = off (gemma2, gemma3 when set)
    // Sliding-window attention (gemma2, gemma3): a token at position p attends only positions > p - n_swa in the
    // layers swa_layers marks; 0 = none. Those layers take their RoPE base and scale from the _swa fields.
    int32_t n_swa = 0;
    std::vector<uint8_t> swa_layers;  // (n_layer) 1 = windowed; empty = none
    float rope_freq_base_swa  = 10000.0f;
    float rope_freq_scale_swa = 1.0f;
    int32_t nope_period       = 0;  // smollm3: layers il with (il + 1) % nope_period == 0 use no RoPE; 0 = off
    // The file's layout only (the runtime always sees separate matrices): attn_qkv holds q, k and v stacked by
    // rows, and ffn_up holds gate then up (2 n_ff rows) (phi3).
    bool fused_qkv     = false;
    bool fused_gate_up = false;
    // Columns of wq, wk and wv when they differ from n_embd: an EAGLE-3 draft layer reads [attn_norm(embedding);
    // hidden_norm(state)], 2 n_embd wide (drafts/eagle3.h), given per pass as ForwardOptions::attn_in. 0 = n_embd.
    // Only one-layer models set it (the input exists for the first layer run only).
    int32_t n_embd_attn_in = 0;

    // ---- mixture of experts (qwen3moe): every layer's FFN is n_expert experts of width n_ff_exp, of which the
    // router (ffn_gate_inp) picks n_expert_used per token; 0 = a dense FFN of width n_ff ----
    int32_t n_expert            = 0;  // <arch>.expert_count
    int32_t n_expert_used       = 0;  // <arch>.expert_used_count
    int32_t n_ff_exp            = 0;  // <arch>.expert_feed_forward_length (else n_ff / n_expert_used, as llama.cpp)
    ExpertGating expert_gating  = ExpertGating::softmax;
    bool expert_weights_norm    = true;  // the chosen experts' weights divided by their sum (qwen3moe)
    ExpertActivation expert_act = ExpertActivation::swiglu;
    // gpt-oss's parts: biases on the attention output, the router and every expert matrix; a learned per-head
    // attention sink (a logit every query also softmaxes against, attending nothing); the FFN's input norm stored as
    // post_attention_norm (the file's name only).
    bool attn_out_bias                 = false;
    bool moe_biases                    = false;
    bool attn_sinks                    = false;
    bool ffn_norm_named_post_attention = false;
    int32_t n_ff_shexp = 0;  // qwen35moe: a shared expert of this width beside the routed ones, gated by
                             // sigmoid(ffn_gate_inp_shexp . x); 0 = none

    // ---- hybrid linear attention (qwen35, qwen35moe; llama.cpp's delta-net models) ----
    // Layers recurrent_layers marks replace attention with a Gated DeltaNet: a causal convolution of d_conv taps over
    // the projected q, k, v (its state: the last d_conv - 1 inputs) and a gated delta rule over a state matrix of
    // (ssm_d_state x ssm_d_state) per value head (delta_net.h). The other layers are gated full attention.
    std::vector<uint8_t> recurrent_layers;  // (n_layer) 1 = Gated DeltaNet; empty = none
    int32_t ssm_d_conv  = 0;                // <arch>.ssm.conv_kernel: taps of the convolution
    int32_t ssm_d_state = 0;                // <arch>.ssm.state_size: head dimension of q, k and v
    int32_t ssm_n_group = 0;                // <arch>.ssm.group_count: q and k heads
    int32_t ssm_dt_rank = 0;                // <arch>.ssm.time_step_rank: v heads (a multiple of the k heads)
    // Gated attention (qwen35): wq yields 2 head_dim rows per head, the query then a gate; the attention output is
    // multiplied by sigmoid(gate) before wo.
    bool attn_gate = false;
    // Multi-axis RoPE as llama.cpp's rope_multi reads it for text (the positions (p, p, p, 0)): rotary pair i takes
    // the position p or 0 by its sector i mod sum(sections); interleaved (qwen35's IMROPE) or in blocks.
    std::array<int32_t, 4> rope_sections{};  // all 0 = ordinary RoPE
    bool rope_interleaved = false;

    int32_t head_dim() const { return n_embd_head > 0 ? n_embd_head : (n_head > 0 ? n_embd / n_head : 0); }
    int32_t n_embd_q() const { return head_dim() * n_head; }  // rows of wq, columns of wo
    int32_t n_embd_kv() const { return head_dim() * n_head_kv; }
    int32_t attn_in_cols() const { return n_embd_attn_in > 0 ? n_embd_attn_in : n_embd; }  // of wq, wk, wv
    bool is_swa(int32_t il) const {
        return n_swa > 0 && static_cast<size_t>(il) < swa_layers.size() && swa_layers[static_cast<size_t>(il)];
    }
    bool moe() const { return n_expert > 0; }
    bool hybrid() const { return !recurrent_layers.empty(); }
    bool is_recurrent(int32_t il) const {
        return static_cast<size_t>(il) < recurrent_layers.size() && recurrent_layers[static_cast<size_t>(il)];
    }
    int32_t n_recurrent() const {
        int32_t c = 0;
        for (uint8_t r : recurrent_layers) c += r ? 1 : 0;
        return c;
    }
    int32_t ssm_value_dim() const { return ssm_d_state * ssm_dt_rank; }                       // rows of attn_gate
    int32_t ssm_conv_dim() const { return 2 * ssm_d_state * ssm_n_group + ssm_value_dim(); }  // rows of attn_qkv
    // Whether rotary pair i (i < n_rot / 2) turns with the token's position (else by 0: the fourth axis).
    bool rope_pair_rotates(int32_t i) const;
    int32_t ffn_width() const { return moe() ? n_ff_exp : n_ff; }  // rows of one (expert's) gate and up matrix
    bool uses_rope(int32_t il) const { return nope_period <= 0 || (il + 1) % nope_period != 0; }
    float query_scale() const { return attn_scale > 0.0f ? attn_scale : 1.0f / std::sqrt(float(head_dim())); }
    bool operator==(const Hparams&) const = default;
};

// Reads and validates hparams from a GGUF: missing required keys, unsupported architectures, inconsistent
// shapes (n_embd % n_head, n_head % n_head_kv, tensor dims that disagree with the metadata) and missing
// tensors all throw GgufError naming the file and the key or tensor. Tensors the architecture does not define
// (experts outside a MoE architecture, output/FFN biases, unknown names, layers past block_count) are rejected rather
// than ignored. Norm vectors and biases may be F32, F16 or BF16; matrices may be any known ggml type (the runtime
// checks which ones its kernels support).
Hparams hparams_from_gguf(const GgufFile& file);

}  // namespace speculum::model
