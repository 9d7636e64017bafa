// The forward pass of a Llama-family model over one sequence: single-token decode and a batched pass over n tokens
// at given positions under an arbitrary attention mask (causal by default; a token tree for verification).
// Two paths over the same loop: `reference` (scalar _ref kernels, one thread) and `fast` (run-time selected
// kernels, rows split over threads). Threads: the products and decode attention fork through team_for (the
// spinning ThreadTeam, core/thread_team.h; TBB when it is busy), prompt GEMMs through TBB's parallel_for. Quantized
// weights with an integer-dot kernel (kernels::gemm_prefers_q8act) multiply int8-quantized activations at every batch
// size (as ggml does; within kFastVsRefQuantTol), a prompt 64 tokens at a time per row tile. Other types (F16, BF16,
// F32): batches of 64+ tokens call OpenBLAS SGEMM inside TBB tasks after openblas_set_num_threads(1), so BLAS starts
// none; smaller batches (decode, verification) use kernels::gemm, which reads each weight once for all n tokens.
#pragma once

#include "core/cancel.h"
#include "core/model/kv_cache.h"
#include "core/model/model.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

namespace speculum::model {

enum class ForwardPath { reference, fast };

struct ContextConfig {
    int32_t n_ctx    = 0;                  // KV slots (tokens); 0 = the training context length, at most 4096
    int32_t n_batch  = 64;                 // most tokens one forward_batch may evaluate (scratch is sized for it)
    ForwardPath path = ForwardPath::fast;  // kernels and threading
    // Fast path only: reduced-precision activations, as ggml uses them. Quantized weights with an integer-dot kernel
    // multiply activations quantized to int8 blocks (kernels::gemm_q8act; AVX-512 VNNI), and BF16 weights multiply
    // BF16-rounded activations (kernels::gemm_bf16act; AVX-512 BF16; compact BF16 drafts from 64 tokens). false = f32
    // activations throughout (exact up to summation order, slower); the reference path always uses f32 activations.
    bool int8_activations = true;
    // A hybrid model's recurrent state (recurrent_state.h): how a rejected draft is rolled back, and how many tokens
    // of speculation it can roll back (passes longer than this, prompts, keep nothing per token).
    RollbackStrategy rollback                   = RollbackStrategy::snapshot;
    int32_t max_rollback                        = 64;
    bool operator==(const ContextConfig&) const = default;
    // Throws std::invalid_argument naming the field.
    void validate() const;
};
void to_json(nlohmann::json& j, const ContextConfig& c);
void from_json(const nlohmann::json& j, ContextConfig& c);

// Where forward pass activations enter weight matrices (ForwardOptions::observer).
enum class ActivationSite {
    attn_in,   // normed stream into wq, wk, wv: (n, n_embd)
    attn_out,  // attention output into wo: (n, n_embd_q)
    ffn_in,    // normed stream into w_gate, w_up: (n, n_embd)
    ffn_down,  // act(gate) * up into w_down: (n, n_ff)
    head_in,   // final-normed stream into the output matrix: (n_out, n_embd)
};

// Per-call structure changes for self-speculative drafts (LayerSkip / SWIFT): skipped blocks pass the residual
// through unchanged and do not write their layer's KV slots, so keep the same options for a context's lifetime.
struct ForwardOptions {
    std::vector<uint8_t> skip_attn;  // (n_layer) or empty: 1 = skip layer il's attention block
    std::vector<uint8_t> skip_ffn;   // (n_layer) or empty: 1 = skip layer il's feed-forward block
    int exit_layer = -1;             // run layers [0, exit_layer] then the output head; -1 = all layers
    // A pass over a range of layers (CATS's stages): run layers [first_layer, exit_layer] starting from the residual
    // stream `hidden_in` (n, n_embd) that entered first_layer, instead of the token embeddings. Only the layers run
    // write their KV slots, so a context used this way holds the KV of its own layers only.
    int first_layer        = 0;
    const float* hidden_in = nullptr;  // required when first_layer > 0; at layer 0 it replaces the embeddings
                                       // (a multi-token-prediction layer's fused input)
    float* hidden_out = nullptr;       // (n, n_embd): the residual stream after the last layer run, before the
                                       // final norm; filled when given
    // A model whose first layer reads a wide attention input (Hparams::n_embd_attn_in, an EAGLE-3 layer): the
    // (n, n_embd_attn_in) rows wq, wk and wv multiply in that layer, instead of attn_norm of the residual stream.
    // Required for such a model, rejected otherwise.
    const float* attn_in = nullptr;
    // A reduced LM head (FR-Spec, Zhao et al. 2025): rows of the output matrix for a subset of the vocabulary, in the
    // caller's order; the pass's logits are then head->rows wide (row j: the j-th of those tokens), and the caller
    // maps them back. Null = the model's own head. Its columns must be n_embd, its rows at most n_vocab.
    const WeightView* head = nullptr;
    // Cached slots new tokens may attend (ascending); unset = all of [0, kv.size()). Hook for KV selection /
    // truncation in drafts (e.g. attention sinks + a recent window).
    std::optional<std::vector<int32_t>> cached_slots;

