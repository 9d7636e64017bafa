// Byte-level BPE ("gpt2" vocabularies): the pre-tokenizer's regexes (PCRE2, UTF + UCP; one or several in turn, by
// tokenizer.ggml.pre) split text into words, each word's bytes go through GPT-2's byte -> code point mapping,
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
// Qwen 3.5's: Qwen 2's with combining marks kept in words.
static constexpr const char* k_qwen35_pattern =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Mistral's Tekken (Nemo and later): words split at case changes (an upper run then a lower run); digits alone.
// llama.cpp writes "a letter that is not a-z" as ((?=[\p{L}])([^a-z])); here it is the class [^\P{L}a-z], the same
// set: a repeated group saves a frame per letter, so a 1 MiB run of letters took 1.3 GB and hit PCRE2's match
// limit, where a repeated class backtracks in place (issue #51, item 5).
static constexpr const char* k_tekken_pattern =
    R"([^\r\n\p{L}\p{N}]?[^\P{L}a-z]*[^\P{L}A-Z]+|[^\r\n\p{L}\p{N}]?[^\P{L}a-z]+[^\P{L}A-Z]*|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// GPT-4o's o200k (Llama 4): Tekken's case split (its classes) with contractions attached, digits in threes.
static constexpr const char* k_gpt4o_pattern =
    R"([^\r\n\p{L}\p{N}]?[^\P{L}a-z]*[^\P{L}A-Z]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\r\n\p{L}\p{N}]?[^\P{L}a-z]+[^\P{L}A-Z]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek V3 / R1's main pattern: a punctuation mark may lead an ASCII word, letters keep their marks.
static constexpr const char* k_deepseek3_pattern =
    R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// DeepSeek LLM's letters (an explicit list of cased scripts, from its tokenizer.json).
static constexpr const char* k_deepseek_llm_letters =
    R"(\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+)";
static constexpr const char* k_cjk_hangul    = R"([一-龥ࠀ-一가-퟿]+)";
static constexpr const char* k_bloom_pattern = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

// tokenizer.ggml.pre values and what llama.cpp's llama_vocab::impl::load sets for each: the split patterns in
// order, ignore_merges, clean_spaces, add_bos.
using P                      = std::array<const char*, BpePre::kMaxPatterns>;
static const BpePre k_pres[] = {
    {"gpt-2", P{k_gpt2_pattern}, false, true, false},
    {"phi-2", P{k_gpt2_pattern}, false, true, false},
    {"mpt", P{k_gpt2_pattern}, false, true, false},
    {"olmo", P{k_gpt2_pattern}, false, true, false},
    {"jais", P{k_gpt2_pattern}, false, true, false},
    {"gigachat", P{k_gpt2_pattern}, false, true, false},
    {"exaone4", P{k_gpt2_pattern}, false, true, false},
    {"llama-bpe", P{k_llama3_pattern}, true, true, true},  // Llama 3.x: whole words in the vocabulary skip the merges
    {"llama3", P{k_llama3_pattern}, true, true, true},
    {"llama-v3", P{k_llama3_pattern}, true, true, true},
    {"falcon3", P{k_llama3_pattern}, true, true, true},
    {"pixtral", P{k_llama3_pattern}, true, true, true},
    {"dbrx", P{k_llama3_pattern}, false, true, false},
    {"smaug-bpe", P{k_llama3_pattern}, false, true, false},
    {"glm4", P{k_llama3_pattern}, false, true, false},
    {"chatglm-bpe", P{k_llama3_pattern}, false, true, false},
    {"qwen2", P{k_qwen2_pattern}, false, false, false},  // Qwen 2, 2.5 and 3
    {"deepseek-r1-qwen", P{k_qwen2_pattern}, false, false, false},
    {"megrez", P{k_qwen2_pattern}, false, true, false},
    {"stablelm2", P{k_qwen2_pattern}, false, true, false},
    {"qwen35", P{k_qwen35_pattern}, false, false, false},
    {"deepseek-llm",
     P{"[\r\n]", k_deepseek_llm_letters, R"(\s?[!-/:-~！-／：-～‘-‟　-。]+)", R"(\s+$)", k_cjk_hangul, R"(\p{N}+)"},
     false, false, false},
    {"deepseek-coder", P{"[\r\n]", R"(\s?\p{L}+)", R"(\s?\p{P}+)", k_cjk_hangul, R"(\p{N})"}, false, false, false},
    {"deepseek-v3", P{R"(\p{N}{1,3})", R"([一-龥぀-ゟ゠-ヿ]+)", k_deepseek3_pattern}, false, false, false},
    {"falcon", P{R"([\p{P}\$\+<=>\^~\|`]+)", k_gpt2_pattern, "[0-9][0-9][0-9]"}, false, true, false},
    {"starcoder", P{R"(\p{N})", k_gpt2_pattern}, false, true, false},
    {"refact", P{R"(\p{N})", k_gpt2_pattern}, false, true, false},
    {"codeshell", P{R"(\p{N})", k_gpt2_pattern}, false, true, false},
    {"exaone", P{R"(\p{N})", k_gpt2_pattern}, false, true, false},
    {"minerva-7b", P{R"(\p{N})", k_gpt2_pattern}, false, true, false},
    {"command-r", P{R"(\p{N})", k_gpt2_pattern}, false, false, false},
    {"smollm", P{R"(\p{N})", k_gpt2_pattern}, false, false, false},
    {"tekken", P{k_tekken_pattern}, true, false, true},
    {"gpt-4o", P{k_gpt4o_pattern}, false, true, false},
    {"llama4", P{k_gpt4o_pattern}, false, true, false},
    {"bloom", P{k_bloom_pattern}, false, true, false},
    {"poro-chat", P{k_bloom_pattern}, false, false, false},
    {"gpt3-finnish", P{k_bloom_pattern}, false, true, false},
    {"viking", P{k_bloom_pattern, R"(\p{N})"}, false, false, false},
};

