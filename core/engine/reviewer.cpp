// Reviewer: KV bookkeeping around batched verification passes.
#include "core/engine/reviewer.h"
#include "core/clock.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace speculum::engine {

Reviewer::Reviewer(const model::Model& model, model::ContextConfig cfg, model::ForwardOptions opts,
                   std::optional<drafts::ForwardCostModel> cost)
    : m_ctx(model, cfg),
      m_opts(std::move(opts)),
      m_cost_model(cost ? std::move(*cost) : drafts::ForwardCostModel::of(model)) {
    const model::Hparams& hp = model.hparams();
    if (hp.moe()) {
        const model::LayerWeights& L = model.weights().layers.at(0);
        m_expert_bytes               = L.expert_bytes(hp.n_expert);
        m_experts.n_expert = hp.n_expert, m_experts.n_expert_used = hp.n_expert_used, m_experts.n_layer = hp.n_layer;
        m_experts.hist.assign(size_t(hp.n_layer) * size_t(hp.n_expert), 0);
    }
}

model::LogitsView Reviewer::pass(const std::vector<int32_t>& tokens, const std::vector<int32_t>& pos,
                                 const std::vector<uint8_t>& mask, bool scoring) {
    // What the pass reads (drafts::pass_cost): the weights of every block it runs once (the batch shares them),
    // the K/V rows each new token attends, and the output head for every row of logits.
    const int32_t n        = static_cast<int32_t>(tokens.size());
    const int32_t n_cached = m_ctx.kv().size();
    uint64_t pairs         = 0;
    for (int32_t i = 0; i < n; ++i) {
        uint64_t seen = 0;
        for (int32_t j = 0; j < n; ++j) seen += mask.empty() ? (j <= i) : mask[size_t(i) * size_t(n) + size_t(j)] != 0;
        pairs += static_cast<uint64_t>(n_cached) + seen;
    }
    const auto t0            = measure_clock::now();
    model::LogitsView v      = m_ctx.forward_batch(tokens, pos, mask, m_opts);
    drafts::DraftCost c      = drafts::pass_cost(m_cost_model, m_ctx.model().hparams(), m_opts, n, n_cached, pairs, n);
    c.seconds                = seconds_since(t0);
    c.n_forward              = 1;
    const model::Hparams& hp = m_ctx.model().hparams();
    if (hp.moe()) {
        // What a mixture of experts read is the union of the experts the pass routed to: the modeled per-token
        // experts are replaced by the distinct ones the forward ran (counted, not modeled).
        uint64_t layers_run = 0;
        for (int32_t il = 0; il < hp.n_layer; ++il) layers_run += m_ctx.last_experts(il).empty() ? 0 : 1;
        c.bytes_weights += (m_ctx.last_cost().experts_read - layers_run * uint64_t(hp.n_expert_used)) * m_expert_bytes;
        if (scoring) {
            const size_t w = size_t(n);
            if (m_experts.width_passes.size() <= w)
                m_experts.width_passes.resize(w + 1), m_experts.width_distinct.resize(w + 1);
            ++m_experts.width_passes[w];
            m_experts.width_distinct[w] += int64_t(m_ctx.last_cost().experts_read);
            for (int32_t il = 0; il < hp.n_layer; ++il)
                for (const int32_t e : m_ctx.last_experts(il))
                    ++m_experts.hist[size_t(il) * size_t(hp.n_expert) + size_t(e)];
        }
    }
    m_cost += c;
    return v;
}

void Reviewer::sync(std::span<const int32_t> committed, const CancelToken& cancel) {
    if (committed.empty()) throw std::invalid_argument("Reviewer::sync: empty context");
    const size_t want = committed.size() - 1;
    if (committed.size() + 1 > static_cast<size_t>(m_ctx.kv().capacity()))
        throw model::KvCacheFull("context of " + std::to_string(committed.size()) +
                                 " tokens does not fit the context length " + std::to_string(m_ctx.kv().capacity()));
    size_t lcp = 0;
    while (lcp < m_cached.size() && lcp < want && m_cached[lcp] == committed[lcp]) ++lcp;
    // A hybrid's recurrent state rolls back only within its horizon; before it, the cache starts again.
    lcp = size_t(m_ctx.kv().restorable(static_cast<int32_t>(lcp)));
    m_ctx.kv().truncate(static_cast<int32_t>(lcp));
    m_cached.resize(lcp);
    m_ctx.set_cancel(cancel);
    const size_t nb = static_cast<size_t>(m_ctx.config().n_batch);
    // Committed tokens: a recurrent state keeps nothing to roll them back.
    m_ctx.kv().recurrent().pause_keeping(true);
    struct Resume {
        model::KvCache& kv;
        ~Resume() { kv.recurrent().pause_keeping(false); }
    } resume{m_ctx.kv()};
    while (m_cached.size() < want) {
        cancel.throw_if_cancelled();
        const size_t start = m_cached.size(), n = std::min(nb, want - start);
        std::vector<int32_t> toks(committed.begin() + static_cast<ptrdiff_t>(start),
                                  committed.begin() + static_cast<ptrdiff_t>(start + n));
        std::vector<int32_t> pos(n);
        for (size_t i = 0; i < n; ++i) pos[i] = static_cast<int32_t>(start + i);
        pass(toks, pos, {}, false);
        m_cached.insert(m_cached.end(), toks.begin(), toks.end());
    }
    m_ctx.kv().commit();  // the committed context never rolls back: a recurrent state checkpoints here
}

