// Byte-level BPE ("gpt2" vocabularies): the pre-tokenizer's regex (PCRE2, UTF + UCP; GPT-2's, Llama 3's or Qwen 2's,
// by tokenizer.ggml.pre) splits text into words, each word's bytes go through GPT-2's byte -> code point mapping,
// then merges apply in rank order. Same results as llama.cpp's llm_tokenizer_bpe with its own regex engine (see
// the notes on \s below).
#include "core/model/tokenizer_impl.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstring>
#include <queue>
#include <stdexcept>

namespace speculum::model::detail {

// GPT-2's pattern: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+. llama.cpp's hand-written
// splitter behaves like it, with one difference that we reproduce by rewriting the subject: its whitespace set is
// Unicode White_Space, whereas PCRE2's \s also matches U+180E (see bpe_pre_tokenize).
static constexpr const char* k_gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Llama 3's pattern (tiktoken's cl100k form): contractions in either case, a letter run with at most one leading
// non-letter, digits in runs of at most three, punctuation runs with their trailing newlines, newline runs. The
// contractions are spelled as character classes, as llama.cpp does: PCRE2's caseless mode would also fold U+017F
// (long s) and U+212A (Kelvin sign) into them.
static constexpr const char* k_llama3_pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen 2's: Llama 3's with every digit a word of its own.
static constexpr const char* k_qwen2_pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// tokenizer.ggml.pre values and what llama.cpp's llama_vocab::impl::load does for each (the families whose split
// is this one pattern; add_sep, other patterns and multi-pass splitters are not supported).
static constexpr BpePre k_pres[] = {
    {"gpt-2", k_gpt2_pattern, false, true, false},
    {"phi-2", k_gpt2_pattern, false, true, false},
    {"mpt", k_gpt2_pattern, false, true, false},
    {"olmo", k_gpt2_pattern, false, true, false},
    {"jais", k_gpt2_pattern, false, true, false},
    {"gigachat", k_gpt2_pattern, false, true, false},
    {"exaone4", k_gpt2_pattern, false, true, false},
    {"llama-bpe", k_llama3_pattern, true, true, true},  // Llama 3.x: whole words in the vocabulary skip the merges
    {"llama3", k_llama3_pattern, true, true, true},
    {"llama-v3", k_llama3_pattern, true, true, true},
    {"falcon3", k_llama3_pattern, true, true, true},
    {"pixtral", k_llama3_pattern, true, true, true},
    {"qwen2", k_qwen2_pattern, false, false, false},  // Qwen 2, 2.5 and 3
    {"deepseek-r1-qwen", k_qwen2_pattern, false, false, false},
    {"megrez", k_qwen2_pattern, false, true, false},
};

const BpePre* bpe_pre_for(const std::string& pre) {
    for (const BpePre& p : k_pres)
        if (pre == p.name) return &p;
    return nullptr;
}

struct BpeRegex {
    pcre2_code* code = nullptr;
    bool jit         = false;
    ~BpeRegex() { pcre2_code_free(code); }
};

std::shared_ptr<const BpeRegex> bpe_regex_for(const std::string& pre) {
    const BpePre* spec = bpe_pre_for(pre);
    if (!spec) {
        std::string list;
        for (const BpePre& p : k_pres) list += std::string(list.empty() ? "" : ", ") + p.name;
        throw std::invalid_argument("tokenizer.ggml.pre: pre-tokenizer '" + pre +
                                    "' is not supported for gpt2 vocabularies (supported: " + list + ")");
    }
    auto re = std::make_shared<BpeRegex>();
    int err        = 0;
    PCRE2_SIZE at  = 0;
    re->code       = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(spec->pattern), PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &err, &at, nullptr);
    if (!re->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        throw std::runtime_error("PCRE2 cannot compile the '" + pre + "' pattern: " +
                                 reinterpret_cast<const char*>(msg));
    }
    re->jit = pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE) == 0;  // optional: the interpreter is the fallback
    return re;
}

