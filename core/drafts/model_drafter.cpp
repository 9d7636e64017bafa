// ModelDrafter (see model_drafter.h): prefix sync, chain drafting by decode, tree drafting by masked batches (the
// expansions are draft_tree.cpp's, shared with the state drafters).
#include "core/drafts/model_drafter.h"
#include "core/clock.h"

#include "core/drafts/draft_token.h"
#include "core/model/sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace speculum::drafts {

namespace {

using Clock = measure_clock;

}  // namespace

// ---- construction ----

ModelDrafter::ModelDrafter(model::Model model, ModelDrafterConfig cfg)
    : ModelDrafter(model, std::move(cfg), ForwardCostModel::of(model)) {}

ModelDrafter::ModelDrafter(model::Model model, ModelDrafterConfig cfg, ForwardCostModel cost)
    : m_ctx(model, cfg.context),
      m_cfg(std::move(cfg)),
      m_cost(std::move(cost)),
      m_name(m_cfg.name.empty() ? model.name() : m_cfg.name) {
    const model::Hparams& hp = m_ctx.model().hparams();
    if (m_cost.attn_bytes.size() != size_t(hp.n_layer) || m_cost.ffn_bytes.size() != size_t(hp.n_layer))
        throw std::invalid_argument("ModelDrafter: cost model has " + std::to_string(m_cost.attn_bytes.size()) +
                                    " layers, the model " + std::to_string(hp.n_layer));
    // A bad skip set or exit layer is reported now rather than at the first pass.
    const model::ForwardOptions& o = m_cfg.forward;
    if ((!o.skip_attn.empty() && o.skip_attn.size() != size_t(hp.n_layer)) ||
        (!o.skip_ffn.empty() && o.skip_ffn.size() != size_t(hp.n_layer)) || o.exit_layer < -1 ||
        o.exit_layer >= hp.n_layer)
        throw std::invalid_argument("ModelDrafter: forward options do not fit a model of " +
                                    std::to_string(hp.n_layer) + " layers");
    if (!m_cfg.head_tokens.empty()) {  // FR-Spec: the head's rows for these tokens only
        std::vector<uint8_t> seen(size_t(hp.n_vocab), 0);
        for (int32_t t : m_cfg.head_tokens)
            if (t < 0 || t >= hp.n_vocab || seen[size_t(t)]++)
                throw std::invalid_argument("ModelDrafter: head token " + std::to_string(t) +
                                            " outside the vocabulary or given twice");
        m_head             = model::gather_rows(m_ctx.model().weights().output, m_cfg.head_tokens);
        m_cfg.forward.head = &m_head;
        m_cost.head_bytes  = m_head.n_bytes() + m_ctx.model().weights().output_norm.size() * sizeof(float);
    }
}

void ModelDrafter::full_row(const model::LogitsView& v, int32_t r, std::vector<float>& out) const {
    const std::span<const float> row = v.row(r);
    if (m_cfg.head_tokens.empty()) {
        out.assign(row.begin(), row.end());
        return;
    }
    out.assign(size_t(n_vocab()), -INFINITY);  // tokens outside the reduced head cannot be drafted
    for (size_t j = 0; j < row.size(); ++j) out[size_t(m_cfg.head_tokens[j])] = row[j];
}

// ---- prefix sync ----

void ModelDrafter::sync(std::span<const int32_t> committed) {
    for (int32_t t : committed)
        if (t < 0 || t >= n_vocab())
            throw std::out_of_range("ModelDrafter::sync: token id " + std::to_string(t) + " outside [0, " +
                                    std::to_string(n_vocab()) + ")");
    size_t lcp = 0;
    while (lcp < m_cached.size() && lcp < committed.size() && m_cached[lcp] == committed[lcp]) ++lcp;
    if (lcp == committed.size() && lcp > 0) --lcp;  // the last token is re-evaluated for its logits
    // Reading the target's cache: slots this draft computed itself are replaced by the target's once it has them.
    if (m_target_kv && target_prefix(committed) > m_from_target) lcp = std::min(lcp, m_from_target);
    m_from_target = std::min(m_from_target, lcp);
    lcp           = size_t(m_ctx.kv().restorable(static_cast<int32_t>(lcp)));  // a hybrid's horizon (else lcp)
    m_ctx.kv().truncate(static_cast<int32_t>(lcp));
    m_ctx.kv().commit();  // drafts roll back to here at most
    m_cached.resize(lcp);
    m_committed.assign(committed.begin(), committed.end());
}

