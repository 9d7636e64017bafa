// NgramDrafter (see ngram_drafter.h).
#include "core/drafts/ngram_drafter.h"
#include "core/clock.h"

#include "core/drafts/maxgram_drafter.h"
#include "core/drafts/model_drafter.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace speculum::drafts {

NgramDrafter::NgramDrafter(int32_t n_vocab, NgramSpec spec, NgramCounts static_counts, NgramCounts dynamic_counts)
    : m_n_vocab(n_vocab),
      m_spec(std::move(spec)),
      m_static(std::move(static_counts)),
      m_dynamic_loaded(std::move(dynamic_counts)) {
    if (n_vocab <= 0) throw std::invalid_argument("NgramDrafter: vocabulary size must be positive");
    m_spec.validate();
    reset_learned();
}

void NgramDrafter::reset_learned() {
    m_ctx.clear();
    m_started = false, m_seq_start = 0;
    m_last_draft.clear();
    m_map.reset(), m_mod.reset(), m_local.reset(), m_global.reset();
    m_context.clear();
    m_dynamic = m_dynamic_loaded;
    m_global_seqs.clear();
    if (m_spec.method == NgramMethod::mod)
        m_mod.emplace(m_spec.mod_n_match, m_spec.mod_n_min, m_spec.mod_n_max, m_spec.mod_pool_log2);
    if (m_spec.method == NgramMethod::suffix) {
        m_local.emplace(m_spec.suffix_max_depth);
        if (m_spec.suffix_max_cached > 0) m_global.emplace(m_spec.suffix_max_depth);
    }
}

void NgramDrafter::begin_sequence() {
    ++m_n_sequences;
    m_seq_start = m_ctx.size();
    m_started   = true;
    m_last_draft.clear();
    switch (m_spec.method) {
        case NgramMethod::map_k:
        case NgramMethod::map_k4v:
            m_map.emplace(m_spec.size_n, m_spec.size_m, m_spec.method == NgramMethod::map_k, m_spec.min_hits);
            break;
        case NgramMethod::mod:
            m_mod->begin(std::span<const int32_t>(m_ctx).first(m_ctx.empty() ? 0 : m_ctx.size() - 1));
            break;
        case NgramMethod::cache:
            m_context.clear();
            ngram_counts_update(m_context, m_ctx, 0);
            break;
        case NgramMethod::suffix:
            m_local->clear();
            m_local->append(0, m_ctx);
            break;
        case NgramMethod::simple:
        case NgramMethod::prompt_lookup:
            break;
    }
}

void NgramDrafter::end_sequence() {
    if (!m_started) return;
    if (m_spec.method == NgramMethod::cache && m_spec.cache_update) ngram_counts_merge(m_dynamic, m_context);
    if (m_global && m_ctx.size() > m_seq_start) {  // the response (what followed the prompt) joins the global tree
        const int32_t id = m_next_seq++;
        m_global->append(id, std::span<const int32_t>(m_ctx).subspan(m_seq_start));
        m_global_seqs.push_back(id);
        while (m_global_seqs.size() > size_t(m_spec.suffix_max_cached)) {
            m_global->remove(m_global_seqs.front());
            m_global_seqs.pop_front();
        }
    }
}

void NgramDrafter::rollback(size_t len) {
    switch (m_spec.method) {
        case NgramMethod::map_k:
        case NgramMethod::map_k4v:
            m_map->truncate(len);
            break;
        case NgramMethod::mod:
            m_mod->truncate(len);
            break;
        case NgramMethod::cache: {
            ngram_counts_update(m_context, m_ctx, len, -1);
            break;
        }
        case NgramMethod::suffix:
            m_local->clear();
            m_local->append(0, std::span<const int32_t>(m_ctx).first(len));
            break;
        case NgramMethod::simple:
        case NgramMethod::prompt_lookup:
            break;
    }
    m_ctx.resize(len);
}

void NgramDrafter::extend(size_t from) {
    if (m_spec.method == NgramMethod::cache) ngram_counts_update(m_context, m_ctx, from);
    if (m_spec.method == NgramMethod::suffix) m_local->append(0, std::span<const int32_t>(m_ctx).subspan(from));
}

void NgramDrafter::feed_back(std::span<const int32_t> committed) {
    if (m_last_draft.empty()) return;
    // Committed after the draft: its accepted tokens, then the target's own (a correction or bonus).
    if (committed.size() > m_last_at) {
        int32_t accepted  = 0;
        const size_t room = committed.size() - m_last_at - 1;
        while (size_t(accepted) < std::min(room, m_last_draft.size()) &&
               committed[m_last_at + size_t(accepted)] == m_last_draft[size_t(accepted)])
            ++accepted;
        ++m_n_feedback;
        m_accepted_fed_back += accepted;
        if (m_map) m_map->accept(accepted);
        if (m_mod) m_mod->accept(accepted);
    }
    m_last_draft.clear();
}

