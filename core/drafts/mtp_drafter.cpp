// MtpDrafter (see mtp_drafter.h).
#include "core/drafts/mtp_drafter.h"

#include "core/model/mtp_module.h"
#include "core/model/rope.h"
#include "core/resources.h"
#include "kernels/gemv.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace speculum::drafts {

const model::NextnWeights& own_nextn(const model::Model& target, int32_t index) {
    const model::Hparams& thp = target.hparams();
    if (index < 0 || index >= thp.n_nextn)
        throw std::invalid_argument("draft kind \"mtp\": the target has " + std::to_string(thp.n_nextn) +
                                    " multi-token-prediction layers (<arch>.nextn_predict_layers), so layer " +
                                    std::to_string(index) + " does not exist" +
                                    (thp.n_nextn == 0 ? "; the model has no MTP head of its own: give an MTP module "
                                                        "file as model_path (docs/models.md)"
                                                      : ""));
    return target.weights().nextn[size_t(index)];
}

std::string mtp_module_path(const std::string& model_path, const model::Model& target) {
    if (!model_path.empty()) return model_path;
    return target.hparams().n_nextn > 0 ? std::string() : resource_path(kBundledMtpModule).string();
}

model::NextnWeights mtp_layer_for(const DraftSpec& spec, const model::Model& target) {
    if (spec.model_path.empty() && target.hparams().n_nextn > 0) return own_nextn(target, spec.mtp_layer);
    std::string path = spec.model_path;
    std::vector<model::NextnWeights> layers;
    if (path.empty()) {  // the bundled target's module, when it is for this target
        try {
            path   = resource_path(kBundledMtpModule).string();
            layers = model::load_mtp_module(path, target);
        } catch (const std::exception& e) {
            throw std::invalid_argument(
                "draft kind \"mtp\": the target has no MTP head of its own (<arch>.nextn_predict_layers), and the "
                "bundled target's MTP module does not serve it (" +
                std::string(e.what()) + "): give an MTP module file as model_path (docs/models.md)");
        }
    } else {
        layers = model::load_mtp_module(path, target);
    }
    if (spec.mtp_layer >= int32_t(layers.size()))
        throw std::invalid_argument("draft.mtp_layer: " + path + " holds " + std::to_string(layers.size()) +
                                    " multi-token-prediction layers, so layer " + std::to_string(spec.mtp_layer) +
                                    " does not exist");
    return std::move(layers[size_t(spec.mtp_layer)]);
}

model::Model mtp_block_model(const model::Model& target, const model::NextnWeights& n) {
    const model::ModelWeights& tw = target.weights();
    model::Hparams hp             = target.hparams();
    hp.n_layer = 1, hp.n_nextn = 0, hp.n_swa = 0, hp.swa_layers.clear(), hp.nope_period = 0;
    hp.recurrent_layers.clear();  // a hybrid's NextN block is gated attention
    model::ModelWeights w;
    w.token_embd  = n.embed.empty() ? tw.token_embd : n.embed;
    w.layers      = {n.block};
    w.output_norm = n.head_norm.empty() ? tw.output_norm : n.head_norm;
    w.output      = n.head.empty() ? tw.output : n.head;
    w.rope_freqs  = tw.rope_freqs;
    return model::Model::from_weights(hp, std::move(w), target.name() + " [MTP layer]");
}

MtpDrafter::MtpDrafter(const model::Model& target, model::NextnWeights nextn, model::ContextConfig ctx,
                       std::string name)
    : StateDrafter(target, mtp_block_model(target, nextn), {target.hparams().n_layer}, target.hparams().n_embd, ctx,
                   std::move(name)),
      m_nextn(std::move(nextn)),
      m_embed(m_block.weights().token_embd) {}

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
        model::rms_norm(row, m_emb.data(), m_nextn.enorm.data(), e, hp.rms_eps);
        model::rms_norm(row + e, states[i], m_nextn.hnorm.data(), e, hp.rms_eps);
    }
    m_u.assign(n * size_t(e), 0.0f);
    const model::WeightView& eh = m_nextn.eh_proj;
    if (reference_path())
        kernels::gemm_ref(m_u.data(), e, eh.type, eh.data, m_cat.data(), int64_t(n), 2 * e, 0, e);
    else
        kernels::gemm(m_u.data(), e, eh.type, eh.data, m_cat.data(), int64_t(n), 2 * e, 0, e);
    opts.hidden_in = m_u.data();
    cost.bytes_weights += eh.n_bytes() + uint64_t(n) * m_embed.row_bytes() +
                          uint64_t(m_nextn.enorm.size() + m_nextn.hnorm.size()) * sizeof(float);
    cost.flops += 2.0 * double(n) * double(e) * double(2 * e);
}

void MtpDrafter::next_state(const float* out_row, float* state) const {
    const model::Hparams& hp = m_target.hparams();
    model::rms_norm(state, out_row, m_block.weights().output_norm.data(), hp.n_embd, hp.rms_eps);
}

}  // namespace speculum::drafts
