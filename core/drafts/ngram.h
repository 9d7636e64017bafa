// The statistical drafters today's engines deploy (issue #28), each on token ids alone, with no model and no KV:
//
//   ngram-simple   llama.cpp: the most recent earlier occurrence of the last n tokens; copy what followed it.
//   ngram-map-k    llama.cpp: the same key, remembered per n-gram; the draft length follows the key's last
//                  accepted length.
//   ngram-map-k4v  llama.cpp: up to four continuations counted per key; draft the dominant one once the key has
//                  matched min_hits times.
//   ngram-mod      llama.cpp: a hashed pool n-gram -> next token, extended token by token (drafted tokens feed
//                  later lookups); reset when drafts keep failing.
//   ngram-cache    llama.cpp's lookup decoding: 1..4-gram -> next-token counts from the context, a dynamic cache
//                  and a static corpus cache (llama.cpp's lookup file format), with its thresholds.
//   prompt-lookup  vLLM's "ngram" method: the longest suffix match in [min, max] tokens, earliest occurrence.
//   suffix         SuffixDecoding (Oliaro et al.): frequency-weighted suffix trees over this sequence and earlier
//                  responses; a path (chain) or a best-first tree of drafts, budget alpha x match length.
//
// docs/engine.md ("Statistical drafters") describes each against its reference and lists where Speculum departs.
// The functions here are pure or own their state; NgramDrafter (ngram_drafter.h) adapts them to the engine.
#pragma once

#include <nlohmann/json.hpp>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace speculum::drafts {

// The largest n-gram cache file read (llama.cpp lookup format); its counts take several times this in memory.
inline constexpr uint64_t kMaxNgramCacheFileBytes = 256ull << 20;

enum class NgramMethod : uint8_t { simple, map_k, map_k4v, mod, cache, prompt_lookup, suffix };
// "ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache" (llama.cpp's --spec-type names),
// "prompt-lookup", "suffix".
const char* to_string(NgramMethod m);
// Every method, in the order above (editors and tests).
inline constexpr std::array<NgramMethod, 7> kNgramMethods = {
    NgramMethod::simple, NgramMethod::map_k,         NgramMethod::map_k4v, NgramMethod::mod,
    NgramMethod::cache,  NgramMethod::prompt_lookup, NgramMethod::suffix};
// True for the five llama.cpp --spec-type drafters.
bool is_llama_cpp_method(NgramMethod m);

// The parameters of every method (each reads only its own; defaults are the reference engines' defaults).
struct NgramSpec {
    NgramMethod method = NgramMethod::simple;
    // ngram-simple, ngram-map-k, ngram-map-k4v: key length n and longest draft m
    // (llama.cpp --spec-ngram-{simple,map-k,map-k4v}-size-n / -size-m).
    int32_t size_n   = 12;
    int32_t size_m   = 48;
    int32_t min_hits = 1;  // ngram-map-k4v: matches a key needs before it drafts (--spec-ngram-map-k4v-min-hits)
    // ngram-mod (--spec-ngram-mod-n-match / -n-min / -n-max): key length, shortest and longest draft. A draft
    // shorter than n_min (or than the engine's gamma, when gamma is smaller) is dropped.
    int32_t mod_n_match   = 24;
    int32_t mod_n_min     = 48;
    int32_t mod_n_max     = 64;
    int32_t mod_pool_log2 = 22;  // pool entries = 2^log2 (llama.cpp: 4 Mi entries, 16 MiB)
    // ngram-cache: llama.cpp lookup files (-lcs / -lcd); empty = none. The static cache holds 2-grams of a corpus
    // (speculum-cli ngram-cache create); the dynamic one any 1..4-grams. Each sequence's own n-grams are added to
    // the dynamic cache when it ends when `cache_update` is set (llama-lookup merges them at exit).
    std::string static_cache;
    std::string dynamic_cache;
    bool cache_update = true;
    // prompt-lookup (vLLM prompt_lookup_min / prompt_lookup_max; both 5 when neither is given).
    int32_t lookup_min = 5;
    int32_t lookup_max = 5;
    // suffix (vLLM suffix_decoding_*; Arctic Inference): tree depth, alpha (max tokens = alpha x match length),
    // the least path probability drafted, earlier responses kept in the global tree (0 = this sequence only), and
    // whether a tree verification gets the best-first tree (else the path mode's chain).
    int32_t suffix_max_depth  = 24;
    float suffix_spec_factor  = 1.0f;
    float suffix_min_prob     = 0.1f;
    int32_t suffix_max_cached = 10000;
    bool suffix_tree          = true;

    bool operator==(const NgramSpec&) const = default;
    // Throws std::invalid_argument naming the field ("draft.ngram.size_n must be in 1..1024, got 0").
    void validate() const;
    std::string describe() const;  // "ngram-map-k4v (n 12, m 48, min hits 2)"
};
void to_json(nlohmann::json& j, const NgramSpec& s);
// Strict: unknown keys and wrong types are std::invalid_argument naming "draft.ngram.<key>".
void from_json(const nlohmann::json& j, NgramSpec& s);

// ---- stateless methods (the scalar references of the drafters that keep state) ----

// llama.cpp's ngram-simple on `ctx` (every committed token; the last is the one just sampled): the key is the
// last n tokens; positions j = |ctx| - n - 2 down to 1 are tried and the first (most recent) equal n-gram wins;
// its continuation within the history (ctx without its last token) is copied, at most m tokens, and nothing is
// drafted when fewer than n follow or |ctx| - 1 <= n + m + 1 (llama.cpp's rules).
std::vector<int32_t> ngram_simple_draft(std::span<const int32_t> ctx, int32_t n, int32_t m);