    // Optional hooks (drafts): both are called on the calling thread, once per block and pass.
    // kv_transform(il, k, v, n, n_embd_kv): layer il's new K rows (after bias and RoPE) and V rows, (n, n_embd_kv)
    // each, right after they are written to the cache and before any token attends them: a draft's KV truncation
    // or selection rewrites them in place, so every later read sees the transformed values.
    std::function<void(int32_t il, float* k, float* v, int32_t n, int64_t n_embd_kv)> kv_transform;
    // observer(il, site, x, n, cols): the (n, cols) f32 input of the matrices at `site` in layer il (il = n_layer
    // for the output head), e.g. to collect Wanda's per-input-channel activation norms from calibration text.
    std::function<void(int32_t il, ActivationSite site, const float* x, int32_t n, int64_t cols)> observer;
};

// Logits of a batched pass: row i = logits of token i. Valid until the next call on the context.
struct LogitsView {
    const float* data = nullptr;  // (n, n_vocab) row-major
    int32_t n         = 0;
    int32_t n_vocab   = 0;
    std::span<const float> row(int32_t i) const { return {data + static_cast<size_t>(i) * n_vocab, size_t(n_vocab)}; }
};

// What the last pass read and computed (counted from the shapes, not measured), for draft/verify cost accounting.
struct ForwardCost {
    uint64_t bytes_weights = 0;  // weight matrices, norms and biases of the blocks run, embedding rows, LM head
    uint64_t bytes_kv      = 0;  // K and V rows attended (each attended slot read once per pass) and written
    double flops           = 0;  // 2 per multiply-add: projections, FFN, LM head, attention scores and sums
    uint64_t experts_read  = 0;  // mixture of experts: the (layer, expert) pairs the pass ran, each read once
    uint64_t bytes_state   = 0;  // a hybrid's recurrent state: the live state read and written, and what the pass
                                 // kept for rollback (recurrent_state.h)
};

// The parent of each token of a pass under `mask` (n, n) (null = causal: i - 1), -1 for a token that sees none of
// the pass's others. Throws std::invalid_argument when a row is not its parent's row plus the token (not a tree):
// a recurrent layer follows one path per token.
std::vector<int32_t> tree_parents(const uint8_t* mask, int32_t n);

// One token's experts (Hparams::moe()): from the router's logits (n_expert), the n_expert_used chosen experts in
// descending order of their gate value (`ids`) and their weights (`weights`), as llama.cpp's build_moe_ffn gates
// (Hparams::expert_gating, expert_weights_norm). `probs` (n_expert) and `order` (n_expert) are scratch.
void route_experts(const Hparams& hp, const float* logits, int32_t* ids, float* weights, float* probs, int32_t* order);

class InferenceContext {
public:
    // Copies the model's views (cheap: weights are shared, not copied) and allocates the KV cache and all scratch.
    explicit InferenceContext(const Model& model, ContextConfig cfg = {});

    // Evaluates one token at position `pos` (usually kv().size()), appends its KV slot, returns its logits
    // (n_vocab, or opts.head's rows), valid until the next call. Throws KvCacheFull, std::out_of_range on a bad token,
    // Cancelled.
    std::span<const float> decode(int32_t token, int32_t pos, const ForwardOptions& opts = {});

