// A target's own multi-token-prediction (MTP, "NextN") layer as its draft (draft kind "mtp"), in llama.cpp's
// conventions (`<arch>.nextn_predict_layers`, tensors `blk.N.nextn.*` after the main blocks; docs/models.md):
//
//   to draft the token after x_q:  u = eh_proj [ enorm(embed(x_q)) ; hnorm(h_{q-1}) ]   (2 n_embd -> n_embd)
//                                   z = the NextN block(u) at position q, with its own KV cache
//                                   logits = head(shared_head_norm(z))
//
// h_{q-1} is the target's hidden state after its final norm at position q - 1 (what its LM head reads); the first
// drafted token uses the target's, each further one the MTP layer's own output after its head norm (llama.cpp's
// draft-mtp and vLLM's MTP proposer chain one layer this way). The target's states come from its KV cache, which
// keeps them when this drafter asks (KvCache::keep_hidden). Greedy and sampled chains; trees of any shape, each
// node's children the top-ranked tokens after it (each node runs the layer on its parent's state).
#pragma once

#include "core/drafts/drafter.h"
#include "core/drafts/forward_cost.h"
#include "core/model/forward.h"
#include "core/model/model.h"

namespace speculum::drafts {

// The target's NextN layer `index` as a one-layer model (its block, its head norm and head, or the target's): what
// one MTP pass runs after the fusion. Throws std::invalid_argument naming nextn_predict_layers when it is absent.
model::Model mtp_block_model(const model::Model& target, int32_t index);

class MtpDrafter final : public Drafter {
public:
    // The target's NextN layer `index` (0 = the first). Throws std::invalid_argument when the target has none.
    MtpDrafter(const model::Model& target, int32_t index, model::ContextConfig ctx, std::string name = "mtp");

    std::string name() const override { return m_name; }
    int32_t n_vocab() const override { return m_target.hparams().n_vocab; }
    void sync(std::span<const int32_t> committed) override;
    DraftChain propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) override;
    // Top-ranked children per node, depth by depth (expand_draft_tree), each node's pass on its parent's state.
    DraftTree propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) override;
    void attach_target_kv(const model::KvCache* kv, const std::vector<int32_t>* tokens) override;
    bool wants_target_hidden() const override { return true; }

    // The logits the MTP layer gives for the token after `token` at position `pos` from the target state `h`
    // (n_embd floats after its last layer, before its final norm, as KvCache::hidden keeps it), on a fresh
    // context: the layer's arithmetic alone (tests).
    std::vector<float> logits_for(const float* h, int32_t token, int32_t pos);
    const model::Model& block() const { return m_block; }

private:
    // u rows for (token, state) pairs: eh_proj [enorm(embed(token)); hnorm(state)].
    void fuse(const std::vector<int32_t>& tokens, const std::vector<const float*>& states, std::vector<float>& u,
              DraftCost& cost);
    bool catch_up(DraftCost& cost);  // MTP KV for every committed position the target's states reach

    const model::Model& m_target;
    model::Model m_block;  // the NextN block as a one-layer model: its head norm and head (or the target's)
    model::WeightView m_eh_proj, m_embed;
    std::vector<float> m_enorm, m_hnorm;
    model::InferenceContext m_ctx;  // slot s holds position s + 1 (position 0 has no preceding state)
    ForwardCostModel m_cost;
    std::string m_name;
    const model::KvCache* m_tkv           = nullptr;
    const std::vector<int32_t>* m_ttokens = nullptr;
    std::vector<int32_t> m_committed;
    int32_t m_done = 0;  // MTP slots [0, m_done) hold committed positions 1..m_done
    std::vector<float> m_norm_h, m_u, m_hidden, m_logits;
};

}  // namespace speculum::drafts
