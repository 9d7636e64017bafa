// SuffixDecoding's frequency-weighted suffix tree (Oliaro et al., arXiv 2411.04975; Arctic Inference's
// implementation, which vLLM's "suffix" method wraps). Every suffix of the indexed sequences, cut to `max_depth`
// tokens, is a path from the root; a node's count is how often its substring occurs (within the depth window).
// Speculation matches the last p tokens of the context for each p, walks on by the most frequent children
// (path mode) or best-first by path probability (tree mode) while the probability stays >= min_prob, within a
// budget of alpha x p tokens, and keeps the draft with the highest expected number of accepted tokens (the sum of
// its tokens' probabilities).
//
// Stored as an uncompressed trie (one node per token of a path): a compressed edge of the reference has one child
// per node with an unchanged count, so the probabilities and drafts are the same.
#pragma once

#include <climits>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace speculum::drafts {

struct SuffixDraft {
    std::vector<int32_t> tokens;
    std::vector<int32_t> parent;  // -1 = follows the context's last token; a chain has parent[i] = i - 1
    std::vector<float> prob;      // each token's path probability (the count ratios multiplied along its path)
    double score      = 0.0;      // sum of prob: the expected accepted tokens under the frequency model
    int32_t match_len = 0;        // tokens of the context matched (0 = no draft)
};

class SuffixTree {
public:
    explicit SuffixTree(int32_t max_depth);

    // Indexes one more token of sequence `seq` (each sequence is appended to in order). Sequences are
    // independent: no suffix spans two.
    void append(int32_t seq, int32_t token);
    void append(int32_t seq, std::span<const int32_t> tokens);
    // Removes every suffix of `seq` (counts drop; the sequence is forgotten). Its nodes stay, at count 0.
    void remove(int32_t seq);
    bool has(int32_t seq) const { return m_seqs.count(seq) > 0; }
    void clear();

    // The best draft after `context` (its last max_depth - 1 tokens are matched), at most `max_tokens` tokens and
    // floor(alpha x p) for a match of p tokens; `tree` = best-first expansion, else a chain of the most frequent
    // children. Ties keep the shorter match.
    // A tree's nodes are at most `max_tree_depth` deep (the verification's depth).
    SuffixDraft speculate(std::span<const int32_t> context, int32_t max_tokens, float alpha, float min_prob, bool tree,
                          int32_t max_tree_depth = INT32_MAX) const;

    int32_t max_depth() const { return m_max_depth; }
    size_t n_nodes() const { return m_nodes.size(); }
    int64_t root_count() const { return m_nodes[0].count; }

private:
    struct Node {
        int64_t count       = 0;
        int32_t token       = -1;
        int32_t first_child = -1;
        int32_t next        = -1;  // next sibling
    };
    struct Seq {
        std::vector<int32_t> tokens;
        std::vector<int32_t> active;  // nodes of the suffixes still shorter than max_depth, oldest first
    };
    int32_t child(int32_t node, int32_t token) const;
    int32_t child_or_add(int32_t node, int32_t token);
    SuffixDraft draft_from(int32_t node, int32_t budget, float min_prob, bool tree, int32_t max_tree_depth) const;

    int32_t m_max_depth;
    std::vector<Node> m_nodes;                         // [0] = root
    std::unordered_map<uint64_t, int32_t> m_children;  // (node << 32 | token) -> child
    std::unordered_map<int32_t, Seq> m_seqs;
};

// Draft from a request's own tree (prompt and output so far) or the global tree (earlier responses), whichever
// scores higher (the request's on a tie), as the reference does.
SuffixDraft suffix_speculate(const SuffixTree& local, const SuffixTree* global, std::span<const int32_t> context,
                             int32_t max_tokens, float alpha, float min_prob, bool tree,
                             int32_t max_tree_depth = INT32_MAX);

}  // namespace speculum::drafts
