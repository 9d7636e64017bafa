// The statistical drafters of ngram.h as one Drafter (kind "ngram"). It keeps each method's state across calls and
// across the prompts of a run, as the reference engines keep it across requests:
//   - a sync that extends the context tells the method how much of its last draft was accepted (the committed
//     tokens that follow the drafted ones), which ngram-map and ngram-mod learn from;
//   - a sync that keeps only part of the context rolls the method's state back to the common prefix;
//   - a sync whose context no longer starts with the current sequence's first tokens starts a new sequence: the
//     finished one's n-grams join ngram-cache's dynamic counts, its response joins suffix decoding's global tree.
// No weights, no KV: every call's cost is its measured time. q = 1 (a one-hot proposal); `confidence` is suffix
// decoding's path probability and 1 for the others; p_min and temperature do not apply.
#pragma once

#include "core/drafts/drafter.h"
#include "core/drafts/ngram.h"
#include "core/drafts/suffix_tree.h"

#include <deque>
#include <memory>
#include <optional>

namespace speculum::drafts {

class NgramDrafter final : public Drafter {
public:
    // `static_counts` / `dynamic_counts`: ngram-cache's files, loaded (ngram_counts_load); ignored otherwise.
    NgramDrafter(int32_t n_vocab, NgramSpec spec, NgramCounts static_counts = {}, NgramCounts dynamic_counts = {});

    std::string name() const override { return to_string(m_spec.method); }
    int32_t n_vocab() const override { return m_n_vocab; }
    void sync(std::span<const int32_t> committed) override;
    DraftChain propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) override;
    // Suffix decoding with suffix_tree (greedy verification): its best-first tree within the shape's node count and
    // depth. Every other method, and sampled verification: a chain along the shape's rank-0 path.
    DraftTree propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) override;
    // Back to the state it was built with: the loaded dynamic counts, an empty global tree and pool.
    void reset_learned() override;

    const NgramSpec& spec() const { return m_spec; }
    // The dynamic counts with every finished sequence merged (ngram-cache), for saving after a run.
    const NgramCounts& dynamic_counts() const { return m_dynamic; }
    // Diagnostics for tests: sequences begun, drafts made and the accepted counts fed back.
    int64_t n_sequences() const { return m_n_sequences; }
    int64_t n_feedback() const { return m_n_feedback; }
    int64_t n_accepted_fed_back() const { return m_accepted_fed_back; }
    const NgramMod* mod() const { return m_mod ? &*m_mod : nullptr; }
    const SuffixTree* global_tree() const { return m_global ? &*m_global : nullptr; }

private:
    void begin_sequence();
    void end_sequence();
    void rollback(size_t len);
    void extend(size_t from);
    void feed_back(std::span<const int32_t> committed);
    std::vector<int32_t> draft_tokens(int32_t k, std::vector<float>* prob);

    int32_t m_n_vocab;
    NgramSpec m_spec;
    std::vector<int32_t> m_ctx;
    size_t m_seq_start = 0;  // tokens in the current sequence's first sync (its prompt)
    bool m_started     = false;
    // The last draft and the context length it followed, for the acceptance fed back at the next sync.
    std::vector<int32_t> m_last_draft;
    size_t m_last_at = 0;

    std::optional<NgramMap> m_map;
    std::optional<NgramMod> m_mod;
    NgramCounts m_context, m_dynamic, m_static;
    NgramCounts m_dynamic_loaded;  // the dynamic counts as loaded (reset_learned)
    std::optional<SuffixTree> m_local, m_global;
    std::deque<int32_t> m_global_seqs;  // response ids in the global tree, oldest first
    int32_t m_next_seq = 1;

    int64_t m_n_sequences = 0, m_n_feedback = 0, m_accepted_fed_back = 0;
};

}  // namespace speculum::drafts
