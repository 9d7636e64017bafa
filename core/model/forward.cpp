// The layer loop of the forward pass (embedding -> n_layer x [attention, SwiGLU FFN] -> norm -> LM head), the
// matmul dispatch of the two paths, and argument checking. Attention itself is in forward_attention.cpp.
#include "core/model/forward.h"

#include "core/hw/large_pages.h"
#include "core/model/rope.h"
#include "core/parallel.h"
#include "core/thread_team.h"
#include "kernels/compact.h"
#include "kernels/gemm_bf16.h"
#include "kernels/gemm_f16.h"
#include "kernels/gemv.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string>

namespace speculum::model {

namespace {
// Batches at least this large go through OpenBLAS SGEMM on dequantized tiles instead of kernels::gemm, for weight
// types without an integer-dot kernel (F16, BF16, F32); the others stay on the int8 kernels at every batch size.
constexpr int32_t kBlasMinBatch = 64;
// The int8 kernels take the tokens of a large batch (a prompt) this many at a time, each row tile of the weights
// staying in cache across the chunks: their per-token cost is flat from about 32 tokens on, and 4x the MACs per
// instruction of f32 SGEMM (docs/performance.md, "Session 13").
constexpr int32_t kQ8ActChunk    = 64;
constexpr int64_t kBlasTileBytes = 2 << 20;  // f32 weight tile per SGEMM call: large enough to amortise packing
// ContextConfig::n_ctx = 0 takes the training context, capped: long-context models would otherwise allocate tens
// of GiB of f32 KV cache up front.
constexpr int32_t kDefaultMaxCtx = 4096;
constexpr double kMaxKvGiB       = 32.0;  // refuse larger KV caches with a clear message instead of bad_alloc
}  // namespace

// ---- config ----

void ContextConfig::validate() const {
    if (n_ctx < 0) throw std::invalid_argument("ContextConfig.n_ctx: must be >= 0, got " + std::to_string(n_ctx));
    if (n_batch < 1 || n_batch > 4096)
        throw std::invalid_argument("ContextConfig.n_batch: must be in [1, 4096], got " + std::to_string(n_batch));
    if (max_rollback < 1 || max_rollback > 4096)
        throw std::invalid_argument("ContextConfig.max_rollback: must be in [1, 4096], got " +
                                    std::to_string(max_rollback));
}

void to_json(nlohmann::json& j, const ContextConfig& c) {
    j = nlohmann::json{{"n_ctx", c.n_ctx},
                       {"n_batch", c.n_batch},
                       {"path", c.path == ForwardPath::fast ? "fast" : "reference"},
                       {"int8_activations", c.int8_activations},
                       {"rollback", to_string(c.rollback)},
                       {"max_rollback", c.max_rollback}};
}

void from_json(const nlohmann::json& j, ContextConfig& c) {
    const ContextConfig d;
    c.n_ctx             = j.value("n_ctx", d.n_ctx);
    c.n_batch           = j.value("n_batch", d.n_batch);
    const std::string p = j.value("path", std::string("fast"));
    if (p != "fast" && p != "reference")
        throw std::invalid_argument("ContextConfig.path: expected \"fast\" or \"reference\", got \"" + p + "\"");
    c.path              = p == "fast" ? ForwardPath::fast : ForwardPath::reference;
    c.int8_activations  = j.value("int8_activations", d.int8_activations);
    const std::string r = j.value("rollback", std::string(to_string(d.rollback)));
    const auto strategy = parse_rollback_strategy(r);
    if (!strategy)
        throw std::invalid_argument("ContextConfig.rollback: expected \"snapshot\" or \"rerun\", got \"" + r + "\"");
    c.rollback     = *strategy;
    c.max_rollback = j.value("max_rollback", d.max_rollback);
}

// ---- construction ----

InferenceContext::InferenceContext(const Model& model, ContextConfig cfg) : m_model(model), m_cfg(cfg) {
    m_cfg.validate();
    const Hparams& hp = m_model.hparams();
    if (m_cfg.n_ctx == 0) m_cfg.n_ctx = std::min(hp.n_ctx_train, kDefaultMaxCtx);
    const int32_t kv_layers = hp.n_layer - hp.n_recurrent();
    const double kv_gib     = 8.0 * kv_layers * static_cast<double>(m_cfg.n_ctx) * hp.n_embd_kv() / (1u << 30);
    if (kv_gib > kMaxKvGiB)
        throw std::invalid_argument("InferenceContext: a KV cache for " + std::to_string(m_cfg.n_ctx) +
                                    " tokens would take " + std::to_string(kv_gib) + " GiB; use a smaller n_ctx");
    if (hp.hybrid()) {
        // The DeltaNet layers' recurrent state replaces their K/V rows (recurrent_state.h).
        std::vector<uint8_t> has_kv(size_t(hp.n_layer), 1);
        std::vector<std::vector<float>> conv_w;
        m_rec_index.assign(size_t(hp.n_layer), -1);
        for (int32_t il = 0; il < hp.n_layer; ++il)
            if (hp.is_recurrent(il)) {
                has_kv[size_t(il)]      = 0;
                m_rec_index[size_t(il)] = int32_t(conv_w.size());
                conv_w.push_back(m_model.weights().layers[size_t(il)].ssm_conv1d);
            }
        const DeltaNetShape shape = DeltaNetShape::of(hp);
        m_kv                      = KvCache(hp.n_layer, m_cfg.n_ctx, hp.n_embd_kv(), has_kv,
                                            RecurrentState(shape, std::move(conv_w), m_cfg.rollback, m_cfg.max_rollback,
                                                           m_cfg.path == ForwardPath::reference));
        const size_t nbh          = static_cast<size_t>(m_cfg.n_batch);
        m_dn_in.resize(nbh * size_t(shape.input_floats()));
        m_dn_z.resize(nbh * size_t(shape.value_dim()));
        m_dn_o.resize(nbh * size_t(shape.value_dim()));
        m_dn_ba.resize(nbh * size_t(2 * shape.n_v_heads));
        m_dn_conv.resize(nbh * size_t(shape.conv_dim()));
    } else {
        m_kv = KvCache(hp.n_layer, m_cfg.n_ctx, hp.n_embd_kv());
    }
    // RoPE of several axes over the text positions (p, p, p, 0): the fourth axis's pairs turn by 0.
    auto zero_unrotated = [&](std::vector<float>& f) {
        for (int32_t i = 0; i < static_cast<int32_t>(f.size()); ++i)
            if (!hp.rope_pair_rotates(i)) f[static_cast<size_t>(i)] = 0.0f;
    };

    const std::vector<float>& factors = m_model.weights().rope_freqs;  // Llama 3.1+ long-context divisors
    auto inv_freq                     = [&](float base, float freq_scale) {
        std::vector<float> f(static_cast<size_t>(hp.n_rot / 2));
        for (int32_t i = 0; i < hp.n_rot / 2; ++i)
            f[static_cast<size_t>(i)] = static_cast<float>(std::pow(static_cast<double>(base), -2.0 * i / hp.n_rot) /
                                                           (factors.empty() ? 1.0 : factors[static_cast<size_t>(i)]));
        if (hp.rope_yarn) {
            // YaRN (ggml's rope_yarn): pair i turns by theta (scale (1 - mix_i) + mix_i), mix_i a ramp over the
            // correction dims [lo, hi] of this base; folded into the frequencies, so the positions go unscaled.
            auto corr = [&](float beta) {
                return hp.n_rot * std::log(float(hp.yarn_orig_ctx) / (beta * 2.0f * float(M_PI))) /
                       (2.0f * std::log(base));
            };
            const float lo = std::max(0.0f, std::floor(corr(hp.yarn_beta_fast)));
            const float hi = std::min(float(hp.n_rot - 1), std::ceil(corr(hp.yarn_beta_slow)));
            for (int32_t i = 0; i < hp.n_rot / 2; ++i) {
                const float y   = (float(i) - lo) / std::max(0.001f, hi - lo);
                const float mix = 1.0f - std::min(1.0f, std::max(0.0f, y));
                f[static_cast<size_t>(i)] *= freq_scale * (1.0f - mix) + mix;
            }
        }
        return f;
    };
    m_inv_freq     = inv_freq(hp.rope_freq_base, hp.rope_freq_scale);
    m_inv_freq_swa = inv_freq(hp.rope_freq_base_swa, hp.rope_freq_scale_swa);
    zero_unrotated(m_inv_freq), zero_unrotated(m_inv_freq_swa);

    const size_t nb = static_cast<size_t>(m_cfg.n_batch);
    m_tokens.resize(nb);
    m_pos.resize(nb);
    m_x.resize(nb * hp.n_embd);
    m_xn.resize(nb * hp.n_embd);
    m_q.resize(nb * hp.n_embd_q());
    m_attn.resize(nb * hp.n_embd_q());
    if (hp.attn_gate) m_qg.resize(nb * 2 * hp.n_embd_q()), m_attn_gate.resize(nb * hp.n_embd_q());
    if (hp.n_ff_shexp > 0) {
        m_sh_gate.resize(nb * size_t(hp.n_ff_shexp)), m_sh_up.resize(nb * size_t(hp.n_ff_shexp));
        m_sh_out.resize(nb * size_t(hp.n_embd));
    }
    // A mixture of experts never reads n_ff (its dense width may be anything its file says): the experts' width.
    const size_t ffw = static_cast<size_t>(hp.ffn_width());
    m_gate.resize(nb * ffw);
    m_up.resize(nb * ffw);
    if (hp.moe()) {
        const size_t ne = size_t(hp.n_expert), k = size_t(hp.n_expert_used), nl = size_t(hp.n_layer);
        m_router.resize(nb * ne);
        m_route.resize(nl * nb * k);
        m_route_w.resize(nl * nb * k);
        m_route_n.assign(nl, 0);
        m_expert_probs.resize(ne);
        m_expert_order.resize(ne);
        m_expert_tokens.reserve(nb * k);
        m_expert_weights.reserve(nb * k);
        m_moe_in.resize(std::max(nb, k) * size_t(hp.n_embd));
        m_expert_views.resize(2 * k);
        if (k > nb) m_gate.resize(k * ffw), m_up.resize(k * ffw);  // one token's experts side by side
        m_moe_out.resize(nb * size_t(hp.n_embd));
    }
    m_logits.resize(nb * hp.n_vocab);
    m_scores.resize(static_cast<size_t>(m_cfg.n_ctx));
    // Largest quantized-activation buffer (the most vectors below the BLAS batch, of the widest matmul input), so
    // matmul never allocates.
    if (m_cfg.path == ForwardPath::fast && m_cfg.int8_activations) {
        const int64_t n_q8   = std::min<int64_t>(m_cfg.n_batch, 512);  // larger prompt batches grow it once
        const int64_t widest = std::max<int64_t>(
            {hp.n_embd, hp.n_embd_q(), static_cast<int64_t>(ffw), int64_t(hp.n_ff_shexp), int64_t(hp.ssm_value_dim())});
        m_q8act.reserve(
            static_cast<size_t>(std::max(kernels::q8act_bytes(n_q8, widest),
                                         widest % 256 == 0 ? kernels::q8act_k_bytes(n_q8, widest) : uint64_t{0})));
    }
}

// ---- public entry points ----

std::span<const int32_t> InferenceContext::last_experts(int32_t il) const {
    if (m_route_n.empty() || il < 0 || il >= static_cast<int32_t>(m_route_n.size())) return {};
    const size_t k = size_t(m_model.hparams().n_expert_used);
    return {&m_route[size_t(il) * size_t(m_cfg.n_batch) * k], size_t(m_route_n[size_t(il)]) * k};
}

std::span<const float> InferenceContext::last_expert_weights(int32_t il) const {
    if (m_route_n.empty() || il < 0 || il >= static_cast<int32_t>(m_route_n.size())) return {};
    const size_t k = size_t(m_model.hparams().n_expert_used);
    return {&m_route_w[size_t(il) * size_t(m_cfg.n_batch) * k], size_t(m_route_n[size_t(il)]) * k};
}

std::span<const float> InferenceContext::decode(int32_t token, int32_t pos, const ForwardOptions& opts) {
    m_tokens[0] = token;  // no per-call allocation on the hot path
    m_pos[0]    = pos;
    run(1, nullptr, 0, opts);
    return {m_logits.data(), static_cast<size_t>(m_model.hparams().n_vocab)};
}

LogitsView InferenceContext::forward_batch(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                                           const std::vector<uint8_t>& mask, const ForwardOptions& opts) {
    const int32_t n = static_cast<int32_t>(tokens.size());
    if (n < 1 || n > m_cfg.n_batch)
        throw std::invalid_argument("forward_batch: " + std::to_string(n) + " tokens, expected 1.." +
                                    std::to_string(m_cfg.n_batch) + " (ContextConfig.n_batch)");
    if (positions.size() != tokens.size())
        throw std::invalid_argument("forward_batch: " + std::to_string(positions.size()) + " positions for " +
                                    std::to_string(n) + " tokens");
    if (!mask.empty()) {
        if (mask.size() != static_cast<size_t>(n) * n)
            throw std::invalid_argument("forward_batch: mask has " + std::to_string(mask.size()) +
                                        " entries, expected n*n = " + std::to_string(n * n));
        for (int32_t i = 0; i < n; ++i)
            if (!mask[static_cast<size_t>(i) * n + i])
                throw std::invalid_argument("forward_batch: mask row " + std::to_string(i) +
                                            " must allow the token itself (diagonal)");
    }
    std::copy(tokens.begin(), tokens.end(), m_tokens.begin());
    std::copy(positions.begin(), positions.end(), m_pos.begin());
    run(n, mask.empty() ? nullptr : mask.data(), 0, opts);
    return LogitsView{m_logits.data(), n, m_model.hparams().n_vocab};
}

std::span<const float> InferenceContext::prefill(const std::vector<int32_t>& tokens, const ForwardOptions& opts) {
    if (tokens.empty()) throw std::invalid_argument("prefill: no tokens");
    m_kv.reserve_slots(static_cast<int32_t>(std::min<size_t>(tokens.size(), static_cast<size_t>(INT32_MAX))));
    const int32_t total = static_cast<int32_t>(tokens.size());
    for (int32_t start = 0; start < total; start += m_cfg.n_batch) {
        const int32_t n  = std::min(m_cfg.n_batch, total - start);
        const int32_t p0 = m_kv.size();
        for (int32_t i = 0; i < n; ++i) {
            m_tokens[i] = tokens[static_cast<size_t>(start + i)];
            m_pos[i]    = p0 + i;
        }
        const bool last = start + n == total;
        run(n, nullptr, last ? n - 1 : n, opts);
    }
    return {m_logits.data(), static_cast<size_t>(m_model.hparams().n_vocab)};
}

void InferenceContext::check_options(const ForwardOptions& opts) const {
    const Hparams& hp = m_model.hparams();
    auto check_mask   = [&](const std::vector<uint8_t>& m, const char* name) {
        if (!m.empty() && static_cast<int32_t>(m.size()) != hp.n_layer)
            throw std::invalid_argument(std::string("ForwardOptions.") + name + ": " + std::to_string(m.size()) +
                                          " entries, expected 0 or n_layer = " + std::to_string(hp.n_layer));
    };
    check_mask(opts.skip_attn, "skip_attn");
    check_mask(opts.skip_ffn, "skip_ffn");
    if (opts.exit_layer < -1 || opts.exit_layer >= hp.n_layer)
        throw std::invalid_argument("ForwardOptions.exit_layer: " + std::to_string(opts.exit_layer) + " outside [-1, " +
                                    std::to_string(hp.n_layer - 1) + "]");
    const int32_t last = opts.exit_layer >= 0 ? opts.exit_layer : hp.n_layer - 1;
    if (opts.first_layer < 0 || opts.first_layer > last)
        throw std::invalid_argument("ForwardOptions.first_layer: " + std::to_string(opts.first_layer) +
                                    " outside [0, " + std::to_string(last) + "] (the last layer run)");
    if (opts.first_layer > 0 && !opts.hidden_in)
        throw std::invalid_argument("ForwardOptions.hidden_in: required when first_layer > 0 (first_layer " +
                                    std::to_string(opts.first_layer) + ")");
    if ((hp.n_embd_attn_in > 0) != (opts.attn_in != nullptr))
        throw std::invalid_argument(hp.n_embd_attn_in > 0
                                        ? "ForwardOptions.attn_in: required, this model's attention reads " +
                                              std::to_string(hp.n_embd_attn_in) + " columns (n_embd_attn_in)"
                                        : std::string("ForwardOptions.attn_in: only for models with n_embd_attn_in"));
    if (opts.cached_slots) {
        int32_t prev = -1;
        for (int32_t s : *opts.cached_slots) {
            if (s <= prev || s >= m_kv.size())
                throw std::invalid_argument("ForwardOptions.cached_slots: must be ascending in [0, " +
                                            std::to_string(m_kv.size()) + "), got " + std::to_string(s));
            prev = s;
        }
    }
}

// ---- matmul dispatch: Y[i][0..rows) = W x_i for i < n; Y has row stride ldy ----

namespace {

// parallel_for over rows [0, rows) in whole tiles of kDecodeTileRows (the last task takes the ragged end). The int8
// kernels decode in 8-row tiles and give the rows left over at a task's end to smaller, slower tiles: with tasks of
// any size, up to 7 rows in every ~24 went there (docs/performance.md, "Session 8"). A row's result does not
// depend on the tile it is computed in, so this changes timing only.
constexpr int64_t kDecodeTileRows = 8;
// Rows a strict-subset target decodes per dense-kernel call (a multiple of kDecodeTileRows; 8 measured the same).
constexpr int64_t kSplitChunkRows = 32;
template <class Fn>
void parallel_for_tiles(int64_t rows, int64_t grain, Fn&& fn) {
    const int64_t tiles = (rows + kDecodeTileRows - 1) / kDecodeTileRows;
    parallel_for(0, tiles, std::max<int64_t>(1, grain / kDecodeTileRows),
                 [&](int64_t t0, int64_t t1) { fn(t0 * kDecodeTileRows, std::min(rows, t1 * kDecodeTileRows)); });
}

// The tokens of a batch in chunks of kQ8ActChunk, for the reduced-precision kernels inside one row task:
// fn(i0, m) multiplies tokens [i0, i0 + m), so the task's rows stay in cache across the chunks of a prompt.
template <class Fn>
void for_token_chunks(int32_t n, Fn&& fn) {
    for (int32_t i0 = 0; i0 < n; i0 += kQ8ActChunk) fn(i0, std::min(kQ8ActChunk, n - i0));
}

// Large batches (prefill): `fill(tile, r0, r1)` writes rows [r0, r1) of w as f32 into a per-thread tile, and
// OpenBLAS multiplies it by all n activation vectors: Y[:, r0..r1) = X (n, cols) * tile^T. BLAS runs inside TBB
// tasks here, so it must not start threads of its own.
template <class Fill>
void blas_tiles(float* y, int64_t ldy, const WeightView& w, const float* x, int32_t n, Fill&& fill) {
    openblas_set_num_threads(1);
    // At most kBlasTileBytes of f32 per tile, and at least two tiles per thread: a matrix of one tile (the K and V
    // projections of a 1024-wide model) ran on one thread while the others waited.
    const int64_t per_thread = (w.rows + 2 * region_threads() - 1) / (2 * region_threads());
    const int64_t tile_rows =
        std::max<int64_t>(16, std::min<int64_t>(kBlasTileBytes / (w.cols * static_cast<int64_t>(sizeof(float))),
                                                (per_thread + 15) / 16 * 16));
    parallel_for(0, w.rows, tile_rows, [&](int64_t r0, int64_t r1) {
        // (r1 - r0, cols) f32; grows to the largest tile once per thread. In 2 MiB pages where the kernel gives them:
        // the first prompt pays one page fault per tile instead of 512 (14 us each on this project's VM: 4 % of a
        // 512-token F16 prompt, measured before F16 prompts had their own kernel).
        thread_local hw::LargePageBuffer tile_mem;
        const uint64_t need = static_cast<uint64_t>((r1 - r0) * w.cols) * sizeof(float);
        if (tile_mem.size() < need) tile_mem = hw::LargePageBuffer(std::max<uint64_t>(need, kBlasTileBytes));
        float* tile = reinterpret_cast<float*>(tile_mem.data());
        fill(tile, r0, r1);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, static_cast<int>(r1 - r0), static_cast<int>(w.cols),
                    1.0f, x, static_cast<int>(w.cols), tile, static_cast<int>(w.cols), 0.0f, y + r0,
                    static_cast<int>(ldy));
    });
}

}  // namespace

