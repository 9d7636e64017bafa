// Internals shared by tokenizer.cpp, tokenizer_spm.cpp and tokenizer_bpe.cpp (not part of the public API):
// the lookup tables built once per vocabulary, and the lenient UTF-8 helpers that mirror llama.cpp's unicode.cpp.
#pragma once

#include "core/model/vocab.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace speculum::model::detail {

// ---- UTF-8, the way llama.cpp reads it ----

// Length of the UTF-8 sequence announced by a lead byte, from its high nibble (continuation bytes count as 1).
inline size_t utf8_len(char lead) {
    static constexpr uint8_t k_len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return k_len[static_cast<uint8_t>(lead) >> 4];
}

// Code points of `text`; every byte that does not start a well-formed sequence becomes U+FFFD and is skipped
// alone (llama.cpp's unicode_cpts_from_utf8). Overlong forms and surrogates decode as they are; values above
// U+10FFFF count as invalid (llama.cpp throws on them later).
std::vector<uint32_t> utf8_to_cpts(std::string_view text);
void append_utf8(std::string& out, uint32_t cpt);  // cpt <= 0x10FFFF; surrogates are encoded as 3 bytes

// GPT-2's reversible byte <-> printable code point mapping ("bytes_to_unicode"): '!'..'~', U+00A1..U+00AC and
// U+00AE..U+00FF map to themselves, the other 68 bytes to U+0100.. in byte order.
const std::string& byte_to_unicode(uint8_t byte);  // as UTF-8
int byte_from_unicode(uint32_t cpt);               // -1 when cpt is not in the mapping

// ---- the symbol chain both merge loops (SPM by score, BPE by rank) work on ----

struct MergeSymbol {
    int prev;    // index of the previous live symbol, -1 at the start
    int next;    // index of the next live symbol, -1 at the end
    size_t off;  // byte offset into the text being merged
    size_t n;    // bytes; 0 once merged into its left neighbour
};

// One symbol per UTF-8 character of `text` (a truncated last sequence is cut at the end), linked in order.
inline std::vector<MergeSymbol> utf8_symbols(std::string_view text) {
    std::vector<MergeSymbol> syms;
    syms.reserve(text.size());
    for (size_t off = 0; off < text.size();) {
        const size_t n  = std::min(utf8_len(text[off]), text.size() - off);
        const int index = static_cast<int>(syms.size());
        syms.push_back({index - 1, off + n == text.size() ? -1 : index + 1, off, n});
        off += n;
    }
    return syms;
}

// Merges `right` into `left` unless the queued pair is stale (a side changed since it was queued with `size`
// bytes in all). Returns whether it merged; the caller then queues the new neighbours of `left`.
inline bool merge_symbols(std::vector<MergeSymbol>& syms, int left, int right, size_t size) {
    MergeSymbol& l = syms[static_cast<size_t>(left)];
    MergeSymbol& r = syms[static_cast<size_t>(right)];
    if (l.n == 0 || r.n == 0 || l.n + r.n != size) return false;
    l.n += r.n;
    r.n    = 0;
    l.next = r.next;
    if (r.next >= 0) syms[static_cast<size_t>(r.next)].prev = left;
    return true;
}

// ---- tables ----

// A BPE pre-tokenizer family: its split patterns and the options llama.cpp sets for it. The patterns apply in turn:
// each splits every piece the previous ones left into its matches and the text between them (HF's "Isolated" Split
// pre-tokenizers, llama.cpp's unicode_regex_split).
struct BpePre {
    static constexpr size_t kMaxPatterns = 6;
    const char* name;                                // tokenizer.ggml.pre
    std::array<const char*, kMaxPatterns> patterns;  // PCRE2 patterns, unused ones nullptr
    bool ignore_merges;                              // a word that is a token is taken whole (Llama 3)
    bool clean_spaces;                               // decode: " ," -> ",", ...
    bool add_bos;                                    // default of tokenizer.ggml.add_bos_token (when bos is set)
};
// Every tokenizer.ggml.pre value that bpe_pre_for knows, comma-separated (for messages and docs).
std::string bpe_pre_names();
const BpePre* bpe_pre_for(const std::string& pre);  // nullptr when not supported

struct BpeRegex;  // compiled pre-tokenizer (PCRE2), defined in tokenizer_bpe.cpp
std::shared_ptr<const BpeRegex> bpe_regex_for(const std::string& pre);                 // throws std::invalid_argument
std::vector<std::string> bpe_pre_tokenize(const BpeRegex& re, std::string_view text);  // byte-encoded words

// Hash for string-keyed maps that can be probed with a string_view (no temporary std::string per lookup).
struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

struct TokenizerImpl {
    Vocab vocab;                            // types filled in and fixed up (EOG-looking -> control)
    StringMap to_id;                        // token text -> id (empty texts are left out)
    StringMap ranks;                        // bpe_pair_key(left, right) -> merge rank
    std::vector<int32_t> specials;          // control/user-defined/unknown ids, longest text first
    std::vector<uint8_t> eog;               // id -> ends generation
    std::vector<std::string> pieces;        // id -> piece with special tokens rendered
    std::shared_ptr<const BpeRegex> regex;  // BPE only
    bool clean_spaces  = false;             // BPE decode: " ," -> ",", " 's" -> "'s", ...
    bool ignore_merges = false;             // BPE: whole-word tokens skip the merges (BpePre)

    int32_t find(std::string_view text) const {
        auto it = to_id.find(text);
        return it == to_id.end() ? -1 : it->second;
    }
};

// Unambiguous key for a merge pair: 4-byte length of `left`, then left, then right.
std::string bpe_pair_key(std::string_view left, std::string_view right);

// One raw-text fragment through each model, appending ids. `text` for SPM is already space-escaped.
void spm_encode(const TokenizerImpl& t, const std::string& text, std::vector<int32_t>& out);
void bpe_encode(const TokenizerImpl& t, std::string_view text, std::vector<int32_t>& out);

}  // namespace speculum::model::detail
