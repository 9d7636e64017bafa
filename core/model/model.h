// A Llama-family model (any architecture of hparams.h): hyper-parameters plus zero-copy views of every weight matrix.
// Weights point into a GgufFile mapping or into owned in-memory buffers (drafts built from a target share the
// target's untouched tensors); the views keep their storage alive. Not the forward pass: see forward.h.
#pragma once

#include "core/cancel.h"
#include "core/model/gguf.h"
#include "core/model/hparams.h"
#include "kernels/compact.h"
#include "kernels/ggml_types.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace speculum::model {

// A (rows, cols) row-major matrix stored in `type`; each row is ggml_row_size(type, cols) bytes.
// `keep_alive` owns whatever `data` points into (the GgufFile, an owned buffer, another model's storage), so a
// view can be copied into a derived model and outlive the model it came from.
// A compact view (a pruned / truncated draft matrix, kernels/compact.h) has `compact` set: `type` is the dense type
// its rows decode to, `data` points at its streams (never dense rows: row() must not be used), and n_bytes() is
// what one pass reads. Code that needs dense rows decodes them (dense_copy()).
struct WeightView {
    kernels::GgmlType type = kernels::GgmlType::F32;
    const void* data       = nullptr;  // (rows, cols) in `type`; a compact view's streams
    int64_t rows           = 0;
    int64_t cols           = 0;
    std::shared_ptr<const void> keep_alive;
    std::shared_ptr<const kernels::CompactMatrix> compact;  // set for compact views
    // Set with `compact` for a strict-subset target view (make_split_view): `compact` is then the draft's own matrix,
    // shared with the draft, and this the rest of the target's bits. A pass decodes both to the dense BF16 rows.
    std::shared_ptr<const kernels::CompactRest> rest;

    // Bytes of one dense row (a compact view: of one decoded row).
    uint64_t row_bytes() const { return kernels::ggml_row_size(type, static_cast<uint64_t>(cols)); }
    // Bytes one pass over the matrix reads.
    uint64_t n_bytes() const {
        return compact ? compact->bytes() + (rest ? rest->bytes() : 0) : row_bytes() * static_cast<uint64_t>(rows);
    }
    const uint8_t* row(int64_t r) const { return static_cast<const uint8_t*>(data) + row_bytes() * r; }
    bool empty() const { return data == nullptr; }
};

// A view of a compact matrix (keeps it alive).
WeightView make_compact_view(kernels::CompactMatrix m);
// A strict-subset view of a BF16 target matrix: the draft's compact matrix (shared, not copied) and the rest of the
// target's bits (CompactRest::encode of the target's view `dense`). Decodes to `dense`'s rows bit for bit; throws
// std::invalid_argument when `draft` is not `dense` with bits left out.
WeightView make_split_view(std::shared_ptr<const kernels::CompactMatrix> draft, const WeightView& dense);
// The dense rows of v: its own bytes, or a compact view's decoded rows ((rows, cols) in v.type).
std::vector<uint8_t> dense_copy(const WeightView& v);

// Rows [r0, r1) of a dense view, sharing its storage (a fused file tensor split into its matrices).
WeightView row_range(const WeightView& v, int64_t r0, int64_t r1);

// A new owned matrix of the given rows of v, in order (a reduced LM head): dense rows in v's stored type (a compact
// view decoded, Q8_0_X8 as Q8_0). Throws std::invalid_argument on a row out of range.
WeightView gather_rows(const WeightView& v, const std::vector<int32_t>& rows);

// Owns `bytes` and returns a view of them as a (rows, cols) matrix of `type` (in-memory weights).
WeightView make_owned_view(kernels::GgmlType type, int64_t rows, int64_t cols, std::vector<uint8_t> bytes);