// The fast paths below prompt size (and the int8 / BF16-activation paths at every size) prepare the activations once,
// then multiply row ranges in parallel; RowKernel names them, so products that share their input (q, k, v; gate,
// up) can share the prepared activations and one parallel region (matmul_group). The other paths (the reference,
// OpenBLAS tiles for prompts, compact prompt tiles) are `none` and run one product at a time in matmul().
InferenceContext::RowKernel InferenceContext::row_kernel(const WeightView& w, int32_t n) const {
    if (m_cfg.path == ForwardPath::reference) return RowKernel::none;
    const bool int8 = m_cfg.int8_activations;
    if (w.rest) {  // a strict-subset target: the dense BF16 kernel's choice, on rows decoded per tile
        if (int8 && kernels::gemm_bf16act_available()) return RowKernel::split_bf16act;
        return n < kBlasMinBatch ? RowKernel::split_f32 : RowKernel::none;
    }
    if (w.compact) {
        if (int8 && kernels::gemm_prefers_q8act(w.type)) return RowKernel::compact_q8act;  // every batch size
        // BF16 rows below prompt size, where this CPU runs it faster (compact_bf16act_preferred: sparse rows on AMD):
        // the fused kernel multiplies the decoded words by BF16-rounded activations packed in their pair order
        // (vdpbf16ps), as the dense BF16 path rounds them; no widening, half the multiplies. Else the fused f32 one.
        if (int8 && n < kBlasMinBatch && kernels::compact_bf16act_chosen(*w.compact)) return RowKernel::compact_bf16act;
        return n < kBlasMinBatch ? RowKernel::compact_f32 : RowKernel::none;
    }
    if (int8 && w.type == kernels::GgmlType::Q8_0_X8) return RowKernel::q8act_x8;  // repacked Q8_0
    if (int8 && kernels::q8act_k_preferred(w.type)) return RowKernel::q8act_k;     // K-quants, every batch size
    if (int8 && kernels::gemm_prefers_q8act(w.type)) return RowKernel::q8act;
    // BF16 weights on CPUs with vdpbf16ps, every batch size: BF16-rounded activations, two products per f32 lane
    // (llama.cpp rounds them the same way, for decode too), row tiles kept in cache across chunks of tokens as the
    // int8 path does. One kernel for decode, verification and prompts, so a token's logits do not depend on the
    // batch it is in; decode reads the weights as fast as the f32 kernel and verification passes of 5-8 tokens cost
    // 13-15 % less (docs/performance.md, "Session 20").
    if (int8 && w.type == kernels::GgmlType::BF16 && kernels::gemm_bf16act_available()) return RowKernel::bf16act;
    return n < kBlasMinBatch ? RowKernel::f32 : RowKernel::none;
}