model::LogitsView ModelDrafter::pass(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions,
                                     const std::vector<uint8_t>& mask, DraftCost& cost) {
    const int32_t n        = static_cast<int32_t>(tokens.size());
    const int32_t n_cached = m_ctx.kv().size();
    uint64_t pairs         = static_cast<uint64_t>(n) * uint64_t(n_cached);
    if (mask.empty())
        pairs += uint64_t(n) * uint64_t(n + 1) / 2;
    else
        pairs += static_cast<uint64_t>(std::count_if(mask.begin(), mask.end(), [](uint8_t m) { return m != 0; }));
    model::LogitsView v = m_ctx.forward_batch(tokens, positions, mask, m_cfg.forward);
    cost += pass_cost(m_cost, m_ctx.model().hparams(), m_cfg.forward, n, n_cached, pairs, n);
    return v;
}

void ModelDrafter::attach_target_kv(const model::KvCache* kv, const std::vector<int32_t>* tokens) {
    const model::Hparams& hp = m_ctx.model().hparams();
    // A hybrid draft evaluates the prompt itself: its recurrent state cannot be copied out of the target's K/V rows.
    const bool fits = kv && tokens && !hp.hybrid() && kv->n_layer() == hp.n_layer && kv->n_embd_kv() == hp.n_embd_kv();
    m_target_kv     = m_cfg.read_target_kv && fits ? kv : nullptr;
    m_target_tokens = m_target_kv ? tokens : nullptr;
}

size_t ModelDrafter::target_prefix(std::span<const int32_t> committed) const {
    if (!m_target_kv || committed.empty()) return 0;
    const std::vector<int32_t>& t = *m_target_tokens;
    const size_t lim = std::min({t.size(), committed.size() - 1, static_cast<size_t>(m_target_kv->size())});
    size_t n         = 0;
    while (n < lim && t[n] == committed[n]) ++n;
    return n;
}

void ModelDrafter::copy_from_target(DraftCost& cost) {
    const size_t end = target_prefix(m_committed);
    if (end <= m_cached.size()) return;
    const int32_t start = static_cast<int32_t>(m_cached.size()), n = static_cast<int32_t>(end) - start;
    model::KvCache& kv = m_ctx.kv();
    kv.reserve_slots(n);
    const int32_t ekv = kv.n_embd_kv();
    for (int32_t il = 0; il < kv.n_layer(); ++il) {  // a layer's slots are contiguous rows
        std::copy_n(m_target_kv->k(il, start), size_t(n) * size_t(ekv), kv.k(il, start));
        std::copy_n(m_target_kv->v(il, start), size_t(n) * size_t(ekv), kv.v(il, start));
        if (m_cfg.forward.kv_transform) m_cfg.forward.kv_transform(il, kv.k(il, start), kv.v(il, start), n, ekv);
    }
    kv.grow(n);
    m_cached.insert(m_cached.end(), m_committed.begin() + start,
                    m_committed.begin() + static_cast<std::ptrdiff_t>(end));
    m_from_target = end;
    m_tokens_from_target += n;
    cost.bytes_kv += static_cast<uint64_t>(n) * kv.bytes_per_token();  // the target's rows, read once
}

model::LogitsView ModelDrafter::evaluate_until(size_t end, DraftCost& cost) {
    const int32_t nb = m_ctx.config().n_batch;
    model::LogitsView v{};
    while (m_cached.size() < end) {
        const size_t start = m_cached.size();
        const size_t n     = std::min(end - start, static_cast<size_t>(nb));
        std::vector<int32_t> toks(m_committed.begin() + static_cast<std::ptrdiff_t>(start),
                                  m_committed.begin() + static_cast<std::ptrdiff_t>(start + n));
        std::vector<int32_t> pos(n);
        std::iota(pos.begin(), pos.end(), static_cast<int32_t>(start));
        v = pass(toks, pos, {}, cost);
        m_cached.insert(m_cached.end(), toks.begin(), toks.end());
    }
    return v;
}

void ModelDrafter::catch_up(DraftCost& cost) {
    // A second propose without a sync: drop the previous call's draft tokens first.
    if (m_cached.size() >= m_committed.size()) sync(std::vector<int32_t>(m_committed));
    if (m_target_kv && m_cached.size() == m_from_target) copy_from_target(cost);
    const model::LogitsView v = evaluate_until(m_committed.size(), cost);
    if (v.n > 0) full_row(v, v.n - 1, m_logits);  // sync leaves at least the last committed token to evaluate
}