struct LayerWeights {
    std::vector<float> attn_norm;                      // (n_embd)
    WeightView wq, wk, wv, wo;                         // (n_embd_q, n_embd), (n_embd_kv, n_embd) x2, (n_embd, n_embd_q)
    std::vector<float> bq, bk, bv;                     // (n_embd_q), (n_embd_kv) x2; empty unless hparams.qkv_bias
    std::vector<float> q_norm, k_norm;                 // (head_dim) each; empty unless hparams.qk_norm
    std::vector<float> attn_post_norm, ffn_post_norm;  // (n_embd) each; empty unless hparams.post_norms
    std::vector<float> ffn_norm;                       // (n_embd)
    WeightView w_gate, w_up;                           // (n_ff, n_embd)
    WeightView w_down;                                 // (n_embd, n_ff)
    // Mixture of experts (hparams.moe()): w_gate and w_up hold the experts' matrices stacked by rows,
    // (n_expert n_ff_exp, n_embd), as the file's 3-D ffn_gate_exps / ffn_up_exps are laid out; w_down holds the
    // experts' (n_embd, n_ff_exp) down matrices stacked the same way, (n_expert n_embd, n_ff_exp). expert() cuts one.
    WeightView ffn_gate_inp;  // the router, (n_expert, n_embd); empty for a dense FFN
    // gpt-oss (hparams.moe_biases, attn_out_bias, attn_sinks): the router's bias (n_expert), the experts' biases
    // stacked as their matrices' rows ((n_expert n_ff_exp) for gate and up, (n_expert n_embd) for down), the
    // attention output's bias (n_embd) and the per-head sink logits (n_head); empty otherwise.
    std::vector<float> ffn_gate_inp_b, exp_gate_b, exp_up_b, exp_down_b;
    std::vector<float> bo, attn_sinks;
    // qwen35moe's shared expert (Hparams::n_ff_shexp): a SwiGLU block every token runs, its output scaled by
    // sigmoid(shexp_gate . x); empty otherwise.
    std::vector<float> shexp_gate;        // (n_embd)
    WeightView w_gate_shexp, w_up_shexp;  // (n_ff_shexp, n_embd)
    WeightView w_down_shexp;              // (n_embd, n_ff_shexp)
    // A Gated DeltaNet layer (Hparams::is_recurrent; its wq, wk, wv and wo are empty): the projections of the stream
    // to the convolution's input q, k, v (ssm_qkv), the output gate z (ssm_z), the update strength beta and the decay
    // alpha (one per value head), the convolution taps, the decay's bias dt and scale a (-exp(A_log)), the per-head
    // output norm and the output projection (delta_net.h).
    WeightView ssm_qkv;                // (conv_dim, n_embd)
    WeightView ssm_z;                  // (value_dim, n_embd)
    WeightView ssm_beta, ssm_alpha;    // (n_v_heads, n_embd)
    WeightView ssm_out;                // (n_embd, value_dim)
    std::vector<float> ssm_conv1d;     // (conv_dim, d_conv): channel c's taps, oldest input first
    std::vector<float> ssm_dt, ssm_a;  // (n_v_heads)
    std::vector<float> ssm_norm;       // (state_size)

    // Bytes of the f32 vectors (norms and biases; and a MoE router, small) one pass reads: of the attention block, the
    // FFN block, both.
    uint64_t attn_vector_bytes() const {
        return (attn_norm.size() + bq.size() + bk.size() + bv.size() + q_norm.size() + k_norm.size() +
                attn_post_norm.size() + bo.size() + attn_sinks.size() + ssm_conv1d.size() + ssm_dt.size() +
                ssm_a.size() + ssm_norm.size()) *
               sizeof(float);
    }
    uint64_t ffn_vector_bytes() const {
        return (ffn_norm.size() + ffn_post_norm.size() + ffn_gate_inp_b.size() + shexp_gate.size()) * sizeof(float) +
               ffn_gate_inp.n_bytes();
    }
    uint64_t vector_bytes() const { return attn_vector_bytes() + ffn_vector_bytes(); }