// Quantizes or rounds the n activation vectors (cols each) once, on this thread, for every task of the region.
void InferenceContext::prepare_activations(RowKernel k, const float* x, int32_t n, int64_t cols) {
    const size_t nn = static_cast<size_t>(n);
    switch (k) {
        case RowKernel::q8act_x8:
            m_q8act.resize(static_cast<size_t>(kernels::q8act_x8_bytes(1, cols)) * nn);
            kernels::quantize_q8act_x8(m_q8act.data(), x, n, cols);
            break;
        case RowKernel::q8act_k:
            m_q8act.resize(static_cast<size_t>(kernels::q8act_k_bytes(1, cols)) * nn);
            kernels::quantize_q8act_k(m_q8act.data(), x, n, cols);
            break;
        case RowKernel::q8act:
        case RowKernel::compact_q8act:
            m_q8act.resize(static_cast<size_t>(kernels::q8act_bytes(1, cols)) * nn);
            kernels::quantize_q8act(m_q8act.data(), x, n, cols);
            break;
        case RowKernel::bf16act:
        case RowKernel::split_bf16act:
            m_bf16act.resize(nn * static_cast<size_t>(cols));
            kernels::round_bf16act(m_bf16act.data(), x, n, cols);
            break;
        case RowKernel::compact_bf16act:
            m_bf16act.resize(nn * static_cast<size_t>(kernels::compact_bf16act_words(cols)));
            kernels::compact_pack_bf16act(m_bf16act.data(), x, n, cols);
            break;
        case RowKernel::f32:
        case RowKernel::compact_f32:
        case RowKernel::split_f32:
        case RowKernel::none:
            break;
    }
}

