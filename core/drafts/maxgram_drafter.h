// Max-Gram as a Drafter: the longest-suffix copy of maxgram.h with an optional bigram fill. No model and no KV
// state, so sync only records the context and every call costs no weight or KV bytes (its time is measured).
#pragma once

#include "core/drafts/drafter.h"
#include "core/drafts/maxgram.h"

#include <optional>

namespace speculum::drafts {

// Statistical drafters that know one continuation answer a tree request with a chain: its length is the rank-0
// path of the shape (root, first child, its first child, ...), and the chain becomes a tree of one branch (with the
// chain's one-hot distributions when it has them).
int32_t rank0_path_length(const TreeShape& shape);
DraftTree chain_as_tree(const DraftChain& chain, bool want_distributions);

class MaxGramDrafter final : public Drafter {
public:
    // n_vocab sizes the one-hot q_dist; `bigram` (optional) fills after the copied continuation runs out.
    MaxGramDrafter(int32_t n_vocab, MaxGramParams params = {}, std::optional<BigramTable> bigram = std::nullopt);

    std::string name() const override { return m_bigram ? "max-gram+bigram" : "max-gram"; }
    int32_t n_vocab() const override { return m_n_vocab; }
    void sync(std::span<const int32_t> committed) override;
    // q = 1 and one-hot q_dist (a deterministic proposal); source[i] = MaxGramSource (0 copy, 1 bigram).
    // p_min and temperature do not apply.
    DraftChain propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) override;
    // One chain along the rank-0 path of the shape (Max-Gram knows one continuation); other nodes are omitted.
    DraftTree propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) override;

private:
    int32_t m_n_vocab;
    MaxGramParams m_params;
    std::optional<BigramTable> m_bigram;
    std::vector<int32_t> m_context;
};

}  // namespace speculum::drafts
