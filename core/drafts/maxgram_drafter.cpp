// MaxGramDrafter (see maxgram_drafter.h).
#include "core/drafts/maxgram_drafter.h"
#include "core/clock.h"

#include "core/drafts/model_drafter.h"

#include <chrono>
#include <stdexcept>

namespace speculum::drafts {

MaxGramDrafter::MaxGramDrafter(int32_t n_vocab, MaxGramParams params, std::optional<BigramTable> bigram)
    : m_n_vocab(n_vocab), m_params(params), m_bigram(std::move(bigram)) {
    if (n_vocab <= 0) throw std::invalid_argument("MaxGramDrafter: vocabulary size must be positive");
    m_params.validate();
    if (m_bigram && m_bigram->next.size() != size_t(n_vocab))
        throw std::invalid_argument("MaxGramDrafter: bigram table has " + std::to_string(m_bigram->next.size()) +
                                    " entries for a vocabulary of " + std::to_string(n_vocab));
}

void MaxGramDrafter::sync(std::span<const int32_t> committed) {
    m_context.assign(committed.begin(), committed.end());
}

DraftChain MaxGramDrafter::propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0 = measure_clock::now();
    if (k < 0) throw std::invalid_argument("MaxGramDrafter::propose: k must be >= 0, got " + std::to_string(k));
    cancel.throw_if_cancelled();
    DraftChain out;
    if (k == 0) return out;
    const MaxGramProposal p = maxgram_propose(m_context, k, m_bigram ? &*m_bigram : nullptr, m_params);
    for (size_t i = 0; i < p.tokens.size(); ++i) {
        const int32_t t = p.tokens[i];
        if (t < 0 || t >= m_n_vocab) break;  // a context token outside the vocabulary is not proposed
        out.tokens.push_back(t);
        out.q.push_back(1.0f);
        out.confidence.push_back(1.0f);
        out.source.push_back(static_cast<uint8_t>(p.sources[i]));
        if (params.want_distributions) {
            out.q_dist.emplace_back(size_t(m_n_vocab), 0.0f);
            out.q_dist.back()[size_t(t)] = 1.0f;
        }
    }
    out.cost.seconds = seconds_since(t0);
    return out;
}

int32_t rank0_path_length(const TreeShape& shape) {
    std::vector<int32_t> parent, rank;
    tree_shape_nodes(shape, parent, rank);
    int32_t at = -1, n = 0;
    for (size_t i = 0; i < parent.size(); ++i)
        if (parent[i] == at && rank[i] == 0) {
            ++n;
            at = static_cast<int32_t>(i);
        }
    return n;
}

DraftTree chain_as_tree(const DraftChain& chain, bool want_distributions) {
    DraftTree tree;
    const int32_t n = static_cast<int32_t>(chain.tokens.size());
    for (int32_t i = 0; i < n; ++i) {
        tree.tokens.push_back(chain.tokens[size_t(i)]);
        tree.parent.push_back(i - 1);
        tree.depth.push_back(i + 1);
        tree.rank.push_back(0);
        tree.q.push_back(i < int32_t(chain.q.size()) ? chain.q[size_t(i)] : 1.0f);
    }
    if (want_distributions && n > 0 && chain.q_dist.size() == size_t(n)) {
        tree.root_q_dist = chain.q_dist[0];
        for (int32_t i = 0; i < n; ++i)  // node i's children were drawn from chain token i + 1's one-hot
            tree.q_dist.push_back(i + 1 < n ? chain.q_dist[size_t(i + 1)] : std::vector<float>{});
    }
    tree.cost = chain.cost;
    return tree;
}

DraftTree MaxGramDrafter::propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) {
    const auto t0     = measure_clock::now();
    DraftTree tree    = chain_as_tree(propose(rank0_path_length(shape), params, cancel), params.want_distributions);
    tree.cost.seconds = seconds_since(t0);
    return tree;
}

}  // namespace speculum::drafts