namespace {
// Tasks over compact matrices of `bytes` in all: at least 64 KiB and about bytes / (2 x threads). Each task streams its
// tiles in order (compact.h), so fewer, longer streams keep the hardware prefetchers going (64 KiB tasks were ~4 %
// slower on Zen 5, Session 23).
uint64_t compact_task_bytes(uint64_t bytes) {
    const uint64_t threads = static_cast<uint64_t>(region_threads());  // what runs the region, -t limits included
    return std::max<uint64_t>(64u << 10, bytes / (2 * threads));
}

// A compact kernel's per-thread scratch, grown to the widest matrix once per thread.
uint8_t* compact_scratch(const kernels::CompactMatrix& cm) {
    thread_local std::vector<uint8_t> buf;
    buf.resize(std::max<size_t>(buf.size(), static_cast<size_t>(kernels::compact_gemm_scratch_bytes(cm))));
    return buf.data();
}
}  // namespace

// Rows [r0, r1) of one product with activations prepared by prepare_activations; the int8 and BF16 kernels take
// the tokens in chunks of kQ8ActChunk so the task's rows stay in cache across the chunks of a prompt.
void InferenceContext::matmul_rows(RowKernel k, const MatmulJob& j, const float* x, int32_t n, int64_t r0, int64_t r1) {
    const WeightView& w = *j.w;
    float* y            = j.y;
    const int64_t ldy   = j.ldy;
    switch (k) {
        case RowKernel::q8act_x8: {
            const uint64_t vec = kernels::q8act_x8_bytes(1, w.cols);
            for_token_chunks(n, [&](int32_t i0, int32_t m) {
                kernels::gemm_q8act_x8(y + i0 * ldy, ldy, w.data, m_q8act.data() + vec * static_cast<uint64_t>(i0), m,
                                       w.cols, r0, r1);
            });
            break;
        }
        case RowKernel::q8act_k: {
            const uint64_t vec = kernels::q8act_k_bytes(1, w.cols);
            for_token_chunks(n, [&](int32_t i0, int32_t m) {
                kernels::gemm_q8act_k(y + i0 * ldy, ldy, w.type, w.data,
                                      m_q8act.data() + vec * static_cast<uint64_t>(i0), m, w.cols, r0, r1);
            });
            break;
        }
        case RowKernel::q8act: {
            const uint64_t vec = kernels::q8act_bytes(1, w.cols);
            for_token_chunks(n, [&](int32_t i0, int32_t m) {
                kernels::gemm_q8act(y + i0 * ldy, ldy, w.type, w.data, m_q8act.data() + vec * static_cast<uint64_t>(i0),
                                    m, w.cols, r0, r1);
            });
            break;
        }
        case RowKernel::bf16act:
            for_token_chunks(n, [&](int32_t i0, int32_t m) {
                kernels::gemm_bf16act(y + i0 * ldy, ldy, w.data, m_bf16act.data() + static_cast<size_t>(i0) * w.cols, m,
                                      w.cols, r0, r1);
            });
            break;
        case RowKernel::f32:
            if (n == 1)
                kernels::gemv(y, w.type, w.data, x, w.cols, r0, r1);
            else
                kernels::gemm(y, ldy, w.type, w.data, x, n, w.cols, r0, r1);
            break;
        case RowKernel::compact_q8act: {
            const uint64_t vec = kernels::q8act_bytes(1, w.cols);
            for_token_chunks(n, [&](int32_t i0, int32_t m) {
                kernels::compact_gemm_q8act(y + i0 * ldy, ldy, *w.compact,
                                            m_q8act.data() + vec * static_cast<uint64_t>(i0), m, r0, r1,
                                            compact_scratch(*w.compact));
            });
            break;
        }
        case RowKernel::compact_bf16act:
            kernels::compact_gemm_bf16act(y, ldy, *w.compact, m_bf16act.data(), n, r0, r1, compact_scratch(*w.compact));
            break;
        case RowKernel::compact_f32:
            kernels::compact_gemm(y, ldy, *w.compact, x, n, r0, r1, compact_scratch(*w.compact));
            break;
        case RowKernel::split_bf16act:
        case RowKernel::split_f32: {
            // A strict-subset target: each tile of rows is decoded (the draft's part and the rest) into scratch and
            // multiplied by the dense BF16 kernel, tile by tile as the dense rows would be, so the results are the
            // dense target's bit for bit.
            const int64_t chunk = kSplitChunkRows;
            thread_local std::vector<uint8_t> scratch;  // the decoded rows of one chunk (L2-resident)
            scratch.resize(std::max<size_t>(scratch.size(), static_cast<size_t>(chunk) * w.row_bytes() + 64));
            uint8_t* buf = scratch.data();
            for (int64_t a = r0; a < r1; a += chunk) {
                const int64_t b = std::min(r1, a + chunk);
                kernels::compact_rest_decode_rows(buf, *w.compact, *w.rest, a, b);
                if (k == RowKernel::split_bf16act)
                    for_token_chunks(n, [&](int32_t i0, int32_t m) {
                        kernels::gemm_bf16act(y + i0 * ldy + a, ldy, buf,
                                              m_bf16act.data() + static_cast<size_t>(i0) * w.cols, m, w.cols, 0, b - a);
                    });
                else if (n == 1)
                    kernels::gemv(y + a, w.type, buf, x, w.cols, 0, b - a);
                else
                    kernels::gemm(y + a, ldy, w.type, buf, x, n, w.cols, 0, b - a);
            }
            break;
        }
        case RowKernel::none:
            break;
    }
}

