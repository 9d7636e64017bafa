// A model that reviews drafts: the target, or an intermediate level of a vertical cascade. It keeps a KV cache of
// every committed token but the last, scores [last, d_0..d_{k-1}] (or a token tree) in one batched forward pass,
// and keeps the accepted part (truncate for chains, compact for trees). Also counts what each pass reads.
#pragma once

#include "core/cancel.h"
#include "core/drafts/drafter.h"
#include "core/drafts/forward_cost.h"
#include "core/engine/run_stats.h"
#include "core/model/forward.h"

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace speculum::engine {

class Reviewer {
public:
    // `cost` describes what a pass reads (default: the model's real weight views); skipped blocks and layers past
    // an early exit are not counted.
    Reviewer(const model::Model& model, model::ContextConfig cfg, model::ForwardOptions opts = {},
             std::optional<drafts::ForwardCostModel> cost = std::nullopt);

    // Makes the cache hold committed[0, n − 1), keeping the longest common prefix and evaluating the rest in
    // batches (counted in cost()). The last committed token is evaluated by the next score call.
    void sync(std::span<const int32_t> committed, const CancelToken& cancel);

    // One pass over [committed.back(), draft...] at positions n − 1, n, ...: (k + 1) logit rows, row j = the
    // distribution after draft tokens 0..j−1. Valid until the next call.
    model::LogitsView score_chain(std::span<const int32_t> committed, std::span<const int32_t> draft);
    // One pass over [committed.back(), tree nodes...] under a tree mask (a node sees the root, its ancestors and
    // itself); row 0 = root, row i + 1 = node i.
    model::LogitsView score_tree(std::span<const int32_t> committed, const drafts::DraftTree& tree);

    // After score_chain: keep the root and the first n_accepted draft tokens in the cache.
    void keep_chain(int32_t n_accepted);
    // After score_tree: keep the root and the accepted path's nodes (moved into contiguous slots).
    void keep_tree(const std::vector<int32_t>& path);

    const drafts::DraftCost& cost() const { return m_cost; }
    // A mixture-of-experts model: the routing of its score passes (not of sync's prompt batches).
    const ExpertUsage& experts() const { return m_experts; }
    int32_t n_batch() const { return m_ctx.config().n_batch; }
    int32_t n_ctx() const { return m_ctx.kv().capacity(); }
    int32_t n_vocab() const { return m_ctx.model().hparams().n_vocab; }
    const model::Model& model() const { return m_ctx.model(); }
    // The cache and the tokens whose K/V it holds, in slot order (what a self-draft reads between passes).
    const model::KvCache& kv() const { return m_ctx.kv(); }
    // A hybrid target: the recurrent state's counters and the seconds its passes spent keeping rollback data.
    RecurrentReport recurrent() const;
    // Keep the model's residual stream at `layers` beside the K/V (KvCache::keep_hidden; drafts that read the
    // target's states ask for them).
    void keep_hidden(std::vector<int32_t> layers) {
        m_ctx.kv().keep_hidden(std::move(layers), m_ctx.model().hparams().n_embd);
    }
    const std::vector<int32_t>& cached() const { return m_cached; }

private:
    model::LogitsView pass(const std::vector<int32_t>& tokens, const std::vector<int32_t>& pos,
                           const std::vector<uint8_t>& mask, bool scoring);

    model::InferenceContext m_ctx;
    model::ForwardOptions m_opts;
    drafts::ForwardCostModel m_cost_model;
    std::vector<int32_t> m_cached;   // tokens whose KV is in the cache, in slot order
    std::vector<int32_t> m_pending;  // tokens of the last scored batch (root first), for keep_*
    drafts::DraftCost m_cost;
    ExpertUsage m_experts;
    uint64_t m_expert_bytes = 0;  // one expert's three matrices (a MoE model)
};

}  // namespace speculum::engine