    // Bytes one expert's matrices and biases take (a pass reads them when any of its tokens routes to the expert).
    uint64_t expert_bytes(int32_t n_expert) const {
        return (w_gate.n_bytes() + w_up.n_bytes() + w_down.n_bytes() +
                (exp_gate_b.size() + exp_up_b.size() + exp_down_b.size()) * sizeof(float)) /
               uint64_t(n_expert);
    }
    // Bytes of the FFN matrices one token reads: gate, up and down, or of a mixture of experts (hp.moe()) the
    // n_expert_used experts it is routed to, their biases included.
    uint64_t ffn_bytes_per_token(const Hparams& hp) const {
        return hp.moe() ? expert_bytes(hp.n_expert) * uint64_t(hp.n_expert_used) + shexp_bytes()
                        : w_gate.n_bytes() + w_up.n_bytes() + w_down.n_bytes();
    }
    uint64_t shexp_bytes() const { return w_gate_shexp.n_bytes() + w_up_shexp.n_bytes() + w_down_shexp.n_bytes(); }
    // Bytes of the mixer's matrices one pass reads: attention's four, or a Gated DeltaNet's five.
    uint64_t mixer_bytes() const {
        return wq.n_bytes() + wk.n_bytes() + wv.n_bytes() + wo.n_bytes() + ssm_qkv.n_bytes() + ssm_z.n_bytes() +
               ssm_beta.n_bytes() + ssm_alpha.n_bytes() + ssm_out.n_bytes();
    }
    // Rows of expert e of a stacked expert matrix (w_gate, w_up or w_down), sharing its storage.
    static WeightView expert(const WeightView& stack, int32_t e, int32_t n_expert);

    // The seven weight matrices in file order (attention q, k, v, output; ffn gate, up, down), then the Gated
    // DeltaNet's five and the shared expert's three (empty views where the layer has none).
    std::array<WeightView*, 15> matrices() {
        return {&wq,    &wk,       &wv,        &wo,      &w_gate,       &w_up,       &w_down,      &ssm_qkv,
                &ssm_z, &ssm_beta, &ssm_alpha, &ssm_out, &w_gate_shexp, &w_up_shexp, &w_down_shexp};
    }
    std::array<const WeightView*, 15> matrices() const {
        return {&wq,    &wk,       &wv,        &wo,      &w_gate,       &w_up,       &w_down,      &ssm_qkv,
                &ssm_z, &ssm_beta, &ssm_alpha, &ssm_out, &w_gate_shexp, &w_up_shexp, &w_down_shexp};
    }
};

// A multi-token-prediction ("NextN") block, as llama.cpp stores one after the main blocks (blk.N.nextn.*): an
// ordinary transformer block, the fusion eh_proj of [enorm(embedding); hnorm(state)], and optionally its own head
// norm, head and embedding (else the model's).
struct NextnWeights {
    LayerWeights block;
    WeightView eh_proj;               // (n_embd, 2 n_embd): embedding half first, then the state half
    std::vector<float> enorm, hnorm;  // (n_embd)
    std::vector<float> head_norm;     // shared_head_norm (n_embd), or empty: output_norm
    WeightView head;                  // shared_head_head (n_vocab, n_embd), or empty: output
    WeightView embed;                 // embed_tokens (n_vocab, n_embd), or empty: token_embd
};

struct ModelWeights {
    WeightView token_embd;             // (n_vocab, n_embd)
    std::vector<LayerWeights> layers;  // n_layer
    std::vector<float> output_norm;    // (n_embd)
    WeightView output;                 // (n_vocab, n_embd); a copy of token_embd when hparams.tied_output
    std::vector<float> rope_freqs;     // (n_rot / 2) divisors of the RoPE frequencies (Llama 3.1+), or empty
    std::vector<NextnWeights> nextn;   // hparams.n_nextn multi-token-prediction blocks (not run by the forward)
};

