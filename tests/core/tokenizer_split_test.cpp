// The PCRE2 GPT-2 pre-tokenizer against a reference of llama.cpp's hand-written splitter (a state machine over
// code-point classes, unicode.cpp unicode_regex_split_custom_gpt2), on seeded random strings of tricky pieces:
// whitespace runs of every kind, contractions, combining marks, several number categories, invalid UTF-8.
#include "core/model/tokenizer_impl.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <gtest/gtest.h>

#include <random>

using namespace speculum::model;

namespace {

// One-character class test through PCRE2's Unicode tables (\p{L}, \p{N}); whitespace is Unicode White_Space,
// the set llama.cpp uses.
class Classes {
public:
    Classes() : m_letter(compile("^\\p{L}$")), m_number(compile("^\\p{N}$")) {}
    ~Classes() {
        pcre2_code_free(m_letter);
        pcre2_code_free(m_number);
    }
    bool letter(uint32_t c) const { return is(m_letter, c); }
    bool number(uint32_t c) const { return is(m_number, c); }
    static bool space(uint32_t c) {
        return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
               (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
    }

private:
    static pcre2_code* compile(const char* p) {
        int err;
        PCRE2_SIZE at;
        return pcre2_compile(reinterpret_cast<PCRE2_SPTR>(p), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err, &at,
                             nullptr);
    }
    static bool is(pcre2_code* re, uint32_t c) {
        if (c >= 0xD800 && c <= 0xDFFF) return false;  // surrogates: "other" (category Cs)
        std::string s;
        detail::append_utf8(s, c);
        pcre2_match_data* md = pcre2_match_data_create(4, nullptr);
        const int rc         = pcre2_match(re, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), 0, 0, md, nullptr);
        pcre2_match_data_free(md);
        return rc > 0;
    }
    pcre2_code* m_letter;
    pcre2_code* m_number;
};

// llama.cpp's GPT-2 splitter, restated: at each position try contractions, then " ?letters", " ?numbers",
// " ?others", then a whitespace run that leaves its last character when more text follows, else the whole run.
std::vector<std::string> reference_split(const Classes& cls, const std::string& text) {
    const std::vector<uint32_t> cp = detail::utf8_to_cpts(text);
    const size_t n                 = cp.size();
    enum Kind { none, letter, number, space, other };
    auto kind = [&](size_t i) -> Kind {
        if (i >= n) return none;
        if (cls.letter(cp[i])) return letter;
        if (cls.number(cp[i])) return number;
        if (Classes::space(cp[i])) return space;
        return other;
    };
    std::vector<std::string> words;
    auto emit = [&](size_t a, size_t b) {
        std::string w;
        for (size_t i = a; i < b; ++i) detail::append_utf8(w, cp[i]);
        words.push_back(w);
    };
    for (size_t pos = 0; pos < n;) {
        if (cp[pos] == '\'' && pos + 1 < n) {
            const uint32_t c1 = cp[pos + 1];
            if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
                emit(pos, pos + 2), pos += 2;
                continue;
            }
            if (pos + 2 < n) {
                const uint32_t c2 = cp[pos + 2];
                if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
                    emit(pos, pos + 3), pos += 3;
                    continue;
                }
            }
        }
        const size_t body = pos + (cp[pos] == ' ' ? 1 : 0);  // the optional leading space
        const Kind k      = kind(body);
        if (k == letter || k == number || k == other) {
            size_t end = body;
            while (kind(end) == k) ++end;
            emit(pos, end), pos = end;
            continue;
        }
        size_t run = 0;
        while (kind(pos + run) == space) ++run;
        const size_t take = run > 1 && pos + run < n ? run - 1 : run;
        emit(pos, pos + take), pos += take;
    }
    return words;
}

std::vector<std::string> pcre_split(const std::string& text) {
    static const auto re = detail::bpe_regex_for("gpt-2");
    std::vector<std::string> out;
    for (const auto& w : detail::bpe_pre_tokenize(*re, text)) {
        std::string bytes;
        for (uint32_t c : detail::utf8_to_cpts(w)) bytes += static_cast<char>(detail::byte_from_unicode(c));
        out.push_back(bytes);
    }
    return out;
}

}  // namespace

TEST(TokenizerSplit, Gpt2RegexMatchesLlamaCppSplitter) {
    const char* pieces[] = {
        "a",
        "Zq",
        "\xC3\xA9",
        "\xD0\xB6",
        "\xE4\xB8\xAD",
        "\xF0\x9F\x98\x80",
        "\xCC\x80" /* U+0300 Mn */,
        "1",
        "42",
        "\xD9\xA3" /* U+0663 Nd */,
        "\xE2\x85\xAB" /* U+216B Nl */,
        "\xC2\xBD" /* U+00BD No */,
        " ",
        "  ",
        "\t",
        "\n",
        "\r\n",
        "\v",
        "\f",
        "\xC2\xA0",
        "\xE2\x80\x83",
        "\xE3\x80\x80",
        "\xC2\x85",
        "\xE2\x80\xA8",
        "\xE1\xA0\x8E" /* U+180E */,
        "\xE2\x80\x8B" /* U+200B Cf */,
        "'",
        "'s",
        "'t",
        "'re",
        "'ve",
        "'m",
        "'ll",
        "'d",
        "'S",
        "'x",
        ".",
        ",",
        "!",
        "-",
        "$",
        "(",
        "\xFF",
        "\xE2\x82",
        "\xED\xA0\x80",
        "\x01",
    };
    const Classes cls;
    std::mt19937 rng(20261121);
    int compared = 0;
    for (int iter = 0; iter < 4000; ++iter) {
        std::string s;
        const int k = 1 + static_cast<int>(rng() % 14);
        for (int i = 0; i < k; ++i) s += pieces[rng() % std::size(pieces)];
        const auto expect = reference_split(cls, s);
        ASSERT_EQ(pcre_split(s), expect) << "input: " << ::testing::PrintToString(s);
        ++compared;
    }
    EXPECT_EQ(compared, 4000);
}

TEST(TokenizerSplit, ReferenceSplitterIsNotTrivial) {
    // The reference must disagree with a naive rule somewhere, or the comparison above would prove little.
    const Classes cls;
    using V = std::vector<std::string>;
    EXPECT_EQ(reference_split(cls, "  Hello"), (V{" ", " Hello"}));
    EXPECT_EQ(reference_split(cls, "x  "), (V{"x", "  "}));
    EXPECT_EQ(reference_split(cls, "a\xCC\x80"), (V{"a", "\xCC\x80"}));  // a combining mark is not \p{L}
    EXPECT_EQ(reference_split(cls, "'re'S"), (V{"'re", "'", "S"}));
}
