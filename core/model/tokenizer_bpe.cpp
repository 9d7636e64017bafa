// Byte-level BPE ("gpt2" vocabularies): the GPT-2 pre-tokenizer regex (PCRE2, UTF + UCP) splits text into
// words, each word's bytes go through GPT-2's byte -> code point mapping, then merges apply in rank order.
// Same results as llama.cpp's llm_tokenizer_bpe with its custom GPT-2 splitter (see the notes on \s below).
#include "core/model/tokenizer_impl.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cstring>
#include <queue>
#include <stdexcept>

namespace speculum::model::detail {

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ : GPT-2's pattern. llama.cpp's
// hand-written splitter behaves like it, with one difference that we reproduce by rewriting the subject: its
// whitespace set is Unicode White_Space, whereas PCRE2's \s also matches U+180E (see bpe_pre_tokenize).
static constexpr const char* k_gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// tokenizer.ggml.pre values that llama.cpp maps to this pattern (LLAMA_VOCAB_PRE_TYPE_GPT2 / MPT / OLMO / JAIS)
// and that need nothing else (no add_sep, default space cleaning).
static constexpr const char* k_gpt2_pres[] = {"gpt-2", "phi-2", "mpt", "olmo", "jais", "gigachat", "exaone4"};

struct BpeRegex {
    pcre2_code* code = nullptr;
    bool jit         = false;
    ~BpeRegex() { pcre2_code_free(code); }
};

std::shared_ptr<const BpeRegex> bpe_regex_for(const std::string& pre) {
    bool known = false;
    for (const char* p : k_gpt2_pres) known = known || pre == p;
    if (!known) {
        std::string list;
        for (const char* p : k_gpt2_pres) list += std::string(list.empty() ? "" : ", ") + p;
        throw std::invalid_argument("tokenizer.ggml.pre: pre-tokenizer '" + pre +
                                    "' is not supported for gpt2 vocabularies (supported: " + list + ")");
    }
    auto re = std::make_shared<BpeRegex>();
    int err        = 0;
    PCRE2_SIZE at  = 0;
    re->code       = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(k_gpt2_pattern), PCRE2_ZERO_TERMINATED,
                                   PCRE2_UTF | PCRE2_UCP, &err, &at, nullptr);
    if (!re->code) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(err, msg, sizeof msg);
        throw std::runtime_error(std::string("PCRE2 cannot compile the GPT-2 pattern: ") +
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
