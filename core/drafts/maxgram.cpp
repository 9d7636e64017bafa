// Max-Gram drafter (see maxgram.h).
#include "core/drafts/maxgram.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace speculum::drafts {

void MaxGramParams::validate() const {
    if (min_match < 1) throw std::invalid_argument("maxgram.min_match must be >= 1, got " + std::to_string(min_match));
    if (max_match < min_match)
        throw std::invalid_argument("maxgram.max_match must be >= min_match (" + std::to_string(min_match) +
                                    "), got " + std::to_string(max_match));
    if (max_match > 4096) throw std::invalid_argument("maxgram.max_match must be <= 4096, got " + std::to_string(max_match));
}

void to_json(nlohmann::json& j, const MaxGramParams& p) {
    j = {{"min_match", p.min_match}, {"max_match", p.max_match}, {"prefer_recent", p.prefer_recent},
         {"bigram_fill", p.bigram_fill}};
}

void from_json(const nlohmann::json& j, MaxGramParams& p) {
    MaxGramParams d;
    p.min_match     = j.value("min_match", d.min_match);
    p.max_match     = j.value("max_match", d.max_match);
    p.prefer_recent = j.value("prefer_recent", d.prefer_recent);
    p.bigram_fill   = j.value("bigram_fill", d.bigram_fill);
}

BigramTable BigramTable::build(const std::vector<std::vector<int32_t>>& sequences, int32_t n_vocab) {
    if (n_vocab <= 0) throw std::invalid_argument("bigram: vocabulary size must be positive");
    // Sparse counts: a dense n_vocab^2 table would be 16 M entries for a 4 K vocabulary.
    std::vector<std::unordered_map<int32_t, uint32_t>> counts{static_cast<size_t>(n_vocab)};
    for (size_t s = 0; s < sequences.size(); ++s) {
        const auto& seq = sequences[s];
        for (size_t i = 0; i < seq.size(); ++i) {
            if (seq[i] < 0 || seq[i] >= n_vocab)
                throw std::invalid_argument("bigram: sequence " + std::to_string(s) + " position " + std::to_string(i) +
                                            ": token id " + std::to_string(seq[i]) + " outside [0, " +
                                            std::to_string(n_vocab) + ")");
            if (i + 1 < seq.size() && seq[i + 1] >= 0 && seq[i + 1] < n_vocab) ++counts[size_t(seq[i])][seq[i + 1]];
        }
    }
    BigramTable t;
    t.next.assign(size_t(n_vocab), -1);
    for (size_t a = 0; a < counts.size(); ++a) {
        uint32_t best_count = 0;
        int32_t best        = -1;
        for (const auto& [b, c] : counts[a])
            if (c > best_count || (c == best_count && b < best)) best_count = c, best = b;
        t.next[a] = best;
    }
    return t;
}

std::pair<int32_t, int64_t> maxgram_longest_match_ref(std::span<const int32_t> ctx, const MaxGramParams& params) {
    const int64_t n = int64_t(ctx.size());
    int32_t best_len = 0;
    int64_t best_end = -1;
    // An occurrence ends at e (exclusive) with e < n: the suffix ctx[n-L, n) equals ctx[e-L, e).
    for (int64_t e = 1; e < n; ++e) {
        int32_t len = 0;
        while (len < params.max_match && e - 1 - len >= 0 && ctx[size_t(e - 1 - len)] == ctx[size_t(n - 1 - len)]) ++len;
        if (len < params.min_match) continue;
        bool better = len > best_len || (len == best_len && params.prefer_recent);
        if (better) best_len = len, best_end = e;
    }
    return {best_len, best_end};
}

MaxGramProposal maxgram_propose(std::span<const int32_t> ctx, int32_t k, const BigramTable* bigram,
                                const MaxGramParams& params) {
    MaxGramProposal out;
    if (k <= 0 || ctx.empty()) return out;
    const int64_t n = int64_t(ctx.size());

    // Copy phase: the longest suffix that occurred before. Candidates are positions holding the last token;
    // each is extended leftwards (bounded by max_match), so a call costs O(occurrences * max_match).
    const int32_t last = ctx[size_t(n - 1)];
    for (int64_t e = 1; e < n; ++e) {
        if (ctx[size_t(e - 1)] != last) continue;
        int32_t len = 1;
        while (len < params.max_match && e - 1 - len >= 0 && ctx[size_t(e - 1 - len)] == ctx[size_t(n - 1 - len)]) ++len;
        if (len < params.min_match) continue;
        bool better = len > out.match_length || (len == out.match_length && params.prefer_recent);
        if (better) out.match_length = len, out.match_end = e;
    }
    if (out.match_end >= 0) {
        // Continue the occurrence; reading past n - 1 would read our own proposal, which repeats the pattern.
        for (int64_t i = out.match_end; int32_t(out.tokens.size()) < k; ++i) {
            int32_t t = i < n ? ctx[size_t(i)] : out.tokens[size_t(i - n)];
            out.tokens.push_back(t);
            out.sources.push_back(MaxGramSource::copy);
        }
    }

    // Bigram phase: a greedy chain from the last known token.
    if (params.bigram_fill && bigram) {
        int32_t cur = out.tokens.empty() ? last : out.tokens.back();
        while (int32_t(out.tokens.size()) < k) {
            int32_t next = bigram->successor(cur);
            if (next < 0) break;
            out.tokens.push_back(next);
            out.sources.push_back(MaxGramSource::bigram);
            cur = next;
        }
    }
    return out;
}

}  // namespace speculum::drafts