// Y_j = W_j x for products that share their input x, in one parallel region when they run the same RowKernel over
// the same width: the activations are prepared once, and the products' row tiles lie one after the other in the
// region's range, so a task may end one matrix and start the next. A decode step then forks 5 regions per layer
// instead of 8 (q k v, attention, o, gate up, down). Rows start at tile boundaries of their own matrix, and a row's
// result does not depend on the task it is in, so the results are those of one product at a time.
// (Tried: gate and up sharing one range, each task computing its rows of both and then the gate's activation on them,
// so that SwiGLU ran on both threads. Within the noise of the one-process A/B of docs/performance.md, Session 24.)
void InferenceContext::matmul_group(std::span<const MatmulJob> jobs, const float* x, int32_t n) {
    if (jobs.empty()) return;
    const RowKernel k = row_kernel(*jobs[0].w, n);
    bool fuse         = k != RowKernel::none && jobs.size() <= kMaxGroup;
    for (const MatmulJob& j : jobs) fuse = fuse && row_kernel(*j.w, n) == k && j.w->cols == jobs[0].w->cols;
    if (!fuse) {
        for (const MatmulJob& j : jobs) matmul(j.y, j.ldy, *j.w, x, n);
        return;
    }
    prepare_activations(k, x, n, jobs[0].w->cols);
    // Tasks: dense rows in chunks of about 64 KiB of weights, enough work per task to hide scheduling and many tasks
    // to balance; compact matrices as compact_task_bytes sizes them for the region's bytes.
    std::array<int64_t, kMaxGroup + 1> first{};  // first[j]: the region's tile index of product j's first tile
    uint64_t bytes = 0;
    int64_t rows   = 0;
    for (size_t j = 0; j < jobs.size(); ++j) {
        const WeightView& w = *jobs[j].w;
        first[j + 1]        = first[j] + (w.rows + kDecodeTileRows - 1) / kDecodeTileRows;
        bytes += w.n_bytes();
        rows += w.rows;
    }
    const uint64_t row_bytes = std::max<uint64_t>(1, bytes / static_cast<uint64_t>(std::max<int64_t>(1, rows)));
    const uint64_t task      = jobs[0].w->compact ? compact_task_bytes(bytes) : uint64_t{64u << 10};
    const int64_t grain_rows = std::max<int64_t>(jobs[0].w->compact ? 8 : 4, static_cast<int64_t>(task / row_bytes));
    team_for(0, first[jobs.size()], std::max<int64_t>(1, grain_rows / kDecodeTileRows), [&](int64_t t0, int64_t t1) {
        for (size_t j = 0; j < jobs.size(); ++j) {
            const int64_t a = std::max(t0, first[j]), b = std::min(t1, first[j + 1]);
            if (a >= b) continue;
            const int64_t r1 = std::min(jobs[j].w->rows, (b - first[j]) * kDecodeTileRows);
            matmul_rows(k, jobs[j], x, n, (a - first[j]) * kDecodeTileRows, r1);
        }
    });
}

