// Draft heads that run on the target's own states (draft kinds "mtp" and "eagle3"): what a target's
// multi-token-prediction layer (mtp_drafter.h) and an EAGLE-3 head (eagle3_drafter.h) share.
//
// Both run one decoder layer (a one-layer model, `block`) with its own KV cache. Row q of that cache (slot q - 1)
// stands for position q: it reads the committed token x_q and a state s(q - 1) made from the target's residual
// stream at position q - 1 (the target's cache keeps those streams: KvCache::keep_hidden, the layers
// target_hidden_layers() names), and its logits draft the token after x_q. Drafting one token further feeds the
// drafted token with the state the layer itself produced (next_state), as llama.cpp's draft-mtp and draft-eagle3
// and vLLM's proposers do. What differs between the heads is how a state is made from the target's streams, how
// (token, state) becomes the layer's input and which state the next step reads: the virtual hooks below.
//
// Chains (greedy and sampled), trees of any shape (each node's pass on its parent's state), and EAGLE-2's dynamic
// trees (TreeShape::dynamic_nodes: expand_dynamic_tree).
#pragma once

#include "core/drafts/drafter.h"
#include "core/drafts/forward_cost.h"
#include "core/model/forward.h"
#include "core/model/model.h"

#include <span>
#include <string>
#include <vector>

namespace speculum::drafts {

// What the drafters on the target's states share (state drafters here, block drafts in dflash_drafter.h):
// whether an attached target cache keeps the streams of `layers` (n_embd floats each) for the tokens `tokens`,
// and how many leading committed tokens (at most n) its kept rows stand for.
bool keeps_streams(const model::KvCache* kv, const std::vector<int32_t>* tokens, const std::vector<int32_t>& layers,
                   int64_t n_embd);
int32_t target_rows_matching(const model::KvCache& kv, const std::vector<int32_t>& tokens,
                             std::span<const int32_t> committed, int32_t n);

class StateDrafter : public Drafter {
public:
    std::string name() const override { return m_name; }
    int32_t n_vocab() const override { return m_target.hparams().n_vocab; }
    void sync(std::span<const int32_t> committed) override;
    DraftChain propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) override;
    // The layer's rows for every prompt position the target's states reach (Drafter::prefill); the first propose
    // evaluates the last one again, as every propose does.
    DraftCost prefill(std::span<const int32_t> committed, const CancelToken& cancel) override;
    DraftTree propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) override;
    void attach_target_kv(const model::KvCache* kv, const std::vector<int32_t>* tokens) override;
    std::vector<int32_t> target_hidden_layers() const override { return m_layers; }

    // The target-vocabulary logits the layer gives for the token after `token` at position `pos` from the target's
    // kept row `row` at position pos - 1 (target_hidden_layers() streams, n_embd floats each, as KvCache::hidden
    // keeps them), on a fresh context: the head's arithmetic alone (tests).
    std::vector<float> logits_for(const float* row, int32_t token, int32_t pos);
    const model::Model& block() const { return m_block; }

protected:
    // `block`: the layer as a one-layer model; `layers`: the target streams it reads; `state_width`: floats per
    // state.
    StateDrafter(const model::Model& target, model::Model block, std::vector<int32_t> layers, int64_t state_width,
                 model::ContextConfig ctx, std::string name);

    // States for n consecutive target positions from their kept rows (n rows of the target cache's width).
    virtual void target_states(const float* rows, int32_t n, float* out, DraftCost& cost) = 0;
    // The layer's pass inputs for (token, state) rows: sets opts.hidden_in (and opts.attn_in) to buffers the head
    // owns, valid until the next call, and adds what making them read and computed.
    virtual void inputs(const std::vector<int32_t>& tokens, const std::vector<const float*>& states,
                        model::ForwardOptions& opts, DraftCost& cost) = 0;
    // The state a drafted token after this row reads, from the row's output stream (hidden_out, block n_embd).
    virtual void next_state(const float* out_row, float* state) const = 0;
    // The target-vocabulary logits of one row of the layer's logits (a head with a reduced vocabulary maps them).
    virtual void target_logits(std::span<const float> row, std::vector<float>& out) const {
        out.assign(row.begin(), row.end());
    }

    bool reference_path() const { return m_ctx.config().path == model::ForwardPath::reference; }

    const model::Model& m_target;
    model::Model m_block;

private:
    // One pass of the layer over (token, state) rows at `pos` under `mask`; fills m_hidden and `logits` (one
    // target-vocabulary row per input row) and adds its cost.
    void run_rows(const std::vector<int32_t>& tokens, const std::vector<const float*>& states,
                  const std::vector<int32_t>& pos, const std::vector<uint8_t>& mask, uint64_t attend_pairs,
                  std::vector<std::vector<float>>& logits, DraftCost& cost);
    bool catch_up(DraftCost& cost);  // the layer's KV for every committed position the target's states reach

    std::vector<int32_t> m_layers;
    int64_t m_state_width;
    model::InferenceContext m_ctx;  // slot s holds position s + 1 (position 0 has no preceding state)
    ForwardCostModel m_cost;
    std::string m_name;
    const model::KvCache* m_tkv           = nullptr;
    const std::vector<int32_t>* m_ttokens = nullptr;
    std::vector<int32_t> m_committed;
    int32_t m_done = 0;                // slots [0, m_done) hold committed positions 1..m_done
    std::vector<float> m_last_state;   // the state the first drafted token's successor reads
    std::vector<float> m_last_logits;  // target-vocabulary logits of the last committed row: the first draft token
    std::vector<float> m_states, m_hidden;
};

}  // namespace speculum::drafts