    // Evaluates n = tokens.size() <= n_batch tokens at `positions`; token i attends every cached slot plus new
    // token j where mask[i * n + j] != 0 (mask (n, n) row-major, diagonal required; empty = causal). Appends the
    // n slots in order. Rejected tokens are dropped with kv().truncate / kv().compact.
    LogitsView forward_batch(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                             const std::vector<uint8_t>& mask = {}, const ForwardOptions& opts = {});

    // Causal prompt evaluation in chunks of n_batch starting at position kv().size(); returns the logits of the
    // last token (others are not computed).
    std::span<const float> prefill(const std::vector<int32_t>& tokens, const ForwardOptions& opts = {});

    const ForwardCost& last_cost() const { return m_cost; }
    // Mixture of experts: the experts each token of the last pass was routed to in layer il (n_expert_used ids per
    // token, tokens in pass order), and their weights; empty spans for a dense model or a layer the pass skipped.
    std::span<const int32_t> last_experts(int32_t il) const;
    std::span<const float> last_expert_weights(int32_t il) const;
    KvCache& kv() { return m_kv; }
    const KvCache& kv() const { return m_kv; }
    const Model& model() const { return m_model; }
    const ContextConfig& config() const { return m_cfg; }
    // Checked once per layer during a pass; a fired token makes the pass throw Cancelled (the cache is unchanged).
    void set_cancel(CancelToken token) { m_cancel = std::move(token); }

private:
    // Runs tokens [0, n) of m_tokens through the model; computes logits for tokens [logits_first, n).
    void run(int32_t n, const uint8_t* mask, int32_t logits_first, const ForwardOptions& opts);
    // The layer loop and head of run(); `parent` (a hybrid's): each token's parent in the pass.
    void run_layers(int32_t n, const uint8_t* mask, int32_t logits_first, const ForwardOptions& opts,
                    const std::vector<int32_t>& parent);
    // Y = W x_i for i < n; Y has row stride ldy.
    void matmul(float* y, int64_t ldy, const WeightView& w, const float* x, int32_t n);
    // Products that share their input x, in one parallel region when they can (forward.cpp).
    struct MatmulJob {
        float* y;
        int64_t ldy;
        const WeightView* w;
    };
    static constexpr size_t kMaxGroup = 32;  // q k v (3), gate up (2), a token's experts' gate and up (2 k)
    void matmul_group(std::span<const MatmulJob> jobs, const float* x, int32_t n);
    enum class RowKernel : uint8_t {
        none,
        q8act_x8,
        q8act_k,  // Q4_K, Q5_K, Q6_K: 512-bit registers, a super-block per register (kernels::gemm_q8act_k)
        q8act,
        bf16act,
        f32,
        compact_q8act,
        compact_bf16act,
        compact_f32,
        split_bf16act,  // strict-subset target views: decoded per tile, then the dense BF16 kernels
        split_f32
    };
    RowKernel row_kernel(const WeightView& w, int32_t n) const;
    void prepare_activations(RowKernel k, const float* x, int32_t n, int64_t cols);
    void matmul_rows(RowKernel k, const MatmulJob& j, const float* x, int32_t n, int64_t r0, int64_t r1);
    void attention(int32_t il, int32_t n, int32_t n_past, const uint8_t* mask, const ForwardOptions& opts);
    // The MoE feed-forward of layer il over m_xn (n, n_embd), in place (forward_moe.cpp).
    void moe_ffn(int32_t il, const LayerWeights& L, int32_t n, ForwardCost& cost);
    // Expert ex after its gate and up products over `rows` tokens ((rows, n_ff_exp) each): their biases, the
    // activation (into gate), the down product into y (rows, n_embd) and its bias; counts the expert's bytes once.
    void expert_down(const LayerWeights& L, int32_t ex, int32_t rows, float* gate, float* up, float* y,
                     ForwardCost& cost);
    void check_options(const ForwardOptions& opts) const;
    // Layer il's Gated DeltaNet over xin (n, n_embd) into m_xn, tokens following `parent` (forward_delta_net.cpp).
    void delta_net(int32_t il, const LayerWeights& L, const float* xin, int32_t n, const std::vector<int32_t>& parent,
                   ForwardCost& cost);
    // qwen35moe's shared expert over m_xn (n, n_embd) into m_sh_out, scaled by its gate (forward_moe.cpp).
    void shared_expert(const LayerWeights& L, int32_t n, ForwardCost& cost);

