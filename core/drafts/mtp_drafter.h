// A target's multi-token-prediction (MTP, "NextN") layer as its draft (draft kind "mtp"), in llama.cpp's
// conventions (`<arch>.nextn_predict_layers`, tensors `blk.N.nextn.*` after the main blocks; docs/models.md): the
// target's own, or one from an MTP module file (model/mtp_module.h) for a target that has none:
//
//   to draft the token after x_q:  u = eh_proj [ enorm(embed(x_q)) ; hnorm(h_{q-1}) ]   (2 n_embd -> n_embd)
//                                   z = the NextN block(u) at position q, with its own KV cache
//                                   logits = head(shared_head_norm(z))
//
// h_{q-1} is the target's hidden state after its final norm at position q - 1 (what its LM head reads); the first
// drafted token uses the target's, each further one the MTP layer's own output after its head norm (llama.cpp's
// draft-mtp and vLLM's MTP proposer chain one layer this way). The target's states come from its KV cache, which
// keeps them when this drafter asks (KvCache::keep_hidden). Chains, trees and EAGLE-2 dynamic trees: state_drafter.h.
#pragma once

#include "core/drafts/draft_spec.h"
#include "core/drafts/state_drafter.h"

namespace speculum::drafts {

// The target's own NextN layer `index`. Throws std::invalid_argument naming nextn_predict_layers when it is absent.
const model::NextnWeights& own_nextn(const model::Model& target, int32_t index);

// The file an MTP spec's layers come from: model_path; empty = "" (the target's own) when the target has NextN
// layers, else the bundled target's MTP module (kBundledMtpModule; a std::runtime_error naming the places looked
// at when there are no bundled resources).
std::string mtp_module_path(const std::string& model_path, const model::Model& target);

// The NextN layer an MTP spec drafts with: spec.mtp_layer of the target's own or of the module mtp_module_path
// names (load_mtp_module: its errors name the file and the key or tensor).
model::NextnWeights mtp_layer_for(const DraftSpec& spec, const model::Model& target);

// NextN layer `n` as a one-layer model (its block, its head norm and head, or the target's): what one MTP pass runs
// after the fusion.
model::Model mtp_block_model(const model::Model& target, const model::NextnWeights& n);
inline model::Model mtp_block_model(const model::Model& target, int32_t index) {
    return mtp_block_model(target, own_nextn(target, index));
}

class MtpDrafter final : public StateDrafter {
public:
    // NextN layer `nextn` (the target's own or a module's: its views keep their file mapped).
    MtpDrafter(const model::Model& target, model::NextnWeights nextn, model::ContextConfig ctx,
               std::string name = "mtp");
    // The target's NextN layer `index` (0 = the first). Throws std::invalid_argument when the target has none.
    MtpDrafter(const model::Model& target, int32_t index, model::ContextConfig ctx, std::string name = "mtp")
        : MtpDrafter(target, own_nextn(target, index), ctx, std::move(name)) {}

protected:
    // h after the target's final norm (what its LM head reads), as llama.cpp's MTP input.
    void target_states(const float* rows, int32_t n, float* out, DraftCost& cost) override;
    // u = eh_proj [enorm(embed(token)); hnorm(state)] as the layer's input stream.
    void inputs(const std::vector<int32_t>& tokens, const std::vector<const float*>& states,
                model::ForwardOptions& opts, DraftCost& cost) override;
    // The layer's own output after its head norm.
    void next_state(const float* out_row, float* state) const override;

private:
    model::NextnWeights m_nextn;
    model::WeightView m_embed;
    std::vector<float> m_cat, m_u, m_emb;
};

}  // namespace speculum::drafts