// vLLM's prompt lookup: the longest L in [min_n, max_n] such that the last L tokens also end at an earlier
// position e < |ctx| (the occurrence may overlap the suffix); the earliest such occurrence; the up-to-k tokens
// from e. Empty when no suffix of min_n tokens recurs.
std::vector<int32_t> prompt_lookup_draft(std::span<const int32_t> ctx, int32_t min_n, int32_t max_n, int32_t k);

// ---- ngram-map-k / ngram-map-k4v ----

class NgramMap {
public:
    NgramMap(int32_t n, int32_t m, bool key_only, int32_t min_hits);
    // The draft after `ctx` (its last token is the sampled one), at most m tokens. See docs/engine.md.
    std::vector<int32_t> draft(std::span<const int32_t> ctx);
    // The previous draft had n_accepted tokens accepted: its value's next drafts are at most that long
    // (llama.cpp: a key whose draft was rejected outright drafts nothing more until it is forgotten).
    void accept(int32_t n_accepted);
    // The context shrank to `len` tokens (a rollback or a new sequence sharing a prefix): keys and continuations
    // seen at positions >= len are forgotten.
    void truncate(size_t len);
    size_t n_keys() const { return m_keys.size(); }

private:
    struct Value {
        std::vector<int32_t> tokens;  // the continuation (m tokens)
        int64_t first_pos  = 0;       // where it was first seen
        int32_t count      = 0;       // occurrences counted
        int32_t n_accepted = 0;       // the draft length cap (m until feedback)
    };
    struct Key {
        std::vector<int32_t> tokens;  // the n-gram
        int64_t first_pos = 0;
        int32_t n_matched = 0;      // draft calls that matched it
        int64_t scanned   = 0;      // k4v: occurrences before this position were counted
        std::vector<Value> values;  // k4v: up to four; map-k: one, whose n_accepted caps the draft
    };
    int32_t m_n, m_m, m_min_hits;
    bool m_key_only;
    std::unordered_map<uint64_t, std::vector<size_t>> m_index;  // hash of the n-gram -> keys
    std::vector<Key> m_keys;
    int64_t m_last_key = -1, m_last_value = -1;  // the previous draft's source (for accept)
};

// ---- ngram-mod ----

class NgramMod {
public:
    NgramMod(int32_t n_match, int32_t n_min, int32_t n_max, int32_t pool_log2);
    // A new sequence: every n-gram of `history` (the context less its last token) goes into the pool.
    void begin(std::span<const int32_t> history);
    // Up to min(n_max, k) tokens; none when fewer than min(n_min, that) are found.
    std::vector<int32_t> draft(std::span<const int32_t> ctx, int32_t k);
    void accept(int32_t n_accepted);  // 5 drafts in a row with < 25 % accepted reset the pool
    void truncate(size_t len);        // rollback: later n-grams are added again from there
    int64_t n_resets() const { return m_resets; }
    size_t pool_size() const { return m_pool.size(); }

private:
    uint64_t slot(const int32_t* tokens) const;
    void add_upto(std::span<const int32_t> history);
    void reset_pool();
    int32_t m_n, m_n_min, m_n_max;
    std::vector<int32_t> m_pool;
    size_t m_used    = 0;  // overwrites of a filled slot (llama.cpp's fill measure)
    size_t m_added   = 0;  // n-grams of the history added: positions [0, m_added)
    int32_t m_last   = 0;  // the previous draft's length
    int32_t m_low    = 0;  // drafts in a row with < 25 % accepted
    int64_t m_resets = 0;
};

// ---- ngram-cache (llama.cpp lookup decoding) ----

// An n-gram of 1..4 tokens, oldest first, padded with -1 (llama.cpp's common_ngram).
using NgramKey = std::array<int32_t, 4>;
struct NgramKeyHash {
    size_t operator()(const NgramKey& k) const;
};
// n-gram -> {next token -> count}, as llama.cpp's common_ngram_cache.
using NgramCounts = std::unordered_map<NgramKey, std::unordered_map<int32_t, int32_t>, NgramKeyHash>;

// Counts the 1..4-grams ending before each position in [from, tokens.size()) (llama.cpp's update); `sign` -1
// removes them again (rollback). `max_n` 2 with `only_n` gives the static cache's 2-grams alone.
void ngram_counts_update(NgramCounts& c, std::span<const int32_t> tokens, size_t from, int32_t sign = 1,
                         int32_t min_n = 1, int32_t max_n = 4);
// Adds `from`'s counts into `into` (llama-lookup-merge).
void ngram_counts_merge(NgramCounts& into, const NgramCounts& from);
// llama.cpp's binary lookup file: records of int32 tokens[4], int32 n, then n x (int32 token, int32 count). Load
// checks every record (a count or size that is not positive, a token outside [0, n_vocab) or a misplaced -1, a
// record cut short, more than the file can hold) and throws std::runtime_error naming the file and offset.
NgramCounts ngram_counts_load(const std::string& path, int32_t n_vocab);
void ngram_counts_save(const NgramCounts& c, const std::string& path);  // atomic (write, then rename)

// llama.cpp's draft: up to k tokens, each from the context counts (lax thresholds), else the dynamic counts
// (strict), trying the longest n-gram first, weighted by the static counts of the last 2 tokens; else the static
// counts alone. Drafted tokens extend the n-grams of later lookups.
std::vector<int32_t> ngram_cache_draft(std::span<const int32_t> ctx, int32_t k, const NgramCounts& context,
                                       const NgramCounts& dynamic, const NgramCounts& static_counts);

}  // namespace speculum::drafts
