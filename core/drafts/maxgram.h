// Max-Gram (CS Drafting, Sec. 3.3 / App. A): a statistical drafter at near-zero cost. It finds the longest
// suffix of the context that occurred earlier in the context (prompt and generated text) and proposes the
// tokens that followed it; when that runs out it continues with a greedy bigram chain built from a corpus.
// Works on token ids only: no model, no KV state.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace speculum::drafts {

// Greedy next-token table: next[t] is the most frequent successor of token t in the corpus (ties: smaller id),
// or -1 when t never occurs with a successor. Its size is the vocabulary: "as many parameters as the tokenizer".
struct BigramTable {
    std::vector<int32_t> next;

    // Counts successors over each sequence (no pair spans two sequences). Ids outside [0, n_vocab) are rejected
    // with std::invalid_argument naming the sequence and position.
    static BigramTable build(const std::vector<std::vector<int32_t>>& sequences, int32_t n_vocab);
    int32_t successor(int32_t token) const {
        return token >= 0 && size_t(token) < next.size() ? next[size_t(token)] : -1;
    }
};

struct MaxGramParams {
    int32_t min_match   = 1;      // shortest suffix match (tokens) worth copying from
    int32_t max_match   = 64;     // longest suffix compared (bounds the search cost); >= min_match
    bool prefer_recent  = false;  // among equally long matches: false = leftmost (the paper), true = most recent
    bool bigram_fill    = true;   // continue with the bigram chain when the copied continuation runs out

    bool operator==(const MaxGramParams&) const = default;
    // Throws std::invalid_argument with a message naming the field.
    void validate() const;
};
void to_json(nlohmann::json& j, const MaxGramParams& p);
void from_json(const nlohmann::json& j, MaxGramParams& p);  // missing keys keep their defaults

// Where each proposed token came from, for provenance in the UI and per-source acceptance statistics.
enum class MaxGramSource : uint8_t { copy, bigram };

struct MaxGramProposal {
    std::vector<int32_t> tokens;
    std::vector<MaxGramSource> sources;  // one per token
    int32_t match_length = 0;            // length of the suffix match used for copying (0: none)
    int64_t match_end    = -1;           // index in the context just after the matched occurrence (-1: none)
};

// Proposes up to k tokens to follow `context`. The copy phase continues the matched occurrence as far as the
// context allows (overlapping the suffix itself, like a repeating pattern); the bigram phase then fills the
// rest from the last proposed token. Returns fewer than k tokens when neither source knows more.
MaxGramProposal maxgram_propose(std::span<const int32_t> context, int32_t k, const BigramTable* bigram,
                                const MaxGramParams& params = {});

// The scalar reference of the suffix search: longest match length L in [min_match, max_match] and the end index
// of the chosen occurrence, by brute force. maxgram_propose must agree with it (tested).
std::pair<int32_t, int64_t> maxgram_longest_match_ref(std::span<const int32_t> context, const MaxGramParams& params);

}  // namespace speculum::drafts