const BpePre* bpe_pre_for(const std::string& pre) {
    for (const BpePre& p : k_pres)
        if (pre == p.name) return &p;
    return nullptr;
}

std::string bpe_pre_names() {
    std::string list;
    for (const BpePre& p : k_pres) list += std::string(list.empty() ? "" : ", ") + p.name;
    return list;
}

struct BpeRegex {
    std::vector<pcre2_code*> codes;  // one per pattern of the family, applied in turn
    ~BpeRegex() {
        for (pcre2_code* c : codes) pcre2_code_free(c);
    }
};

std::shared_ptr<const BpeRegex> bpe_regex_for(const std::string& pre) {
    const BpePre* spec = bpe_pre_for(pre);
    if (!spec)
        throw std::invalid_argument("tokenizer.ggml.pre: pre-tokenizer '" + pre +
                                    "' is not supported for gpt2 vocabularies (supported: " + bpe_pre_names() + ")");
    auto re = std::make_shared<BpeRegex>();
    for (const char* pattern : spec->patterns) {
        if (!pattern) break;
        int err          = 0;
        PCRE2_SIZE at    = 0;
        pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED,
                                         PCRE2_UTF | PCRE2_UCP, &err, &at, nullptr);
        if (!code) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(err, msg, sizeof msg);
            throw std::runtime_error("PCRE2 cannot compile the '" + pre +
                                     "' pattern: " + reinterpret_cast<const char*>(msg));
        }
        pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);  // optional: the interpreter is the fallback
        re->codes.push_back(code);
    }
    return re;
}

namespace {

// Splits subject[a, b) by one pattern into its matches and the text between them, appending the pieces' ends to
// `ends`. The piece is matched on its own (as llama.cpp does): ^, $ and lookarounds see only the piece.
void split_piece(pcre2_code* code, pcre2_match_data* md, const std::string& subject, size_t a, size_t b,
                 std::vector<size_t>& ends) {
    const auto* subj = reinterpret_cast<PCRE2_SPTR>(subject.data() + a);
    const size_t len = b - a;
    size_t pos       = 0;
    while (pos < len) {
        // PCRE2_NO_UTF_CHECK: the subject is valid by construction, and the check would rescan it on every call.
        uint32_t opts = PCRE2_NO_UTF_CHECK;
        int rc        = pcre2_match(code, subj, len, pos, opts, md, nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) rc = pcre2_match(code, subj, len, pos, opts | PCRE2_NO_JIT, md, nullptr);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            throw std::runtime_error(std::string("pre-tokenizer: PCRE2 match failed: ") +
                                     reinterpret_cast<const char*>(msg));
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        if (ov[0] > pos) ends.push_back(a + ov[0]);  // text the pattern skipped stays a piece of its own
        size_t end = ov[1];
        if (end == ov[0]) end = std::min(ov[0] + utf8_len(subject[a + ov[0]]), len);  // never loop
        ends.push_back(a + end);
        pos = end;
    }
    if (pos < len) ends.push_back(b);
}

}  // namespace

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

    std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> md(pcre2_match_data_create(64, nullptr),
                                                                           &pcre2_match_data_free);
    if (!md) throw std::bad_alloc();
    // Piece boundaries (ends, ascending); each pattern refines every piece the previous ones made.
    std::vector<size_t> ends{subject.size()}, next;
    for (pcre2_code* code : re.codes) {
        next.clear();
        size_t a = 0;
        for (size_t b : ends) {
            split_piece(code, md.get(), subject, a, b, next);
            a = b;
        }
        ends.swap(next);
    }

    std::vector<std::string> words;
    words.reserve(ends.size());
    size_t a = 0;
    for (size_t b : ends) {
        if (b == a) continue;
        std::string w;
        w.reserve(2 * (b - a));
        for (size_t i = a; i < b; ++i) w += byte_to_unicode(static_cast<uint8_t>(raw[i]));
        words.push_back(std::move(w));
        a = b;
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