DraftCost ModelDrafter::prefill(std::span<const int32_t> committed, const CancelToken& cancel) {
    const auto t0 = Clock::now();
    DraftCost cost;
    sync(committed);
    if (m_committed.size() >= 2) {
        m_ctx.set_cancel(cancel);
        cancel.throw_if_cancelled();
        if (m_target_kv) copy_from_target(cost);  // the target has cached all but the last token
        evaluate_until(m_committed.size() - 1, cost);
    }
    cost.seconds = seconds_since(t0);
    return cost;
}

// ---- chain drafting ----

DraftChain ModelDrafter::propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = Clock::now();
    DraftChain out;
    if (k < 0) throw std::invalid_argument("ModelDrafter::propose: k must be >= 0, got " + std::to_string(k));
    if (k == 0 || m_committed.empty()) return out;
    m_ctx.set_cancel(cancel);
    cancel.throw_if_cancelled();
    catch_up(out.cost);

    model::Sampler sampler(model::SamplerConfig{.temperature = params.temperature, .seed = params.seed});
    std::vector<float> dist;  // softmax(logits / T), T = 1 when greedy
    for (int32_t i = 0; i < k; ++i) {
        const int32_t tok = choose_draft_token(m_logits, params, sampler, dist, out);
        if (tok < 0) break;  // below p_min
        if (i + 1 == k) break;
        cancel.throw_if_cancelled();
        const int32_t pos = static_cast<int32_t>(m_cached.size());
        if (pos >= m_ctx.kv().capacity()) break;  // the draft's context is full: propose what we have
        model::LogitsView v = pass({tok}, {pos}, {}, out.cost);
        m_cached.push_back(tok);
        full_row(v, 0, m_logits);
    }
    out.cost.seconds = seconds_since(t0);
    return out;
}

DraftTree ModelDrafter::propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = Clock::now();
    DraftTree tree;
    std::vector<int32_t> parent, rank;
    tree_shape_nodes(shape, parent, rank);
    const int32_t n_nodes = static_cast<int32_t>(parent.size());
    if (n_nodes == 0 || m_committed.empty()) return tree;
    if (n_nodes > m_ctx.config().n_batch)
        throw std::invalid_argument("ModelDrafter::propose_tree: " + std::to_string(n_nodes) +
                                    " nodes exceed the draft context's batch of " +
                                    std::to_string(m_ctx.config().n_batch) + " (ContextConfig.n_batch)");
    m_ctx.set_cancel(cancel);
    cancel.throw_if_cancelled();
    DraftCost cost;
    catch_up(cost);
    // Each evaluation runs after the committed context only; the tree's slots are dropped again afterwards.
    const int32_t n_ctx_tokens = static_cast<int32_t>(m_cached.size());
    auto evaluate              = [&](const std::vector<int32_t>& nodes, const std::vector<int32_t>&,
                        const std::vector<int32_t>& toks, const std::vector<int32_t>& depths,
                        const std::vector<uint8_t>& mask, std::vector<std::vector<float>>& logits) {
        if (static_cast<int32_t>(nodes.size()) > m_ctx.config().n_batch) return false;
        std::vector<int32_t> pos;
        for (int32_t d : depths) pos.push_back(n_ctx_tokens + d - 1);
        if (pos.back() >= m_ctx.kv().capacity() ||
            n_ctx_tokens + static_cast<int32_t>(nodes.size()) > m_ctx.kv().capacity())
            return false;  // no room for this level in the draft's context
        m_ctx.kv().truncate(n_ctx_tokens);
        const model::LogitsView v = pass(toks, pos, mask, cost);
        logits.resize(nodes.size());
        for (size_t r = 0; r < nodes.size(); ++r) full_row(v, int32_t(r), logits[r]);
        return true;
    };
    tree = shape.dynamic_nodes > 0
               ? expand_dynamic_tree(shape.branching, shape.dynamic_nodes, m_logits, params, evaluate, cancel)
               : expand_draft_tree(parent, rank, m_logits, params, evaluate, cancel);
    m_ctx.kv().truncate(n_ctx_tokens);
    tree.cost         = cost;
    tree.cost.seconds = seconds_since(t0);
    return tree;
}

}  // namespace speculum::drafts
