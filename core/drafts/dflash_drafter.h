// A block draft as the drafter (draft kinds "dflash" and "dspark"; the file and its layout: dflash.h). Its cache
// holds one row per committed position but the last, each made from the target's states at that position
// (injected: no pass of the draft's layers runs over the context); one pass over the block [last committed token,
// mask, ...] drafts the whole chain. DFlash reads rows 1..k (k <= block_size - 1), DSpark rows 0..k-1 (k <=
// block_size) and stops at the first row whose confidence is below p_min (llama.cpp's draft-dspark reads the draft
// p_min so). Trees take each depth's children from that depth's row: its top-ranked tokens under every parent
// (the rows do not depend on the tokens above them, except through DSpark's Markov bias on the parent's token).
#pragma once

#include "core/drafts/dflash.h"
#include "core/drafts/drafter.h"
#include "core/drafts/forward_cost.h"
#include "core/drafts/state_drafter.h"
#include "core/model/forward.h"

#include <span>
#include <string>
#include <vector>

namespace speculum::drafts {

class DflashDrafter final : public Drafter {
public:
    // `dspark`: the DSpark block layout (row 0 drafts) and its confidence stop; its heads must be in the file.
    // Throws std::invalid_argument naming the file's fields when it does not fit the target or the layout.
    DflashDrafter(const model::Model& target, DflashModel draft, bool dspark, model::ContextConfig ctx,
                  std::string name);

    std::string name() const override { return m_name; }
    int32_t n_vocab() const override { return m_target.hparams().n_vocab; }
    void sync(std::span<const int32_t> committed) override;
    DraftCost prefill(std::span<const int32_t> committed, const CancelToken& cancel) override;
    DraftChain propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) override;
    DraftTree propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) override;
    void attach_target_kv(const model::KvCache* kv, const std::vector<int32_t>* tokens) override;
    std::vector<int32_t> target_hidden_layers() const override { return m_draft.target_layers; }

    // The most tokens one block drafts: block_size - 1 (DFlash) or block_size (DSpark).
    int32_t max_draft() const { return m_dspark ? m_draft.block_size : m_draft.block_size - 1; }
    bool dspark() const { return m_dspark; }
    const DflashModel& draft() const { return m_draft; }

    // The block pass alone, on a fresh cache (tests, the parity oracle): the context rows are the target's kept rows
    // (target_hidden_layers() streams, target n_embd floats each) of positions 0..n-1, the block [anchor, mask ...]
    // of `rows` tokens sits at positions n.. . Returns the target-vocabulary logits of every block row, before
    // DSpark's Markov bias; with `confidence` (a file with DSpark's heads), after it, chained from the anchor on each
    // row's argmax as llama.cpp's graph does, and `confidence` gets every row's confidence.
    std::vector<std::vector<float>> block_logits(const float* context_rows, int32_t n, int32_t anchor, int32_t rows,
                                                 std::vector<float>* confidence = nullptr);

private:
    bool reference_path() const { return m_ctx.config().path == model::ForwardPath::reference; }
    // Injects positions [m_done, n) (n = the last committed token's position) from the target's kept rows; false
    // when the target's states do not reach them.
    bool catch_up(DraftCost& cost);
    void inject(const float* rows, int32_t first, int32_t n, DraftCost& cost);
    // One pass over [anchor, mask x (rows - 1)] at positions n..: fills m_logits (draft vocabulary, one row per block
    // row) and m_normed (output_norm of each row's stream), then drops the block's cache rows.
    void run_block(int32_t anchor, int32_t rows, DraftCost& cost);
    // Row r's target-vocabulary logits with DSpark's Markov bias for the previous token `prev`; the confidence of
    // the row under that token (1 without the heads).
    float row_logits(int32_t r, int32_t prev, std::vector<float>& out, DraftCost& cost);
    // The previous token of the first drafted row: the anchor, except for a file with DSpark's heads drafting in
    // DFlash's layout, where llama.cpp chains the bias from row 0 (the anchor's own row): its argmax.
    int32_t first_prev(int32_t anchor, DraftCost& cost);

    const model::Model& m_target;
    DflashModel m_draft;
    bool m_dspark;
    model::InferenceContext m_ctx;  // slot p holds committed position p (the block's rows are dropped after a pass)
    ForwardCostModel m_cost;
    std::string m_name;
    const model::KvCache* m_tkv           = nullptr;
    const std::vector<int32_t>* m_ttokens = nullptr;
    std::vector<int32_t> m_committed;
    int32_t m_done = 0;             // slots [0, m_done) hold the injected committed positions
    std::vector<float> m_inv_freq;  // (n_rot / 2) RoPE frequencies of the draft's layers
    std::vector<float> m_g, m_emb, m_hidden, m_normed, m_logits, m_w1row, m_bias;
};

}  // namespace speculum::drafts
