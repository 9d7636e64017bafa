// An EAGLE-3 head as the draft (draft kind "eagle3"; the head's layout and loading: eagle3.h). Each position's state
// is g = fc [h_low; h_mid; h_high] of the target's residual streams entering its extract layers; the layer reads
// [attn_norm(embed(x)); hidden_norm(g)] into q, k and v with g as the residual, and its output before output_norm
// is the state the next drafted token reads (llama.cpp's graph_decode; vLLM's and SGLang's EAGLE-3 proposers).
// Chains, trees and EAGLE-2 dynamic trees: state_drafter.h.
#pragma once

#include "core/drafts/eagle3.h"
#include "core/drafts/state_drafter.h"

namespace speculum::drafts {

class Eagle3Drafter final : public StateDrafter {
public:
    // Throws std::invalid_argument when the head does not fit the target (eagle3.h).
    Eagle3Drafter(const model::Model& target, Eagle3Head head, model::ContextConfig ctx, std::string name = "eagle3");
    const Eagle3Head& head() const { return m_head; }

protected:
    void target_states(const float* rows, int32_t n, float* out, DraftCost& cost) override;
    void inputs(const std::vector<int32_t>& tokens, const std::vector<const float*>& states,
                model::ForwardOptions& opts, DraftCost& cost) override;
    void next_state(const float* out_row, float* state) const override;
    void target_logits(std::span<const float> row, std::vector<float>& out) const override;

private:
    Eagle3Head m_head;
    std::vector<float> m_attn_in, m_resid, m_emb;
};

}  // namespace speculum::drafts
