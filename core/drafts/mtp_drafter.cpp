// MtpDrafter (see mtp_drafter.h).
#include "core/drafts/mtp_drafter.h"

#include "core/model/rope.h"
#include "kernels/gemv.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace speculum::drafts {

model::Model mtp_block_model(const model::Model& target, int32_t index) {
    const model::Hparams& thp = target.hparams();
    if (index < 0 || index >= thp.n_nextn)
        throw std::invalid_argument("draft kind \"mtp\": the target has " + std::to_string(thp.n_nextn) +
                                    " multi-token-prediction layers (<arch>.nextn_predict_layers), so layer " +
                                    std::to_string(index) + " does not exist" +
                                    (thp.n_nextn == 0 ? "; the model has no MTP head to draft with" : ""));
    const model::ModelWeights& tw = target.weights();
    const model::NextnWeights& n  = tw.nextn[size_t(index)];
    model::Hparams hp             = thp;
    hp.n_layer = 1, hp.n_nextn = 0, hp.n_swa = 0, hp.swa_layers.clear(), hp.nope_period = 0;
    model::ModelWeights w;
    w.token_embd  = n.embed.empty() ? tw.token_embd : n.embed;
    w.layers      = {n.block};
    w.output_norm = n.head_norm.empty() ? tw.output_norm : n.head_norm;
    w.output      = n.head.empty() ? tw.output : n.head;
    w.rope_freqs  = tw.rope_freqs;
    return model::Model::from_weights(hp, std::move(w), target.name() + " [MTP layer " + std::to_string(index) + "]");
}

MtpDrafter::MtpDrafter(const model::Model& target, int32_t index, model::ContextConfig ctx, std::string name)
    : StateDrafter(target, mtp_block_model(target, index), {target.hparams().n_layer}, target.hparams().n_embd, ctx,
                   std::move(name)),
      m_eh_proj(target.weights().nextn[size_t(index)].eh_proj),
      m_embed(m_block.weights().token_embd),
      m_enorm(target.weights().nextn[size_t(index)].enorm),
      m_hnorm(target.weights().nextn[size_t(index)].hnorm) {}

void MtpDrafter::target_states(const float* rows, int32_t n, float* out, DraftCost&) {
    const model::Hparams& hp = m_target.hparams();
    const int64_t e          = hp.n_embd;
    for (int32_t r = 0; r < n; ++r)
        model::rms_norm(out + r * e, rows + r * e, m_target.weights().output_norm.data(), e, hp.rms_eps);
}

void MtpDrafter::inputs(const std::vector<int32_t>& tokens, const std::vector<const float*>& states,
                        model::ForwardOptions& opts, DraftCost& cost) {
    const model::Hparams& hp = m_target.hparams();
    const int64_t e          = hp.n_embd;
    const size_t n           = tokens.size();
    m_cat.resize(n * size_t(2 * e));
    m_emb.resize(size_t(e));
    for (size_t i = 0; i < n; ++i) {
        float* row = &m_cat[i * size_t(2 * e)];
        kernels::dequantize_row(m_emb.data(), m_embed.type, m_embed.row(tokens[i]), e);
        if (hp.scale_embd)
            for (float& x : m_emb) x *= std::sqrt(float(e));
        model::rms_norm(row, m_emb.data(), m_enorm.data(), e, hp.rms_eps);
        model::rms_norm(row + e, states[i], m_hnorm.data(), e, hp.rms_eps);
    }
    m_u.assign(n * size_t(e), 0.0f);
    if (reference_path())
        kernels::gemm_ref(m_u.data(), e, m_eh_proj.type, m_eh_proj.data, m_cat.data(), int64_t(n), 2 * e, 0, e);
    else
        kernels::gemm(m_u.data(), e, m_eh_proj.type, m_eh_proj.data, m_cat.data(), int64_t(n), 2 * e, 0, e);
    opts.hidden_in = m_u.data();
    cost.bytes_weights += m_eh_proj.n_bytes() + uint64_t(n) * m_embed.row_bytes() +
                          uint64_t(m_enorm.size() + m_hnorm.size()) * sizeof(float);
    cost.flops += 2.0 * double(n) * double(e) * double(2 * e);
}

void MtpDrafter::next_state(const float* out_row, float* state) const {
    const model::Hparams& hp = m_target.hparams();
    model::rms_norm(state, out_row, m_block.weights().output_norm.data(), hp.n_embd, hp.rms_eps);
}

}  // namespace speculum::drafts
