// Self-drafts: a DraftSpec's transforms applied to the target's weights (Cassandra pruning and mantissa
// truncation, BF16 / Q8_0 / MXFP4 re-encoding, LayerSkip early exit and skip sets, KV truncation and selection).
// Untouched tensors are shared with the target (their WeightView keeps the target's storage alive), never copied.
#pragma once

#include "core/cancel.h"
#include "core/drafts/draft_spec.h"
#include "core/drafts/forward_cost.h"
#include "core/model/forward.h"
#include "core/model/model.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace speculum::drafts {

// Wanda's ||X_j||_2 per input channel j of every matrix input site, over the calibration tokens.
struct ActivationNorms {
    // sites[il][s]: layer il's site s (model::ActivationSite: attn_in, attn_out, ffn_in, ffn_down), (cols) floats;
    // head: the output matrix's input (n_embd).
    std::vector<std::array<std::vector<float>, 4>> sites;
    std::vector<float> head;
    int64_t n_tokens = 0;  // calibration tokens evaluated
};

// Runs the target over each sequence (a fresh context per sequence, at most `max_tokens` tokens in all) and
// accumulates the per-channel sums of squares; returns their square roots.
ActivationNorms collect_activation_norms(const model::Model& target, const std::vector<std::vector<int32_t>>& sequences,
                                         int32_t max_tokens, const ProgressFn& progress = {},
                                         const CancelToken& cancel = {});

// What happened to one matrix of the target.
struct MatrixRecord {
    std::string name;                                 // GGUF tensor name, e.g. "blk.3.ffn_up.weight"
    kernels::GgmlType type = kernels::GgmlType::F32;  // storage type in the draft
    int64_t elements       = 0;
    int64_t pruned         = 0;      // elements zeroed by pruning
    int32_t trunc_bits     = 0;      // BF16 mantissa bits dropped
    bool shared            = true;   // the target's storage, not copied
    bool compact           = false;  // stored in a compact format (kernels/compact.h): its bytes are what passes read
};

struct SelfDraft {
    model::Model model;             // transformed weights; untouched tensors are views of the target's
    model::ForwardOptions forward;  // skip sets, exit layer, KV transform hook
    ForwardCostModel cost;          // real bytes where a compact kernel reads them, else modeled (cost.modeled)
    std::string storage_note;       // e.g. "f16 target re-encoded as bf16 for truncation", empty when nothing to say
    uint64_t bytes_shared = 0;      // weight bytes shared with the target (not copied)
    uint64_t bytes_owned  = 0;      // weight bytes the draft allocated
    double build_seconds  = 0;      // wall time of build_self_draft
    std::vector<MatrixRecord> matrices;  // token_embd, each layer's 7 matrices, output
};

// Applies spec (kind self; validated against the target's layer count) to the target. Wanda needs `norms`
// (std::invalid_argument otherwise). Reports progress per tensor and checks `cancel` between tensors.
SelfDraft build_self_draft(const model::Model& target, const DraftSpec& spec, const ActivationNorms* norms = nullptr,
                           const ProgressFn& progress = {}, const CancelToken& cancel = {});

// Strict-subset storage (Cassandra's headline): the target with every matrix the draft keeps in a compact BF16 form
// (pruned and/or truncated toward zero) stored as the draft's own compact matrix, shared with `draft` (a self-draft's
// model, SelfDraft::model), plus the rest
// of the target's bits (model::make_split_view). Its passes decode both parts to the target's rows and give the
// target's logits bit for bit; the draft then costs no weight memory beyond the target. Other matrices stay views
// of the target's. Throws std::invalid_argument naming the matrix when the draft has no compact BF16 matrix derived
// from a BF16 target (an F16 or quantized target, or rounding to nearest). Progress per matrix; cancel between.
struct SplitTarget {
    model::Model model;
    uint64_t bytes_split = 0;  // weight bytes of the split matrices (the draft's parts and the rests)
    uint64_t bytes_dense = 0;  // the same matrices stored dense in the target
    uint64_t bytes_draft = 0;  // the draft's compact matrices among them (stored once, in both models)
    int32_t n_split      = 0;  // matrices stored split
};
SplitTarget split_target(const model::Model& target, const model::Model& draft, const ProgressFn& progress = {},
                         const CancelToken& cancel = {});

}  // namespace speculum::drafts