void InferenceContext::matmul(float* y, int64_t ldy, const WeightView& w, const float* x, int32_t n) {
    if (row_kernel(w, n) != RowKernel::none) {
        const MatmulJob j{y, ldy, &w};
        matmul_group({&j, 1}, x, n);
        return;
    }
    if (m_cfg.path == ForwardPath::reference) {
        if (w.rest) {  // a strict-subset target: its dense rows, then the reference dot products
            const std::vector<uint8_t> dense = dense_copy(w);
            for (int32_t i = 0; i < n; ++i)
                kernels::gemv_ref(y + i * ldy, w.type, dense.data(), x + i * w.cols, w.cols, 0, w.rows);
            return;
        }
        if (w.compact) {
            kernels::compact_gemm_ref(y, ldy, *w.compact, x, n, 0, w.rows, compact_scratch(*w.compact));
            return;
        }
        for (int32_t i = 0; i < n; ++i)
            kernels::gemv_ref(y + i * ldy, w.type, w.data, x + i * w.cols, w.cols, 0, w.rows);
        return;
    }
    // Prompts of compact BF16 rows, as dense BF16 prompts: each task decodes its rows, then multiplies them by the
    // BF16-rounded activations.
    if (w.compact && m_cfg.int8_activations && w.type == kernels::GgmlType::BF16 && kernels::gemm_bf16act_available()) {
        const kernels::CompactMatrix& cm = *w.compact;
        m_bf16act.resize(static_cast<size_t>(n) * static_cast<size_t>(w.cols));
        kernels::round_bf16act(m_bf16act.data(), x, n, w.cols);
        const uint64_t avg_row =
            std::max<uint64_t>(1, cm.bytes() / static_cast<uint64_t>(std::max<int64_t>(1, w.rows)));
        const int64_t grain = std::max<int64_t>(8, static_cast<int64_t>(compact_task_bytes(cm.bytes()) / avg_row));
        parallel_for_tiles(w.rows, grain, [&](int64_t r0, int64_t r1) {
            thread_local std::vector<uint8_t> dense;  // the decoded rows [r0, r1)
            dense.resize(static_cast<size_t>(r1 - r0) * w.row_bytes());
            kernels::compact_decode_rows(dense.data(), cm, r0, r1);
            for_token_chunks(n, [&](int32_t i0, int32_t m) {
                kernels::gemm_bf16act(y + i0 * ldy + r0, ldy, dense.data(),
                                      m_bf16act.data() + static_cast<size_t>(i0) * w.cols, m, w.cols, 0, r1 - r0);
            });
        });
        return;
    }
    // F16 prompts on AVX-512: the F16 kernel (kernels/gemm_f16.h) on the rows as they are, or as a compact draft's
    // task decodes them, in tasks of at least 32 rows, about four per thread; a task keeps a block of tokens in L2
    // while its row tiles pass over them. A row's result does not depend on the task, so a compact draft computes
    // what its dense copy does.
    if (w.type == kernels::GgmlType::F16 && kernels::gemm_f16_available()) {
        const int64_t tasks = 4 * static_cast<int64_t>(region_threads());
        parallel_for_tiles(w.rows, std::max<int64_t>(32, (w.rows + tasks - 1) / tasks), [&](int64_t r0, int64_t r1) {
            if (!w.compact) return kernels::gemm_f16(y, ldy, w.data, x, n, w.cols, r0, r1);
            thread_local std::vector<uint8_t> dense;  // the decoded rows [r0, r1)
            dense.resize(static_cast<size_t>(r1 - r0) * w.row_bytes());
            kernels::compact_decode_rows(dense.data(), *w.compact, r0, r1);
            kernels::gemm_f16(y + r0, ldy, dense.data(), x, n, w.cols, 0, r1 - r0);
        });
        return;
    }
    // Large batches (prefill) of the other types: dequantized tiles through OpenBLAS (blas_tiles); compact rows are
    // decoded first.
    blas_tiles(y, ldy, w, x, n, [&](float* tile, int64_t r0, int64_t r1) {
        if (!w.compact) {
            for (int64_t r = r0; r < r1; ++r)
                kernels::dequantize_row(&tile[(r - r0) * w.cols], w.type, w.row(r), w.cols);
            return;
        }
        thread_local std::vector<uint8_t> dense;  // the decoded rows of one tile
        dense.resize(static_cast<size_t>(r1 - r0) * w.row_bytes());
        if (w.rest)
            kernels::compact_rest_decode_rows(dense.data(), *w.compact, *w.rest, r0, r1);
        else
            kernels::compact_decode_rows(dense.data(), *w.compact, r0, r1);
        for (int64_t r = r0; r < r1; ++r)
            kernels::dequantize_row(&tile[(r - r0) * w.cols], w.type, &dense[(r - r0) * w.row_bytes()], w.cols);
    });
}

// ---- the layer loop ----

void InferenceContext::run(int32_t n, const uint8_t* mask, int32_t logits_first, const ForwardOptions& opts) {
    const Hparams& hp = m_model.hparams();
    for (int32_t i = 0; i < n; ++i)
        if (m_tokens[i] < 0 || m_tokens[i] >= hp.n_vocab)
            throw std::out_of_range("forward: token id " + std::to_string(m_tokens[i]) + " outside [0, " +
                                    std::to_string(hp.n_vocab) + ")");
    check_options(opts);
    std::fill(m_route_n.begin(), m_route_n.end(), 0);
    m_kv.reserve_slots(n);
    const int32_t n_past = m_kv.size();
    if (hp.hybrid()) {  // the recurrent layers follow each token's path; rollback data is kept as configured
        const std::vector<int32_t> parent = tree_parents(mask, n);
        m_dn_chain                        = true;
        for (int32_t i = 0; i < n; ++i) m_dn_chain = m_dn_chain && parent[size_t(i)] == i - 1;
        m_keeping          = m_kv.recurrent().begin_pass(n_past, n, logits_first == 0);  // a prompt keeps nothing
        const double kept0 = m_dn_keep_seconds;
        try {
            run_layers(n, mask, logits_first, opts, parent);
        } catch (...) {
            m_kv.recurrent().abort_pass(n_past);
            throw;
        }
        m_kv.recurrent().end_pass(n_past + n, m_dn_keep_seconds - kept0);
        return;
    }
    run_layers(n, mask, logits_first, opts, {});
}