    Model m_model;
    ContextConfig m_cfg;
    KvCache m_kv;
    CancelToken m_cancel;
    ForwardCost m_cost;
    std::vector<float> m_inv_freq;      // (n_rot / 2) RoPE frequencies base^(-2i/n_rot)
    std::vector<float> m_inv_freq_swa;  // the same for sliding-window layers (Hparams::rope_freq_base_swa)

    // Scratch, sized for n_batch tokens once.
    std::vector<int32_t> m_tokens, m_pos;  // (n_batch)
    std::vector<uint8_t> m_causal;         // (n_batch, n_batch) lower-triangular mask
    std::vector<float> m_x, m_xn;          // (n_batch, n_embd)
    std::vector<float> m_q, m_attn;        // (n_batch, n_embd_q)
    std::vector<float> m_gate, m_up;       // (n_batch, n_ff)
    std::vector<float> m_logits;           // (n_batch, n_vocab)
    int32_t m_logits_width = 0;            // logits per row of the last pass: n_vocab, or a reduced head's rows
    std::vector<float> m_scores;           // (n_ctx) attention scores of the reference path
    std::vector<uint8_t> m_q8act;          // quantized activations of one matmul (kernels::q8act_bytes)
    std::vector<uint16_t> m_bf16act;       // BF16-rounded activations of one prompt matmul (BF16 weights)
    // Mixture of experts (empty for a dense model).
    std::vector<float> m_router;             // (n_batch, n_expert) router logits
    std::vector<int32_t> m_route;            // (n_layer, n_batch, n_expert_used) chosen experts
    std::vector<float> m_route_w;            // (n_layer, n_batch, n_expert_used) their weights
    std::vector<int32_t> m_route_n;          // (n_layer) tokens routed in the last pass (0: skipped)
    std::vector<float> m_expert_probs;       // (n_expert)
    std::vector<int32_t> m_expert_order;     // (n_expert)
    std::vector<int32_t> m_expert_tokens;    // tokens routed to one expert (reserved n_batch)
    std::vector<float> m_expert_weights;     // their weights
    std::vector<float> m_moe_in, m_moe_out;  // (n_batch, n_embd): gathered rows / the block's output
    std::vector<WeightView> m_expert_views;  // one token's experts' gate and up (2 n_expert_used)
    std::vector<float> m_sh_gate, m_sh_up;   // (n_batch, n_ff_shexp): the shared expert's products
    std::vector<float> m_sh_out;             // (n_batch, n_embd): its output
    // Hybrid models (empty otherwise): gated attention's query-and-gate rows and gate, and the DeltaNet scratch.
    std::vector<float> m_qg, m_attn_gate;  // (n_batch, 2 n_embd_q), (n_batch, n_embd_q)
    std::vector<int32_t> m_rec_index;      // (n_layer) layer -> its index in the recurrent state, -1 for attention
    std::vector<float> m_dn_in;            // (n_batch, input_floats): raw q k v, g, beta per token
    std::vector<float> m_dn_z, m_dn_o;     // (n_batch, value_dim): output gate; recurrence output
    std::vector<float> m_dn_ba;            // (n_batch, 2 n_v_heads): beta and alpha projections
    std::vector<float> m_dn_conv;          // (n_batch, conv_dim): convolved, normalized q k v
    std::vector<float> m_dn_tree;          // (tree nodes, n_v_heads, S, S): per-branch states of a tree pass
    std::vector<float> m_dn_window;        // (d_conv - 1, conv_dim)
    bool m_keeping           = false;      // this pass keeps per-token rollback data
    bool m_dn_chain          = true;       // this pass is one causal chain (states updated in place)
    double m_dn_keep_seconds = 0;
};

}  // namespace speculum::model
