// Max-Gram (CS Drafting, Sec. 3.3 / App. A): a statistical drafter at near-zero cost. It finds the longest
// suffix of the context that occurred earlier and proposes the tokens that followed it; when nothing (more) can be
// copied it continues with a greedy bigram chain built from a corpus. Works on token ids only: no model, no KV.
//
// Two ways to continue a match (MaxGramParams::mode):
//   csdrafting (default), as the paper's code (mag.py, draft_sample_k_bn_gram) runs it:
//     1. search the suffix in the prompt and earlier generation (every committed token but the last) and copy the
//        continuation only as far as that source goes;
//     2. if fewer than k tokens came, search again in the current generation (the committed tokens plus what
//        step 1 copied, less its last token) with the new suffix, and copy again up to the source's end;
//     3. fill the rest with the greedy bigram chain (when a table is given).
//     The code concatenates its sources (prompt ++ generation, generation ++ generation), so a continuation that
//     reaches the end of one can wrap to the start of the next; Speculum stops at the end of the source instead
//     (docs/engine.md, "Max-Gram").
//   periodic: one search over the whole context; the continuation runs past the context's end into the proposal
//     itself, so a repeating pattern extends for all k tokens (Speculum's extrapolation before issue #24).
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

enum class MaxGramMode : uint8_t { csdrafting, periodic };
const char* to_string(MaxGramMode m);  // "csdrafting", "periodic"
// What of the mode an engine that copies once from its context (llama.cpp, vLLM, SGLang n-gram drafting) cannot
// express, as an export's "cannot express" line.
const char* maxgram_mode_unexpressed(MaxGramMode m);

struct MaxGramParams {
    MaxGramMode mode   = MaxGramMode::csdrafting;
    int32_t min_match  = 1;      // shortest suffix match (tokens) worth copying from
    int32_t max_match  = 64;     // longest suffix compared (bounds the search cost); >= min_match
    bool prefer_recent = false;  // among equally long matches: false = leftmost (the paper), true = most recent
    bool bigram_fill   = true;   // continue with the bigram chain when the copied continuation runs out

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
    int32_t match_length = 0;            // length of the first suffix match used for copying (0: none)
    int64_t match_end    = -1;           // index in the context just after that occurrence (-1: none)
    int32_t n_stage1     = 0;            // tokens copied by the first search (csdrafting; periodic: every copy)
    int32_t n_stage2     = 0;            // tokens copied by the second search (csdrafting only)
};

// Proposes up to k tokens to follow `context` (see the modes above); the bigram phase fills the rest from the last
// proposed token. Returns fewer than k tokens when no source knows more.
MaxGramProposal maxgram_propose(std::span<const int32_t> context, int32_t k, const BigramTable* bigram,
                                const MaxGramParams& params = {});

// The scalar reference of the suffix search: longest match length L in [min_match, max_match] of the context's
// suffix among occurrences that end before the context's last token, and the end index of the chosen occurrence,
// by brute force. maxgram_propose's first search must agree with it (tested).
std::pair<int32_t, int64_t> maxgram_longest_match_ref(std::span<const int32_t> context, const MaxGramParams& params);

}  // namespace speculum::drafts