void NgramDrafter::sync(std::span<const int32_t> committed) {
    size_t common  = 0;
    const size_t n = std::min(m_ctx.size(), committed.size());
    while (common < n && m_ctx[common] == committed[common]) ++common;
    if (!m_started || common < m_seq_start) {  // a new sequence (the prompt is no longer a prefix)
        end_sequence();
        m_ctx.assign(committed.begin(), committed.end());
        begin_sequence();
        return;
    }
    if (common == m_ctx.size()) {
        if (committed.size() > m_ctx.size()) feed_back(committed);  // the step committed: learn what was accepted
    } else {
        m_last_draft.clear();
        rollback(common);
    }
    const size_t from = m_ctx.size();
    m_ctx.insert(m_ctx.end(), committed.begin() + std::ptrdiff_t(from), committed.end());
    extend(from);
}

std::vector<int32_t> NgramDrafter::draft_tokens(int32_t k, std::vector<float>* prob) {
    std::vector<int32_t> d;
    switch (m_spec.method) {
        case NgramMethod::simple:
            d = ngram_simple_draft(m_ctx, m_spec.size_n, m_spec.size_m);
            break;
        case NgramMethod::map_k:
        case NgramMethod::map_k4v:
            d = m_map->draft(m_ctx);
            break;
        case NgramMethod::mod:
            d = m_mod->draft(m_ctx, k);
            break;
        case NgramMethod::cache:
            d = ngram_cache_draft(m_ctx, k, m_context, m_dynamic, m_static);
            break;
        case NgramMethod::prompt_lookup:
            d = prompt_lookup_draft(m_ctx, m_spec.lookup_min, m_spec.lookup_max, k);
            break;
        case NgramMethod::suffix: {
            SuffixDraft s = suffix_speculate(*m_local, m_global ? &*m_global : nullptr, m_ctx, k,
                                             m_spec.suffix_spec_factor, m_spec.suffix_min_prob, false);
            d             = std::move(s.tokens);
            if (prob) *prob = std::move(s.prob);
            break;
        }
    }
    if (int32_t(d.size()) > k) d.resize(size_t(k));
    // A context token outside the target's vocabulary is never proposed (nor anything after it).
    const auto bad = std::find_if(d.begin(), d.end(), [&](int32_t t) { return t < 0 || t >= m_n_vocab; });
    d.erase(bad, d.end());
    if (prob && prob->size() > d.size()) prob->resize(d.size());
    return d;
}

DraftChain NgramDrafter::propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = measure_clock::now();
    if (k < 0) throw std::invalid_argument("NgramDrafter::propose: k must be >= 0, got " + std::to_string(k));
    cancel.throw_if_cancelled();
    DraftChain out;
    if (k == 0 || m_ctx.empty()) return out;
    std::vector<float> prob;
    out.tokens   = draft_tokens(k, &prob);
    m_last_draft = out.tokens;
    m_last_at    = m_ctx.size();
    for (size_t i = 0; i < out.tokens.size(); ++i) {
        out.q.push_back(1.0f);
        out.confidence.push_back(i < prob.size() ? prob[i] : 1.0f);
        out.source.push_back(0);
        if (params.want_distributions) {
            out.q_dist.emplace_back(size_t(m_n_vocab), 0.0f);
            out.q_dist.back()[size_t(out.tokens[i])] = 1.0f;
        }
    }
    out.cost.seconds = seconds_since(t0);
    return out;
}

DraftTree NgramDrafter::propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = measure_clock::now();
    cancel.throw_if_cancelled();
    DraftTree tree;
    if (m_spec.method == NgramMethod::suffix && m_spec.suffix_tree && !params.want_distributions && !m_ctx.empty()) {
        std::vector<int32_t> parent, rank;
        tree_shape_nodes(shape, parent, rank);
        std::vector<int32_t> depth(parent.size(), 1);
        int32_t max_depth = 0;
        for (size_t i = 0; i < parent.size(); ++i) {
            if (parent[i] >= 0) depth[i] = depth[size_t(parent[i])] + 1;
            max_depth = std::max(max_depth, depth[i]);
        }
        const SuffixDraft s = suffix_speculate(*m_local, m_global ? &*m_global : nullptr, m_ctx, int32_t(parent.size()),
                                               m_spec.suffix_spec_factor, m_spec.suffix_min_prob, true, max_depth);
        // Nodes come out best-first, so a parent precedes its children and siblings come in rank order; a token
        // outside the vocabulary drops its whole subtree.
        std::vector<int32_t> index(s.tokens.size(), -1), children(s.tokens.size() + 1, 0);
        for (size_t i = 0; i < s.tokens.size(); ++i) {
            const int32_t p = s.parent[i];
            if (s.tokens[i] < 0 || s.tokens[i] >= m_n_vocab || (p >= 0 && index[size_t(p)] < 0)) continue;
            index[i] = tree.size();
            tree.tokens.push_back(s.tokens[i]);
            tree.parent.push_back(p < 0 ? -1 : index[size_t(p)]);
            tree.depth.push_back(p < 0 ? 1 : tree.depth[size_t(index[size_t(p)])] + 1);
            tree.rank.push_back(children[size_t(p + 1)]++);
            tree.q.push_back(1.0f);
        }
        m_last_draft.clear();  // a tree's accepted path is not a prefix of one chain
    } else {
        tree = chain_as_tree(propose(rank0_path_length(shape), params, cancel), params.want_distributions);
    }
    tree.cost.seconds = seconds_since(t0);
    return tree;
}

}  // namespace speculum::drafts