model::LogitsView Reviewer::score_chain(std::span<const int32_t> committed, std::span<const int32_t> draft) {
    if (m_cached.size() + 1 != committed.size())
        throw std::logic_error("Reviewer::score_chain: sync() the committed context first");
    const size_t n = draft.size() + 1;
    if (n > static_cast<size_t>(n_batch()))
        throw std::invalid_argument("Reviewer: " + std::to_string(n) + " tokens to verify exceed n_batch " +
                                    std::to_string(n_batch()));
    m_pending.assign(1, committed.back());
    m_pending.insert(m_pending.end(), draft.begin(), draft.end());
    std::vector<int32_t> pos(n);
    for (size_t i = 0; i < n; ++i) pos[i] = static_cast<int32_t>(m_cached.size() + i);
    return pass(m_pending, pos, {}, true);
}

model::LogitsView Reviewer::score_tree(std::span<const int32_t> committed, const drafts::DraftTree& tree) {
    if (m_cached.size() + 1 != committed.size())
        throw std::logic_error("Reviewer::score_tree: sync() the committed context first");
    const size_t n = static_cast<size_t>(tree.size()) + 1;
    if (n > static_cast<size_t>(n_batch()))
        throw std::invalid_argument("Reviewer: a tree of " + std::to_string(n - 1) + " nodes exceeds n_batch " +
                                    std::to_string(n_batch()) + " - 1");
    if (tree.parent.size() != n - 1 || tree.depth.size() != n - 1)
        throw std::invalid_argument("Reviewer: malformed DraftTree (parent/depth sizes)");
    m_pending.assign(1, committed.back());
    m_pending.insert(m_pending.end(), tree.tokens.begin(), tree.tokens.end());
    // Positions follow depth; row i + 1 sees the root, its ancestors and itself (parents come first).
    std::vector<int32_t> pos(n);
    std::vector<uint8_t> mask(n * n, 0);
    const int32_t base = static_cast<int32_t>(m_cached.size());
    pos[0]             = base;
    mask[0]            = 1;
    for (size_t i = 1; i < n; ++i) {
        const int32_t par = tree.parent[i - 1];
        if (par < -1 || par >= static_cast<int32_t>(i - 1))
            throw std::invalid_argument("Reviewer: DraftTree node " + std::to_string(i - 1) + " has a bad parent");
        pos[i] = base + tree.depth[i - 1];
        // Inherit the parent's row (root = row 0), then see itself.
        const size_t prow = static_cast<size_t>(par + 1);
        std::copy_n(mask.begin() + static_cast<ptrdiff_t>(prow * n), n, mask.begin() + static_cast<ptrdiff_t>(i * n));
        mask[i * n + i] = 1;
    }
    return pass(m_pending, pos, mask, true);
}

RecurrentReport Reviewer::recurrent() const {
    RecurrentReport r;
    const model::RecurrentState& rs = m_ctx.kv().recurrent();
    if (rs.empty()) return r;
    const model::RecurrentStats& s = rs.stats();
    r.strategy                     = model::to_string(rs.strategy());
    r.passes                       = int64_t(s.passes);
    r.rollbacks                    = int64_t(s.rollbacks);
    r.tokens_kept                  = int64_t(s.tokens_kept);
    r.tokens_rerun                 = int64_t(s.tokens_rerun);
    r.keep_s                       = s.keep_seconds;
    r.restore_s                    = s.restore_seconds;
    r.peak_bytes                   = s.peak_bytes;
    r.state_bytes                  = rs.live_bytes();
    return r;
}

void Reviewer::keep_chain(int32_t n_accepted) {
    if (n_accepted < 0 || static_cast<size_t>(n_accepted) + 1 > m_pending.size())
        throw std::logic_error("Reviewer::keep_chain: more tokens kept than scored");
    m_cached.insert(m_cached.end(), m_pending.begin(), m_pending.begin() + n_accepted + 1);
    m_ctx.kv().truncate(static_cast<int32_t>(m_cached.size()));
    m_pending.clear();
}

void Reviewer::keep_tree(const std::vector<int32_t>& path) {
    const int32_t n_prefix = static_cast<int32_t>(m_cached.size()) + 1;  // ... plus the root's slot
    std::vector<int32_t> keep;
    keep.reserve(path.size());
    m_cached.push_back(m_pending.at(0));
    for (int32_t node : path) {
        keep.push_back(n_prefix + node);
        m_cached.push_back(m_pending.at(static_cast<size_t>(node) + 1));
    }
    m_ctx.kv().compact(n_prefix, keep);
    m_pending.clear();
}

}  // namespace speculum::engine
