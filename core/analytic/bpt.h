// Bytes Per Token (CATS, paper 001, Eqs. 3–4): weight bytes streamed per generated token for chain, tree and
// cascade configurations. Reading (design/analytic_readings.md): β̄+1 is the mean accepted length; bytes are
// decoder-layer weights at the given bits per element with GB = 1e9 B; a LLaMA-7B layer with its two RMSNorm
// vectors has 202,383,360 parameters, so 32 fp16 layers are 12.9525 GB/token. Values are "modeled".
#pragma once

#include "core/analytic/csdrafting.h"

#include <cstdint>
#include <vector>

namespace speculum::analytic {

// Shape of one LLaMA-style decoder layer.
struct LayerShape {
    int64_t d_model = 4096;   // hidden size h
    int64_t d_ffn   = 11008;  // MLP inner size (gate, up and down projections)
    int64_t kv_dim  = 4096;   // n_kv_heads × head_dim (= d_model without grouped-query attention)
    bool norms      = true;   // count the two RMSNorm weight vectors (CATS Table 5 matches only with them)
    bool operator==(const LayerShape&) const = default;
};

// 2h² (q, o) + 2h·kv (k, v) + 3h·ffn (MLP) + 2h (norms): parameters of one decoder layer.
int64_t decoder_layer_params(const LayerShape& shape);
// Bytes of one layer at `bits` per weight, in GB (1e9 B).
double layer_gb(const LayerShape& shape, double bits);

// Eq. (3), two-stage (Kangaroo / plain chain): (γ̄·B_draft + B_verify) / (β̄+1). GB per token.
double bpt_two_stage(int gamma, double b_draft_gb, double b_verify_gb, double mean_accepted);
// Eq. (4), CATS three-stage: (γ̄·B_draft + B_SV + B_target) / (β̄+1). GB per token.
double bpt_cats(int gamma, double b_draft_gb, double b_sv_gb, double b_target_gb, double mean_accepted);

// CATS layer split: draft = layers 1..L_DM, shallow verifier = L_DM+1..L_SV, target = L_SV+1..L_total.
struct CatsConfig {
    int l_total = 32;  // decoder layers of the target
    int l_dm    = 3;   // last layer of the draft (early exit)
    int l_sv    = 15;  // last layer of the shallow verifier
    int gamma   = 5;   // drafting passes per cycle (γ̄)
    double bits = 16;  // bits per weight
    LayerShape shape;  // one decoder layer
    bool operator==(const CatsConfig&) const = default;
};
void validate(const CatsConfig& c);

struct BptBreakdown {
    double draft_gb  = 0;  // γ̄ · B_draft per cycle
    double sv_gb     = 0;  // B_SV per cycle
    double target_gb = 0;  // B_target per cycle
    double bpt       = 0;  // (sum) / mean accepted length, GB per token
};
BptBreakdown bpt_cats(const CatsConfig& c, double mean_accepted);
// Autoregressive baseline: all L_total layers per token (12.9525 GB/token for fp16 LLaMA-7B).
double bpt_autoregressive(const CatsConfig& c);

// Tree drafting: the draft runs once per tree level (depth passes, all nodes of a level batched), the verifier
// once per cycle: (depth·B_draft + B_verify) / E[accepted length].
double bpt_tree(int tree_depth, double b_draft_gb, double b_verify_gb, double expected_length);

// Vertical cascade: level j is read once per call; calls per target run follow the DraftLevel steps (the bottom
// level is called k times per step of its reviewer). level_gb[j] are the bytes of levels[j].
double bpt_cascade(const std::vector<DraftLevel>& levels, const std::vector<double>& level_gb, double target_gb);

}  // namespace speculum::analytic
