// Eagle3Drafter (see eagle3_drafter.h).
#include "core/drafts/eagle3_drafter.h"

#include "core/model/rope.h"
#include "core/parallel.h"
#include "kernels/gemv.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace speculum::drafts {

Eagle3Drafter::Eagle3Drafter(const model::Model& target, Eagle3Head head, model::ContextConfig ctx, std::string name)
    : StateDrafter(target, head.block, head.extract_layers, head.block.hparams().n_embd, ctx, std::move(name)),
      m_head(std::move(head)) {}

void Eagle3Drafter::target_states(const float* rows, int32_t n, float* out, DraftCost& cost) {
    // g = fc [streams], all n rows against each fc row once (rows of fc split over threads).
    const model::WeightView& fc = m_head.fc;
    if (reference_path())
        kernels::gemm_ref(out, fc.rows, fc.type, fc.data, rows, n, fc.cols, 0, fc.rows);
    else
        parallel_for(0, fc.rows, 16, [&](int64_t r0, int64_t r1) {
            kernels::gemm(out, fc.rows, fc.type, fc.data, rows, n, fc.cols, r0, r1);
        });
    cost.bytes_weights += fc.n_bytes();
    cost.flops += 2.0 * double(n) * double(fc.rows) * double(fc.cols);
}

void Eagle3Drafter::inputs(const std::vector<int32_t>& tokens, const std::vector<const float*>& states,
                           model::ForwardOptions& opts, DraftCost& cost) {
    const model::Hparams& hp       = m_block.hparams();
    const int64_t e                = hp.n_embd;
    const size_t n                 = tokens.size();
    const model::LayerWeights& L   = m_block.weights().layers[0];
    const model::WeightView& embed = m_head.embed;
    m_attn_in.resize(n * size_t(2 * e));
    m_resid.resize(n * size_t(e));
    m_emb.resize(size_t(e));
    for (size_t i = 0; i < n; ++i) {
        float* row = &m_attn_in[i * size_t(2 * e)];
        kernels::dequantize_row(m_emb.data(), embed.type, embed.row(tokens[i]), e);
        model::rms_norm(row, m_emb.data(), L.attn_norm.data(), e, hp.rms_eps);
        model::rms_norm(row + e, states[i], m_head.hidden_norm.data(), e, hp.rms_eps);
        // The residual: g, or hidden_norm(g) with norm_before_residual.
        const float* r = m_head.norm_before_residual ? row + e : states[i];
        std::copy(r, r + e, &m_resid[i * size_t(e)]);
    }
    opts.hidden_in = m_resid.data();
    opts.attn_in   = m_attn_in.data();
    cost.bytes_weights += uint64_t(n) * embed.row_bytes() + m_head.hidden_norm.size() * sizeof(float);
}

void Eagle3Drafter::next_state(const float* out_row, float* state) const {
    std::copy(out_row, out_row + m_block.hparams().n_embd, state);  // the layer's output before output_norm
}

void Eagle3Drafter::target_logits(std::span<const float> row, std::vector<float>& out) const {
    if (m_head.d2t.empty()) {
        out.assign(row.begin(), row.end());
        return;
    }
    // Tokens outside the draft vocabulary cannot be drafted.
    out.assign(size_t(m_target.hparams().n_vocab), -std::numeric_limits<float>::infinity());
    for (size_t j = 0; j < row.size(); ++j) out[size_t(m_head.d2t[j])] = row[j];
}

}  // namespace speculum::drafts
