// CATS (paper 001) as the paper runs it, without its trained adapters (the paper trains small adapters on the draft
// and the shallow verifier; here both read the target's own head), on the target itself in three stages over one
// token's residual stream:
//   draft            layers [0, L_DM) and the head: drafts a chain autoregressively;
//   shallow verifier layers [L_DM, L_SV) and the head: continues from the draft's hidden states (no recomputation
//                    from layer 0) in one batched pass over the chain, and wherever its argmax disagrees with the
//                    draft token it adds that argmax as a leaf beside it (the correction tree);
//   target           layers [L_SV, n_layer) and the head: continues from the verifier's hidden states over the
//                    whole tree under a tree mask, and verifies it greedily (or, lossy, with typical acceptance).
// Each stage keeps its own KV cache holding only its layers' slots, so every layer's K/V of a token is computed
// once, by the stage that owns the layer. A correction leaf's first L_SV layers run in the draft and verifier
// stages for that leaf alone (two one-token passes). L_SV is the deepest verifier whose resident set fits a DRAM
// budget (cats_layers). Greedy three-stage decoding equals the target's own greedy decoding (lossless).
#pragma once

#include "core/cancel.h"
#include "core/drafts/drafter.h"
#include "core/engine/run_stats.h"
#include "core/engine/spec_config.h"
#include "core/engine/verify.h"
#include "core/model/forward.h"

#include <cstdint>
#include <vector>

namespace speculum::engine {

struct CatsLayers {
    int32_t draft   = 0;  // L_DM
    int32_t sv      = 0;  // L_SV
    int32_t n_layer = 0;
    // Bytes of the decoder layers each stage reads per pass (CATS's B_draft, B_SV, B_target: layer weights and
    // norms only, no embeddings or head, as the paper's Eq. 3/4 count them).
    uint64_t b_draft = 0, b_sv = 0, b_target = 0;
    uint64_t resident_bytes = 0;      // layers [0, L_SV), embeddings, head and their KV at the context (what must fit)
    bool from_budget        = false;  // L_SV was chosen by dram_budget_gb
};

// Bytes of decoder layers [a, b) of `m` (matrices, norms and biases) one token's pass reads: of a mixture of experts,
// the experts a token uses; with `resident`, every expert (what must be in memory).
uint64_t layer_bytes(const model::Model& m, int32_t a, int32_t b, bool resident = false);
// Resident set of a verifier reaching sv layers: embeddings, output head and norm, layers [0, sv) and their f32 KV
// for n_ctx tokens.
uint64_t cats_resident_bytes(const model::Model& m, int32_t sv, int64_t n_ctx);
// Resolves L_DM and L_SV (see CatsConfig). Throws std::invalid_argument naming the field when the target has too
// few layers or no verifier depth fits the budget.
CatsLayers cats_layers(const CatsConfig& c, const model::Model& target, int64_t n_ctx);

// The three stages' contexts for one run. Invariant between steps: every stage caches the committed tokens but
// the last.
class CatsStages {
public:
    CatsStages(const model::Model& target, const model::ContextConfig& ctx, const CatsConfig& cfg);

    const CatsLayers& layers() const { return m_layers; }
    void prefill(const std::vector<int32_t>& committed, const CancelToken& cancel);

    struct Outcome {
        drafts::DraftTree tree;  // the chain (rank 0) and the verifier's corrections (rank 1), nodes in that order
        TreeVerdict verdict;     // the target's walk over it
        int32_t n_chain       = 0;
        int32_t n_sv_agreed   = 0;  // chain positions where the verifier's argmax equalled the draft token
        int32_t n_corrections = 0;
    };
    // One step after `committed` with a chain of `gamma` tokens (0: the target's next token only).
    Outcome step(const std::vector<int32_t>& committed, int32_t gamma, const CancelToken& cancel);

    // Per stage, accumulated over the run: calls, passes, own time, bytes read.
    LevelStats draft_stats, sv_stats, target_stats;

private:
    model::ForwardOptions options(int stage) const;  // 0 draft, 1 verifier, 2 target
    void account(LevelStats& s, const model::InferenceContext& ctx, double seconds);

    const model::Model& m_target;
    CatsConfig m_cfg;
    CatsLayers m_layers;
    model::InferenceContext m_draft, m_sv, m_tgt;
};

// The relaxed, lossy acceptance: walk the tree from the root taking, at each node, the first child (by rank)
// whose token is the target's argmax or has probability > min(epsilon, delta * exp(-entropy)) under it.
TreeVerdict verify_tree_typical(const drafts::DraftTree& tree, const model::LogitsView& logits, float epsilon,
                                float delta);

}  // namespace speculum::engine