void InferenceContext::run_layers(int32_t n, const uint8_t* mask, int32_t logits_first, const ForwardOptions& opts,
                                  const std::vector<int32_t>& parent) {
    const Hparams& hp     = m_model.hparams();
    const ModelWeights& W = m_model.weights();
    const int64_t e = hp.n_embd, eq = hp.n_embd_q(), ekv = hp.n_embd_kv(), ff = hp.n_ff;
    const int32_t hd     = hp.head_dim();
    const bool ref       = m_cfg.path == ForwardPath::reference;
    const int32_t n_past = m_kv.size();

    // Cost accounting from the shapes: every matrix of a block that runs is read once for all n tokens.
    ForwardCost cost;
    auto add_matmul = [&](const WeightView& w, int32_t tokens) {
        cost.bytes_weights += w.n_bytes();
        cost.flops += 2.0 * static_cast<double>(w.rows) * static_cast<double>(w.cols) * tokens;
    };
    int64_t attended = 0;  // (token, slot) pairs attended in one layer
    for (int32_t i = 0; i < n; ++i) {
        attended += opts.cached_slots ? static_cast<int64_t>(opts.cached_slots->size()) : n_past;
        for (int32_t j = 0; j < n; ++j) attended += mask ? (mask[static_cast<size_t>(i) * n + j] != 0) : (j <= i);
    }
    const int64_t cached_read = opts.cached_slots ? static_cast<int64_t>(opts.cached_slots->size()) : n_past;
    if (opts.hidden_in) {
        // A later stage of a layer-split pass: the residual stream that entered first_layer.
        std::copy(opts.hidden_in, opts.hidden_in + static_cast<int64_t>(n) * e, m_x.begin());
    } else {
        // Embedding: one row of token_embd per token becomes the residual stream x (n, n_embd).
        cost.bytes_weights += static_cast<uint64_t>(n) * W.token_embd.row_bytes();
        for (int32_t i = 0; i < n; ++i) {
            const void* row = W.token_embd.row(m_tokens[i]);
            if (ref)
                kernels::dequantize_row_ref(&m_x[i * e], W.token_embd.type, row, e);
            else
                kernels::dequantize_row(&m_x[i * e], W.token_embd.type, row, e);
        }
        if (hp.scale_embd) {  // gemma: embeddings times sqrt(n_embd)
            const float s = std::sqrt(static_cast<float>(e));
            for (int64_t c = 0; c < n * e; ++c) m_x[c] *= s;
        }
    }

    const int32_t last_layer = opts.exit_layer >= 0 ? opts.exit_layer : hp.n_layer - 1;
    // The cache keeps each token's residual stream at the layers a draft reads when asked (KvCache::keep_hidden):
    // layer L's row part is the stream entering L (L = n_layer: after the last layer, before the final norm).
    const std::vector<int32_t>& keep = m_kv.hidden_layers();
    const bool keeping = m_kv.has_hidden() && m_kv.n_embd_hidden() == static_cast<int64_t>(keep.size()) * e;
    auto keep_states   = [&](int32_t layer) {
        for (size_t k = 0; keeping && k < keep.size(); ++k)
            if (keep[k] == layer)
                for (int32_t i = 0; i < n; ++i)
                    std::copy(&m_x[i * e], &m_x[(i + 1) * e], m_kv.hidden(n_past + i) + static_cast<int64_t>(k) * e);
    };
    for (int32_t il = opts.first_layer; il <= last_layer; ++il) {
        m_cancel.throw_if_cancelled();
        const LayerWeights& L = W.layers[static_cast<size_t>(il)];
        keep_states(il);

        // A hybrid's Gated DeltaNet layer in place of attention (forward_delta_net.cpp); skipped, its state stays.
        if (hp.is_recurrent(il) && (opts.skip_attn.empty() || !opts.skip_attn[il])) {
            for (int32_t i = 0; i < n; ++i) rms_norm(&m_xn[i * e], &m_x[i * e], L.attn_norm.data(), e, hp.rms_eps);
            if (opts.observer) opts.observer(il, ActivationSite::attn_in, m_xn.data(), n, e);
            delta_net(il, L, m_xn.data(), n, parent, cost);  // reads m_xn before its output overwrites it
            cost.bytes_weights += L.attn_vector_bytes();
            for (int64_t c = 0; c < n * e; ++c) m_x[c] += m_xn[c];
        }
        // Attention block. Project the normed stream to q (into scratch) and k, v (straight into this layer's
        // new KV slots n_past.., which are contiguous rows), rotate q and k by position, attend, and add the
        // output projection to the residual.
        else if (opts.skip_attn.empty() || !opts.skip_attn[il]) {
            // The attention input: attn_norm of the stream, or the caller's wide rows (an EAGLE-3 layer).
            const float* xin = opts.attn_in;
            if (!xin) {
                for (int32_t i = 0; i < n; ++i) rms_norm(&m_xn[i * e], &m_x[i * e], L.attn_norm.data(), e, hp.rms_eps);
                xin = m_xn.data();
            }
            float* k_new = m_kv.k(il, n_past);
            float* v_new = m_kv.v(il, n_past);
            if (opts.observer) opts.observer(il, ActivationSite::attn_in, xin, n, L.wq.cols);
            const MatmulJob qkv[] = {
                hp.attn_gate ? MatmulJob{m_qg.data(), 2 * eq, &L.wq} : MatmulJob{m_q.data(), eq, &L.wq},
                {k_new, ekv, &L.wk},
                {v_new, ekv, &L.wv}};
            matmul_group(qkv, xin, n);
            if (hp.attn_gate)  // each head's rows: its query, then its output gate
                for (int32_t i = 0; i < n; ++i)
                    for (int32_t h = 0; h < hp.n_head; ++h) {
                        const float* src = &m_qg[i * 2 * eq + 2 * h * hd];
                        std::copy_n(src, hd, &m_q[i * eq + h * hd]);
                        std::copy_n(src + hd, hd, &m_attn_gate[i * eq + h * hd]);
                    }
            const bool swa        = hp.is_swa(il);
            const float* inv_freq = swa ? m_inv_freq_swa.data() : m_inv_freq.data();
            // YaRN's frequencies carry its scaling (m_inv_freq), and its magnitude correction scales the rotation.
            const float freq_scale = hp.rope_yarn ? 1.0f : swa ? hp.rope_freq_scale_swa : hp.rope_freq_scale;
            const float mscale     = hp.rope_yarn ? hp.yarn_mscale() : 1.0f;
            for (int32_t i = 0; i < n; ++i) {
                float* q = &m_q[i * eq];
                float* k = k_new + i * ekv;
                if (hp.qkv_bias) {
                    float* v = v_new + i * ekv;
                    for (int64_t c = 0; c < eq; ++c) q[c] += L.bq[c];
                    for (int64_t c = 0; c < ekv; ++c) k[c] += L.bk[c], v[c] += L.bv[c];
                }
                if (hp.qk_norm) {  // each head of q and k RMS-normed on its own (qwen3, gemma3)
                    for (int32_t h = 0; h < hp.n_head; ++h)
                        rms_norm(q + h * hd, q + h * hd, L.q_norm.data(), hd, hp.rms_eps);
                    for (int32_t h = 0; h < hp.n_head_kv; ++h)
                        rms_norm(k + h * hd, k + h * hd, L.k_norm.data(), hd, hp.rms_eps);
                }
                if (hp.uses_rope(il)) {
                    rope(q, hp.n_head, hd, hp.n_rot, inv_freq, m_pos[i], freq_scale, hp.rope_style, mscale);
                    rope(k, hp.n_head_kv, hd, hp.n_rot, inv_freq, m_pos[i], freq_scale, hp.rope_style, mscale);
                }
            }
            if (opts.kv_transform) opts.kv_transform(il, k_new, v_new, n, ekv);
            attention(il, n, n_past, mask, opts);
            if (hp.attn_gate)  // qwen35: the output times sigmoid(gate)
                for (int64_t c = 0; c < n * eq; ++c) m_attn[c] *= 1.0f / (1.0f + std::exp(-m_attn_gate[c]));
            add_matmul(L.wq, n), add_matmul(L.wk, n), add_matmul(L.wv, n), add_matmul(L.wo, n);
            cost.bytes_weights += L.attn_vector_bytes();
            cost.bytes_kv += static_cast<uint64_t>(cached_read + 2 * n) * ekv * 2 * sizeof(float);  // read + write
            cost.flops += 4.0 * static_cast<double>(attended) * hp.n_head * hd;
            if (opts.observer) opts.observer(il, ActivationSite::attn_out, m_attn.data(), n, eq);
            matmul(m_xn.data(), e, L.wo, m_attn.data(), n);
            if (hp.attn_out_bias)
                for (int32_t i = 0; i < n; ++i)
                    for (int64_t c = 0; c < e; ++c) m_xn[i * e + c] += L.bo[c];
            if (hp.post_norms)  // gemma: the block's output is normed before the residual add
                for (int32_t i = 0; i < n; ++i)
                    rms_norm(&m_xn[i * e], &m_xn[i * e], L.attn_post_norm.data(), e, hp.rms_eps);
            for (int64_t c = 0; c < n * e; ++c) m_x[c] += m_xn[c];
        }

        // Feed-forward block (SwiGLU; GeGLU for gemma): x += W_down (act(W_gate xn) * (W_up xn)); a mixture of
        // experts: x += the weighted sum of the chosen experts' SwiGLU blocks (forward_moe.cpp).
        if (hp.moe()) m_route_n[size_t(il)] = 0;
        if (hp.moe() && (opts.skip_ffn.empty() || !opts.skip_ffn[il])) {
            for (int32_t i = 0; i < n; ++i) rms_norm(&m_xn[i * e], &m_x[i * e], L.ffn_norm.data(), e, hp.rms_eps);
            if (opts.observer) opts.observer(il, ActivationSite::ffn_in, m_xn.data(), n, e);
            if (hp.n_ff_shexp > 0) shared_expert(L, n, cost);  // from the same input, before moe_ffn overwrites it
            moe_ffn(il, L, n, cost);
            m_route_n[size_t(il)] = n;
            cost.bytes_weights += L.ffn_vector_bytes();
            if (hp.n_ff_shexp > 0)
                for (int64_t c = 0; c < n * e; ++c) m_xn[c] += m_sh_out[c];
            for (int64_t c = 0; c < n * e; ++c) m_x[c] += m_xn[c];
        } else if (opts.skip_ffn.empty() || !opts.skip_ffn[il]) {
            for (int32_t i = 0; i < n; ++i) rms_norm(&m_xn[i * e], &m_x[i * e], L.ffn_norm.data(), e, hp.rms_eps);
            if (opts.observer) opts.observer(il, ActivationSite::ffn_in, m_xn.data(), n, e);
            const MatmulJob gate_up[] = {{m_gate.data(), ff, &L.w_gate}, {m_up.data(), ff, &L.w_up}};
            matmul_group(gate_up, m_xn.data(), n);
            if (hp.ffn_act == FfnActivation::gelu)
                geglu(m_gate.data(), m_up.data(), n * ff);
            else
                swiglu(m_gate.data(), m_up.data(), n * ff);
            if (opts.observer) opts.observer(il, ActivationSite::ffn_down, m_gate.data(), n, ff);
            matmul(m_xn.data(), e, L.w_down, m_gate.data(), n);
            add_matmul(L.w_gate, n), add_matmul(L.w_up, n), add_matmul(L.w_down, n);
            cost.bytes_weights += L.ffn_vector_bytes();
            if (hp.post_norms)
                for (int32_t i = 0; i < n; ++i)
                    rms_norm(&m_xn[i * e], &m_xn[i * e], L.ffn_post_norm.data(), e, hp.rms_eps);
            for (int64_t c = 0; c < n * e; ++c) m_x[c] += m_xn[c];
        }
    }

    if (opts.hidden_out) std::copy(m_x.begin(), m_x.begin() + static_cast<int64_t>(n) * e, opts.hidden_out);
    if (last_layer == hp.n_layer - 1) keep_states(hp.n_layer);

    // Output head: final norm and the LM head, only for the tokens whose logits the caller needs
    // (row 0 of m_logits is token logits_first).
    const int32_t n_out = n - logits_first;
    if (n_out > 0) {
        for (int32_t i = logits_first; i < n; ++i)
            rms_norm(&m_xn[(i - logits_first) * e], &m_x[i * e], W.output_norm.data(), e, hp.rms_eps);
        if (opts.observer) opts.observer(hp.n_layer, ActivationSite::head_in, m_xn.data(), n_out, e);
        matmul(m_logits.data(), hp.n_vocab, W.output, m_xn.data(), n_out);
        if (hp.final_softcap > 0.0f) {  // gemma2: z -> c tanh(z / c)
            const float c = hp.final_softcap;
            for (int64_t t = 0; t < static_cast<int64_t>(n_out) * hp.n_vocab; ++t)
                m_logits[t] = c * std::tanh(m_logits[t] / c);
        }
        add_matmul(W.output, n_out);
        cost.bytes_weights += W.output_norm.size() * sizeof(float);
    }
    m_cancel.throw_if_cancelled();
    m_kv.grow(n);
    m_cost = cost;
}

}  // namespace speculum::model
