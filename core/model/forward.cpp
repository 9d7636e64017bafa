// The layer loop of the forward pass (embedding -> n_layer x [attention or a DeltaNet, SwiGLU FFN or experts] -> norm
// -> LM head), construction and argument checking. Attention is in forward_attention.cpp, the matmul dispatch in
// forward_matmul.cpp, the experts in forward_moe.cpp, the DeltaNet layers in forward_delta_net.cpp.
#include "core/model/forward.h"

#include "core/hw/large_pages.h"
#include "core/json_reader.h"
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
// (the matmul dispatch's constants are in forward_matmul.cpp)
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
    static constexpr std::pair<const char*, ForwardPath> kPaths[]          = {{"fast", ForwardPath::fast},
                                                                              {"reference", ForwardPath::reference}};
    static constexpr std::pair<const char*, RollbackStrategy> kRollbacks[] = {{"snapshot", RollbackStrategy::snapshot},
                                                                              {"rerun", RollbackStrategy::rerun}};
    c                                                                      = ContextConfig{};
    JsonReader r(j, "context");
    r.get("n_ctx", c.n_ctx);
    r.get("n_batch", c.n_batch);
    r.get_enum("path", c.path, kPaths);
    r.get("int8_activations", c.int8_activations);
    r.get_enum("rollback", c.rollback, kRollbacks);
    r.get("max_rollback", c.max_rollback);
    r.finish();
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
    m_logits_width = hp.n_vocab;
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
    return {m_logits.data(), static_cast<size_t>(m_logits_width)};
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
    return LogitsView{m_logits.data(), n, m_logits_width};
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
    return {m_logits.data(), static_cast<size_t>(m_logits_width)};
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
    if (opts.head && (opts.head->cols != hp.n_embd || opts.head->rows < 1 || opts.head->rows > hp.n_vocab))
        throw std::invalid_argument("ForwardOptions.head: " + std::to_string(opts.head->rows) + " x " +
                                    std::to_string(opts.head->cols) + ", expected 1.." + std::to_string(hp.n_vocab) +
                                    " rows of n_embd = " + std::to_string(hp.n_embd));
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
    const int32_t n_out    = n - logits_first;
    const WeightView& head = opts.head ? *opts.head : W.output;  // a reduced head: its rows' logits only
    m_logits_width         = static_cast<int32_t>(head.rows);
    if (n_out > 0) {
        for (int32_t i = logits_first; i < n; ++i)
            rms_norm(&m_xn[(i - logits_first) * e], &m_x[i * e], W.output_norm.data(), e, hp.rms_eps);
        if (opts.observer) opts.observer(hp.n_layer, ActivationSite::head_in, m_xn.data(), n_out, e);
        matmul(m_logits.data(), head.rows, head, m_xn.data(), n_out);
        if (hp.final_softcap > 0.0f) {  // gemma2: z -> c tanh(z / c)
            const float c = hp.final_softcap;
            for (int64_t t = 0; t < static_cast<int64_t>(n_out) * head.rows; ++t)
                m_logits[t] = c * std::tanh(m_logits[t] / c);
        }
        add_matmul(head, n_out);
        cost.bytes_weights += W.output_norm.size() * sizeof(float);
    }
    m_cancel.throw_if_cancelled();
    m_kv.grow(n);
    m_cost = cost;
}

}  // namespace speculum::model