std::vector<std::string> bpe_pre_tokenize(const BpeRegex& re, std::string_view text) {
    // llama.cpp splits code points, not bytes: invalid bytes become U+FFFD first and words are re-encoded from
    // code points. `raw` is that re-encoding; `subject` is the same with the code points PCRE2 rejects
    // (surrogates) or classifies differently (U+180E, \s in PCRE2 only) replaced by U+FFFD, which falls into
    // the same [^\s\p{L}\p{N}] class and also takes 3 bytes, so byte offsets agree between the two.
    const std::vector<uint32_t> cpts = utf8_to_cpts(text);
    std::string raw, subject;
    raw.reserve(text.size());
    subject.reserve(text.size());
    for (uint32_t c : cpts) {
        append_utf8(raw, c);
        append_utf8(subject, (c >= 0xD800 && c <= 0xDFFF) || c == 0x180E ? 0xFFFDu : c);
    }

    std::vector<std::string> words;
    auto emit = [&](size_t a, size_t b) {
        std::string w;
        w.reserve(2 * (b - a));
        for (size_t i = a; i < b; ++i) w += byte_to_unicode(static_cast<uint8_t>(raw[i]));
        words.push_back(std::move(w));
    };

    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(
        pcre2_match_data_create_from_pattern(re.code, nullptr), &pcre2_match_data_free);
    if (!md) throw std::bad_alloc();
    const auto* subj = reinterpret_cast<PCRE2_SPTR>(subject.data());
    size_t pos       = 0;
    while (pos < subject.size()) {
        // PCRE2_NO_UTF_CHECK: the subject is valid by construction, and the check would rescan it on every call.
        uint32_t opts = PCRE2_NO_UTF_CHECK;
        int rc        = pcre2_match(re.code, subj, subject.size(), pos, opts, md.get(), nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) rc = pcre2_match(re.code, subj, subject.size(), pos, opts | PCRE2_NO_JIT,
                                                               md.get(), nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) {
            emit(pos, subject.size());
            break;
        }
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            throw std::runtime_error(std::string("pre-tokenizer: PCRE2 match failed: ") +
                                     reinterpret_cast<const char*>(msg));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md.get());
        if (ov[0] > pos) emit(pos, ov[0]);  // text the pattern skipped stays a word of its own (as in llama.cpp)
        size_t end = ov[1];
        if (end == ov[0]) end = std::min(ov[0] + utf8_len(subject[ov[0]]), subject.size());  // never loop
        emit(ov[0], end);
        pos = end;
    }
    return words;
}

std::string bpe_pair_key(std::string_view left, std::string_view right) {
    std::string key(4 + left.size() + right.size(), '\0');
    const auto n = static_cast<uint32_t>(left.size());
    std::memcpy(key.data(), &n, 4);
    std::memcpy(key.data() + 4, left.data(), left.size());
    std::memcpy(key.data() + 4 + left.size(), right.data(), right.size());
    return key;
}

namespace {

struct Bigram {
    int left;
    int right;
    int32_t rank;
    size_t size;  // bytes of the merged text; a mismatch later means a side changed (stale entry)
};

// Lowest rank first; on ties the leftmost pair.
struct BigramGreater {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

void merge_word(const TokenizerImpl& t, const std::string& word, std::vector<int32_t>& out) {
    if (t.ignore_merges) {  // Llama 3: a word that is a token is that token, whatever the merges would build
        if (const int32_t id = t.find(word); id >= 0) {
            out.push_back(id);
            return;
        }
    }
    std::vector<MergeSymbol> syms = utf8_symbols(word);

    std::priority_queue<Bigram, std::vector<Bigram>, BigramGreater> queue;
    auto try_add = [&](int left, int right) {
        if (left < 0 || right < 0) return;
        const std::string_view l(word.data() + syms[left].off, syms[left].n);
        const std::string_view r(word.data() + syms[right].off, syms[right].n);
        const auto it = t.ranks.find(bpe_pair_key(l, r));
        if (it == t.ranks.end()) return;
        queue.push({left, right, it->second, l.size() + r.size()});
    };
    for (int i = 1; i < static_cast<int>(syms.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        if (!merge_symbols(syms, b.left, b.right, b.size)) continue;  // stale entry
        try_add(syms[size_t(b.left)].prev, b.left);
        try_add(b.left, syms[size_t(b.left)].next);
    }

    // Live symbols in index order are the chain order (merges only ever absorb the right neighbour).
    for (const MergeSymbol& s : syms) {
        if (s.n == 0) continue;
        const std::string_view piece(word.data() + s.off, s.n);
        const int32_t id = t.find(piece);
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        // As llama.cpp: each byte of the mapped text on its own, dropped when not a token.
        for (char c : piece) {
            const int32_t b = t.find(std::string_view(&c, 1));
            if (b >= 0) out.push_back(b);
        }
    }
}

}  // namespace

void bpe_encode(const TokenizerImpl& t, std::string_view text, std::vector<int32_t>& out) {
    for (const std::string& word : bpe_pre_tokenize(*t.regex, text)) merge_word(t, word, out);
}

}  // namespace speculum::model::detail
