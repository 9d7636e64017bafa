// The mixture-of-experts feed-forward block (Hparams::moe(): qwen3moe, gpt-oss): the router scores every expert for
// each token, each token keeps its n_expert_used best with their weights (llama.cpp's build_moe_ffn: softmax gating,
// top k, the kept weights normalised to sum 1), and each expert then runs once over all the tokens of the pass routed
// to it, so a verification pass of k tokens reads the union of the experts they chose, each expert's matrices once.
// Both paths share this routing; the products go through matmul / matmul_group, which take the path's kernels.
#include "core/model/forward.h"
#include "core/model/rope.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace speculum::model {

namespace {

// ggml clamps the sum of the kept weights below at the smallest normal f16 before dividing by it.
constexpr float kMinWeightSum = 6.103515625e-5f;

void softmax_inplace(float* z, int32_t n) {
    float mx = z[0];
    for (int32_t i = 1; i < n; ++i) mx = std::max(mx, z[i]);
    double sum = 0;
    for (int32_t i = 0; i < n; ++i) sum += (z[i] = std::exp(z[i] - mx));
    const float inv = static_cast<float>(1.0 / sum);
    for (int32_t i = 0; i < n; ++i) z[i] *= inv;
}

}  // namespace

void route_experts(const Hparams& hp, const float* logits, int32_t* ids, float* weights, float* p, int32_t* order) {
    const int32_t ne = hp.n_expert, k = hp.n_expert_used;
    std::copy_n(logits, ne, p);
    if (hp.expert_gating == ExpertGating::softmax) softmax_inplace(p, ne);
    std::iota(order, order + ne, 0);
    // The k largest, ties to the lower expert index (a deterministic order; random weights never tie).
    std::partial_sort(order, order + k, order + ne,
                      [&](int32_t a, int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    for (int32_t j = 0; j < k; ++j) ids[j] = order[j], weights[j] = p[order[j]];
    if (hp.expert_gating == ExpertGating::softmax_weight) softmax_inplace(weights, k);
    if (hp.expert_weights_norm) {
        float sum = 0;
        for (int32_t j = 0; j < k; ++j) sum += weights[j];
        sum = std::max(sum, kMinWeightSum);
        for (int32_t j = 0; j < k; ++j) weights[j] /= sum;
    }
}

void InferenceContext::moe_ffn(int32_t il, const LayerWeights& L, int32_t n, ForwardCost& cost) {
    const Hparams& hp = m_model.hparams();
    const int64_t e = hp.n_embd, fe = hp.n_ff_exp;
    const int32_t ne = hp.n_expert, k = hp.n_expert_used;

    // Router logits (n, n_expert), then each token's experts and weights.
    matmul(m_router.data(), ne, L.ffn_gate_inp, m_xn.data(), n);
    cost.flops += 2.0 * double(ne) * double(e) * n;
    if (hp.moe_biases)  // gpt-oss: the router's bias
        for (int32_t i = 0; i < n; ++i)
            for (int32_t x = 0; x < ne; ++x)
                m_router[size_t(i) * size_t(ne) + size_t(x)] += L.ffn_gate_inp_b[size_t(x)];
    int32_t* ids   = &m_route[size_t(il) * size_t(m_cfg.n_batch) * size_t(k)];
    float* weights = &m_route_w[size_t(il) * size_t(m_cfg.n_batch) * size_t(k)];
    for (int32_t i = 0; i < n; ++i)
        route_experts(hp, &m_router[size_t(i) * size_t(ne)], ids + size_t(i) * k, weights + size_t(i) * k,
                      m_expert_probs.data(), m_expert_order.data());

    // One token (decode, a draft step): its experts' gate and up products share the input, so they run in one
    // parallel region; then each expert's down product. Experts are taken in ascending index, as the batched path
    // below takes them, so a token's output does not depend on the pass it is in.
    if (n == 1 && size_t(2 * k) <= kMaxGroup) {
        m_cancel.throw_if_cancelled();
        std::array<std::pair<int32_t, float>, kMaxGroup / 2> chosen;
        for (int32_t j = 0; j < k; ++j) chosen[size_t(j)] = {ids[j], weights[j]};
        std::sort(chosen.begin(), chosen.begin() + k);
        std::array<MatmulJob, kMaxGroup> jobs;
        for (int32_t j = 0; j < k; ++j) {
            const int32_t ex                  = chosen[size_t(j)].first;
            m_expert_views[size_t(2 * j)]     = LayerWeights::expert(L.w_gate, ex, ne);
            m_expert_views[size_t(2 * j + 1)] = LayerWeights::expert(L.w_up, ex, ne);
            jobs[size_t(2 * j)]               = {&m_gate[size_t(j) * fe], fe, &m_expert_views[size_t(2 * j)]};
            jobs[size_t(2 * j + 1)]           = {&m_up[size_t(j) * fe], fe, &m_expert_views[size_t(2 * j + 1)]};
        }
        matmul_group(std::span<const MatmulJob>(jobs.data(), size_t(2 * k)), m_xn.data(), 1);
        std::fill(m_moe_out.begin(), m_moe_out.begin() + e, 0.0f);
        for (int32_t j = 0; j < k; ++j) {
            float* y = &m_moe_in[size_t(j) * e];
            expert_down(L, chosen[size_t(j)].first, 1, &m_gate[size_t(j) * fe], &m_up[size_t(j) * fe], y, cost);
            const float w = chosen[size_t(j)].second;
            for (int64_t c = 0; c < e; ++c) m_moe_out[size_t(c)] += w * y[c];
        }
        std::copy_n(m_moe_out.begin(), e, m_xn.begin());
        return;
    }

    // Each expert once over the tokens routed to it: gather their rows, gate and up, SwiGLU, down, and add each
    // token's share, weighted, to its output row.
    std::fill(m_moe_out.begin(), m_moe_out.begin() + n * e, 0.0f);
    for (int32_t ex = 0; ex < ne; ++ex) {
        m_expert_tokens.clear();
        m_expert_weights.clear();
        for (int32_t i = 0; i < n; ++i)
            for (int32_t j = 0; j < k; ++j)
                if (ids[size_t(i) * k + j] == ex) {
                    m_expert_tokens.push_back(i);
                    m_expert_weights.push_back(weights[size_t(i) * k + j]);
                }
        const int32_t cnt = static_cast<int32_t>(m_expert_tokens.size());
        if (cnt == 0) continue;
        m_cancel.throw_if_cancelled();
        for (int32_t r = 0; r < cnt; ++r)
            std::copy_n(&m_xn[size_t(m_expert_tokens[size_t(r)]) * e], e, &m_moe_in[size_t(r) * e]);
        const WeightView g = LayerWeights::expert(L.w_gate, ex, ne), u = LayerWeights::expert(L.w_up, ex, ne);
        const MatmulJob gate_up[] = {{m_gate.data(), fe, &g}, {m_up.data(), fe, &u}};
        matmul_group(gate_up, m_moe_in.data(), cnt);
        expert_down(L, ex, cnt, m_gate.data(), m_up.data(), m_moe_in.data(), cost);
        for (int32_t r = 0; r < cnt; ++r) {
            const float w  = m_expert_weights[size_t(r)];
            const float* y = &m_moe_in[size_t(r) * e];
            float* out     = &m_moe_out[size_t(m_expert_tokens[size_t(r)]) * e];
            for (int64_t c = 0; c < e; ++c) out[c] += w * y[c];
        }
    }
    std::copy_n(m_moe_out.begin(), n * e, m_xn.begin());
}

void InferenceContext::shared_expert(const LayerWeights& L, int32_t n, ForwardCost& cost) {
    const Hparams& hp = m_model.hparams();
    const int64_t e = hp.n_embd, fs = hp.n_ff_shexp;
    const MatmulJob gate_up[] = {{m_sh_gate.data(), fs, &L.w_gate_shexp}, {m_sh_up.data(), fs, &L.w_up_shexp}};
    matmul_group(gate_up, m_xn.data(), n);
    swiglu(m_sh_gate.data(), m_sh_up.data(), n * fs);
    matmul(m_sh_out.data(), e, L.w_down_shexp, m_sh_gate.data(), n);
    for (int32_t i = 0; i < n; ++i) {  // scaled by sigmoid(shexp_gate . x): how much of it this token takes
        double z = 0;
        for (int64_t c = 0; c < e; ++c) z += double(L.shexp_gate[size_t(c)]) * m_xn[size_t(i) * size_t(e) + size_t(c)];
        const float g = 1.0f / (1.0f + std::exp(-float(z)));
        for (int64_t c = 0; c < e; ++c) m_sh_out[size_t(i) * size_t(e) + size_t(c)] *= g;
    }
    cost.bytes_weights += L.shexp_bytes();
    cost.flops += 2.0 * 3.0 * double(fs) * double(e) * n + 2.0 * double(e) * n;
}

void InferenceContext::expert_down(const LayerWeights& L, int32_t ex, int32_t rows, float* gate, float* up, float* y,
                                   ForwardCost& cost) {
    const Hparams& hp = m_model.hparams();
    const int64_t e = hp.n_embd, fe = hp.n_ff_exp;
    if (hp.moe_biases) {  // gpt-oss: the expert's biases (its rows of the stacked bias vectors)
        const float* bg = &L.exp_gate_b[size_t(ex) * size_t(fe)];
        const float* bu = &L.exp_up_b[size_t(ex) * size_t(fe)];
        for (int32_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < fe; ++c) gate[size_t(r) * fe + c] += bg[c], up[size_t(r) * fe + c] += bu[c];
    }
    if (hp.expert_act == ExpertActivation::swiglu_oai)
        swiglu_oai(gate, up, rows * fe);
    else
        swiglu(gate, up, rows * fe);
    matmul(y, e, LayerWeights::expert(L.w_down, ex, hp.n_expert), gate, rows);
    if (hp.moe_biases) {
        const float* bd = &L.exp_down_b[size_t(ex) * size_t(e)];
        for (int32_t r = 0; r < rows; ++r)
            for (int64_t c = 0; c < e; ++c) y[size_t(r) * e + c] += bd[c];
    }
    cost.bytes_weights += L.expert_bytes(hp.n_expert);
    cost.flops += 2.0 * 3.0 * double(fe) * double(e) * rows;
    ++cost.experts_read;
}

}  // namespace speculum::model
