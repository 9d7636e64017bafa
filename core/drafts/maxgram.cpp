// Max-Gram drafter (see maxgram.h).
#include "core/drafts/maxgram.h"

#include "core/json_reader.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace speculum::drafts {

void MaxGramParams::validate() const {
    if (min_match < 1) throw std::invalid_argument("maxgram.min_match must be >= 1, got " + std::to_string(min_match));
    if (max_match < min_match)
        throw std::invalid_argument("maxgram.max_match must be >= min_match (" + std::to_string(min_match) + "), got " +
                                    std::to_string(max_match));
    if (max_match > 4096)
        throw std::invalid_argument("maxgram.max_match must be <= 4096, got " + std::to_string(max_match));
}

void to_json(nlohmann::json& j, const MaxGramParams& p) {
    j = {{"mode", to_string(p.mode)},
         {"min_match", p.min_match},
         {"max_match", p.max_match},
         {"prefer_recent", p.prefer_recent},
         {"bigram_fill", p.bigram_fill}};
}

void from_json(const nlohmann::json& j, MaxGramParams& p) {
    static constexpr std::pair<const char*, MaxGramMode> kModes[] = {{"csdrafting", MaxGramMode::csdrafting},
                                                                     {"periodic", MaxGramMode::periodic}};
    p                                                             = MaxGramParams{};
    JsonReader r(j, "maxgram");
    r.get_enum("mode", p.mode, kModes);
    r.get("min_match", p.min_match);
    r.get("max_match", p.max_match);
    r.get("prefer_recent", p.prefer_recent);
    r.get("bigram_fill", p.bigram_fill);
    r.finish();
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
    const int64_t n  = int64_t(ctx.size());
    int32_t best_len = 0;
    int64_t best_end = -1;
    // An occurrence ends at e (exclusive) with e < n: the suffix ctx[n-L, n) equals ctx[e-L, e).
    for (int64_t e = 1; e < n; ++e) {
        int32_t len = 0;
        while (len < params.max_match && e - 1 - len >= 0 && ctx[size_t(e - 1 - len)] == ctx[size_t(n - 1 - len)])
            ++len;
        if (len < params.min_match) continue;
        bool better = len > best_len || (len == best_len && params.prefer_recent);
        if (better) best_len = len, best_end = e;
    }
    return {best_len, best_end};
}

namespace {

struct Match {
    int32_t length = 0;
    int64_t end    = -1;
};

// The longest suffix of seq that occurs in seq[0, src_len) (an occurrence ends at e <= src_len), among lengths in
// [min_match, max_match]. Candidates are positions holding the last token; each is extended leftwards (bounded
// by max_match), so a call costs O(occurrences * max_match).
Match longest_suffix_match(std::span<const int32_t> seq, int64_t src_len, const MaxGramParams& params) {
    Match m;
    const int64_t n = int64_t(seq.size());
    if (n == 0) return m;
    const int32_t last = seq[size_t(n - 1)];
    for (int64_t e = 1; e <= src_len && e < n; ++e) {
        if (seq[size_t(e - 1)] != last) continue;
        int32_t len = 1;
        while (len < params.max_match && e - 1 - len >= 0 && seq[size_t(e - 1 - len)] == seq[size_t(n - 1 - len)])
            ++len;
        if (len < params.min_match) continue;
        if (len > m.length || (len == m.length && params.prefer_recent)) m.length = len, m.end = e;
    }
    return m;
}

}  // namespace

const char* to_string(MaxGramMode m) {
    return m == MaxGramMode::periodic ? "periodic" : "csdrafting";
}

const char* maxgram_mode_unexpressed(MaxGramMode m) {
    return m == MaxGramMode::periodic ? "Max-Gram's periodic mode (the copy runs on into its own proposal)"
                                      : "Max-Gram's second search over the generation extended by its first copy";
}

MaxGramProposal maxgram_propose(std::span<const int32_t> ctx, int32_t k, const BigramTable* bigram,
                                const MaxGramParams& params) {
    MaxGramProposal out;
    if (k <= 0 || ctx.empty()) return out;
    const int64_t n = int64_t(ctx.size());
    auto copy       = [&](int32_t t) {
        out.tokens.push_back(t);
        out.sources.push_back(MaxGramSource::copy);
    };

    const Match first = longest_suffix_match(ctx, n - 1, params);
    out.match_length  = first.length;
    out.match_end     = first.end;
    if (params.mode == MaxGramMode::periodic) {
        // Continue the occurrence; reading past n - 1 reads our own proposal, which repeats the pattern.
        if (first.end >= 0)
            for (int64_t i = first.end; int32_t(out.tokens.size()) < k; ++i)
                copy(i < n ? ctx[size_t(i)] : out.tokens[size_t(i - n)]);
        out.n_stage1 = int32_t(out.tokens.size());
    } else if (first.end >= 0) {
        // Stage 1: the source is every committed token but the last; the copy stops at its end.
        for (int64_t i = first.end; i < n - 1 && int32_t(out.tokens.size()) < k; ++i) copy(ctx[size_t(i)]);
        out.n_stage1 = int32_t(out.tokens.size());
        // Stage 2: the current generation, extended by stage 1's copy, searched with its new suffix.
        if (int32_t(out.tokens.size()) < k) {
            std::vector<int32_t> seq(ctx.begin(), ctx.end());
            seq.insert(seq.end(), out.tokens.begin(), out.tokens.end());
            const int64_t src_len = int64_t(seq.size()) - 1;
            const Match second    = longest_suffix_match(seq, src_len, params);
            if (second.end >= 0)
                for (int64_t i = second.end; i < src_len && int32_t(out.tokens.size()) < k; ++i) copy(seq[size_t(i)]);
            out.n_stage2 = int32_t(out.tokens.size()) - out.n_stage1;
        }
    }

    // Bigram phase: a greedy chain from the last known token.
    if (params.bigram_fill && bigram) {
        int32_t cur = out.tokens.empty() ? ctx[size_t(n - 1)] : out.tokens.back();
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