// Where the weight matrices of a loaded model live.
enum class WeightMemory {
    mapped,       // views into the GGUF file's read-only mapping (zero-copy)
    large_pages,  // copied into one hw::LargePageBuffer (2 MiB-aligned, huge-page advised); see docs/performance.md
    in_memory,    // Model::from_weights: the caller's buffers
    // large_pages, and every Q8_0 matrix whose rows are whole 256-element blocks (except token_embd and a tied
    // output) repacked to the in-memory kernels::GgmlType::Q8_0_X8 on the way: cheaper batched (verification)
    // passes on AVX-512 VNNI CPUs, see docs/performance.md. Only where kernels::q8_0_x8_preferred().
    large_pages_repacked,
    // A request only (Model::load's default; weight_memory() never returns it): large_pages_repacked where
    // kernels::q8_0_x8_preferred() and the model has a matrix to repack, else mapped. The repacked layout decodes
    // about as fast as the file's and verifies 8 tokens much cheaper (docs/performance-notebook.md, "Session 8").
    automatic,
};
// "mapped", "large-pages", "in-memory", "large-pages-repacked", "automatic"
const char* weight_memory_name(WeightMemory m);

class Model {
public:
    // Opens and maps a GGUF file, reads hparams and builds the views. Throws GgufError naming the file and the
    // tensor/key on bad content, Cancelled when `cancel` fires (checked once per layer and per copied matrix).
    // `memory` = large_pages (large_pages_repacked): with_large_pages() of the mapped model (with repack_q8);
    // automatic: see WeightMemory::automatic.
    static Model load(const std::string& path, const ProgressFn& progress = {}, const CancelToken& cancel = {},
                      WeightMemory memory = WeightMemory::automatic);
    // Takes ownership of an opened file (the views point into its mapping, or into the large-page copy).
    static Model from_gguf(GgufFile file, const ProgressFn& progress = {}, const CancelToken& cancel = {},
                           WeightMemory memory = WeightMemory::mapped);
    // A copy of `m` whose weight matrices (each distinct one once) live in one hw::LargePageBuffer. When they need
    // more than half the memory available now, the copy keeps m's views instead (weight_memory() says which).
    // Throws Cancelled (checked per matrix).
    // repack_q8: also repack Q8_0 matrices to Q8_0_X8 (WeightMemory::large_pages_repacked); where
    // kernels::q8_0_x8_preferred() is false it is ignored (a plain large-page copy).
    static Model with_large_pages(const Model& m, const ProgressFn& progress = {}, const CancelToken& cancel = {},
                                  bool repack_q8 = false);
    // WeightMemory::automatic for a model already built: with_large_pages(m, ..., true) where
    // kernels::q8_0_x8_preferred() and m has a matrix to repack, else m itself.
    static Model with_preferred_memory(Model m, const ProgressFn& progress = {}, const CancelToken& cancel = {});
    // A model over in-memory weights (owned buffers and/or views shared with another model). Validates every
    // shape against `hp` and throws std::invalid_argument with the tensor name on a mismatch.
    static Model from_weights(Hparams hp, ModelWeights weights, std::string name = "in-memory model");

    const Hparams& hparams() const { return m_hp; }
    const ModelWeights& weights() const { return m_w; }
    const std::string& name() const { return m_name; }
    WeightMemory weight_memory() const { return m_memory; }
    // The GGUF file this model was loaded from (metadata such as the vocabulary), or nullptr for in-memory models.
    const GgufFile* gguf() const { return m_file.get(); }

    // Bytes of weights one decoded token reads: every layer matrix, the output matrix, norms and one embedding row
    // (of a mixture of experts: the n_expert_used experts a token is routed to, and the router).
    uint64_t weight_bytes_per_token() const;
    // Bytes of all distinct weight storage (token_embd counted once when tied).
    uint64_t weight_bytes_total() const;

private:
    Model() = default;
    static void validate(const Hparams& hp, const ModelWeights& w, const std::string& name);

    Hparams m_hp;
    ModelWeights m_w;
    std::string m_name;
    std::shared_ptr<const GgufFile> m_file;
    WeightMemory m_memory = WeightMemory::in_memory;
};

}  // namespace speculum::model
