// A Drafter over a model (a self-draft transformed from the target, or a separate small model): its own inference
// context and KV cache, synced to the committed tokens by longest common prefix; chains by repeated decode, trees
// level by level with a tree attention mask. Every call reports the bytes and FLOPs of its passes.
#pragma once

#include "core/drafts/draft_tree.h"
#include "core/drafts/drafter.h"
#include "core/drafts/forward_cost.h"
#include "core/model/forward.h"
#include "core/model/model.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace speculum::drafts {

struct ModelDrafterConfig {
    model::ContextConfig context;   // KV slots, batch size (the largest tree evaluated at once), kernel path
    model::ForwardOptions forward;  // layer skip / early exit / KV hooks, fixed for the drafter's lifetime
    std::string name;               // shown by name(); empty = the model's name
    // Read the target's KV cache for committed tokens (attach_target_kv) instead of evaluating them: their K/V rows
    // are copied from the target's cache (through forward.kv_transform: Cassandra's selected, truncated view), so
    // only tokens the target has not cached yet (the last committed one) take a forward pass. Needs the target's
    // layer count and KV width (a self-draft); ignored otherwise.
    bool read_target_kv = false;
    // FR-Spec (Zhao et al. 2025): the LM head restricted to these token ids (distinct, in [0, n_vocab)), e.g. the
    // target's most frequent tokens; the others cannot be drafted. Empty = the full head.
    std::vector<int32_t> head_tokens = {};
};

class ModelDrafter final : public Drafter {
public:
    // `cost` defaults to the real figures of the model's views (ForwardCostModel::of).
    explicit ModelDrafter(model::Model model, ModelDrafterConfig cfg = {});
    ModelDrafter(model::Model model, ModelDrafterConfig cfg, ForwardCostModel cost);

    std::string name() const override { return m_name; }
    int32_t n_vocab() const override { return m_ctx.model().hparams().n_vocab; }

    // Keeps the longest common prefix of the cached tokens and `committed` (at least the last committed token is
    // re-evaluated so its logits are available) and truncates the rest; new tokens are evaluated by the next call.
    void sync(std::span<const int32_t> committed) override;

    // Greedy (argmax) or sampled (softmax(logits / T), seeded). q / q_dist are the distribution each token was
    // drawn from (one-hot when greedy); `confidence` is softmax(logits / T) of it (T = 1 when greedy) and p_min
    // stops the chain, before adding the token, when it is below p_min (as llama.cpp --draft-p-min).
    DraftChain propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) override;
    // Caches the prompt but its last token: copied from the target's cache when reading it, else evaluated in
    // batches (Drafter::prefill).
    DraftCost prefill(std::span<const int32_t> committed, const CancelToken& cancel) override;

    // Children of each node are its top-ranked tokens under softmax(logits / T) (T = 1 when greedy; ties by id).
    // Depth d's nodes are evaluated in one batched pass over the nodes that still need logits and their ancestors,
    // under a tree mask; q / q_dist / root_q_dist come from that same softmax. The tree must fit one batch
    // (ContextConfig::n_batch), or std::invalid_argument.
    DraftTree propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) override;

    void attach_target_kv(const model::KvCache* kv, const std::vector<int32_t>* tokens) override;
    // Committed tokens whose K/V were copied from the target's cache since construction.
    int64_t tokens_from_target() const { return m_tokens_from_target; }

    const model::Model& model() const { return m_ctx.model(); }
    const model::InferenceContext& context() const { return m_ctx; }
    const ForwardCostModel& cost_model() const { return m_cost; }
    const model::ForwardOptions& forward_options() const { return m_cfg.forward; }

private:
    // Leading committed tokens whose K/V the attached target cache holds (never the last committed token).
    size_t target_prefix(std::span<const int32_t> committed) const;
    // Copies the target's K/V rows of committed tokens past the cached ones (through the KV transform).
    void copy_from_target(DraftCost& cost);
    // Evaluates committed tokens not yet cached; leaves the last one's logits in m_logits. Adds the passes' cost.
    void catch_up(DraftCost& cost);
    // Evaluates committed tokens [m_cached.size(), end) in batches of n_batch; the last batch's logits stay in the
    // context. Adds the passes' cost.
    model::LogitsView evaluate_until(size_t end, DraftCost& cost);
    // One batched pass with cost accounting (tokens at `positions`, mask empty = causal).
    model::LogitsView pass(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                           const std::vector<uint8_t>& mask, DraftCost& cost);
    // Row r of a pass's logits in the full vocabulary (a reduced head's rows mapped back, -inf elsewhere).
    void full_row(const model::LogitsView& v, int32_t r, std::vector<float>& out) const;

    model::InferenceContext m_ctx;
    ModelDrafterConfig m_cfg;
    ForwardCostModel m_cost;
    std::string m_name;
    std::vector<int32_t> m_committed;  // the synced context
    std::vector<int32_t> m_cached;     // token of each KV slot in use (size == kv().size())
    std::vector<float> m_logits;       // (n_vocab) logits of the last committed token after catch_up
    model::WeightView m_head;          // the reduced head's rows (head_tokens), when there is one
    const model::KvCache* m_target_kv           = nullptr;  // attach_target_kv, when read_target_kv
    const std::vector<int32_t>* m_target_tokens = nullptr;
    size_t m_from_target                        = 0;  // leading slots of m_ctx.kv() copied from the target's cache
    int64_t m_tokens_from_target                = 0;
};

}  // namespace speculum::drafts
