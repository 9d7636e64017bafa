// What one forward pass of a drafter reads and computes: weight bytes per block (read once per pass, however many
// tokens it evaluates), KV bytes of the attended slots, and FLOPs. Real figures come from the model's weight views;
// a self-draft without a compact kernel for its transform substitutes modeled figures and sets `modeled`.
#pragma once

#include "core/drafts/drafter.h"
#include "core/model/forward.h"
#include "core/model/model.h"

#include <cstdint>
#include <vector>

namespace speculum::drafts {

struct ForwardCostModel {
    std::vector<uint64_t> attn_bytes;   // (n_layer) bytes of layer il's attention block: wq, wk, wv, wo, norm, biases
    std::vector<uint64_t> ffn_bytes;    // (n_layer) bytes of layer il's feed-forward block: gate, up, down, norm
    uint64_t head_bytes       = 0;      // output norm + output matrix (read when any logits are computed)
    uint64_t embd_row_bytes   = 0;      // one token_embd row (read once per evaluated token)
    double kv_bytes_per_value = 4.0;    // bytes per cached K or V element read by attention (f32 cache: 4)
    bool modeled              = false;  // weight figures are modeled (no compact kernel), not what the kernels read
    bool kv_modeled           = false;  // kv_bytes_per_value is modeled (compressed draft KV), not the f32 cache

    // The real figures of a model's weight views and the runtime's f32 KV cache.
    static ForwardCostModel of(const model::Model& m);
};

// One pass: n_new tokens evaluated with n_cached cached slots visible to each; `attend_pairs` = sum over the new
// tokens of the slots each attends (cached + new ones its mask allows); logits computed for n_logits tokens.
// Skipped blocks and layers after exit_layer read and compute nothing. `seconds` is left 0 (the caller measures).
DraftCost pass_cost(const ForwardCostModel& cm, const model::Hparams& hp, const model::ForwardOptions& opts,
                    int32_t n_new, int32_t n_cached, uint64_t attend_pairs, int32_t n_logits);

// Weight bytes one single-token pass reads under `opts` (the per-forward figure of the bit accounting).
uint64_t weight_bytes_per_forward(const ForwardCostModel& cm, const model::Hparams& hp,
                                  const model::ForwardOptions& opts);

}  // namespace speculum::drafts
