// Tokenizer: table building, special-token splitting, encode dispatch to SPM/BPE, and decoding to text.
// Mirrors llama.cpp's llama_vocab::impl (load, tokenizer_st_partition, tokenize, token_to_piece, detokenize).
#include "core/model/tokenizer.h"

#include "core/file_io.h"
#include "core/model/gguf.h"
#include "core/model/tokenizer_impl.h"

#include <algorithm>
#include <cstdlib>
#include <istream>
#include <stdexcept>

namespace speculum::model {

using detail::TokenizerImpl;

namespace {

// Token texts llama.cpp treats as end-of-generation (and forces to control type) whatever the metadata says.
constexpr const char* k_eog_texts[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>",  "<|endoftext|>",
                                       "<|eom_id|>", "<EOT>",      "_<EOT>",  "<|end_of_text|>"};

bool is_special_type(TokenType t) {
    return t == TokenType::control || t == TokenType::user_defined || t == TokenType::unknown;
}

uint8_t byte_of_token(const std::string& text) {
    // "<0xAB>" -> 0xAB, parsed like llama.cpp's token_to_byte (strtol over the two characters after "<0x").
    const std::string hex = text.size() > 3 ? text.substr(3, 2) : std::string();
    return static_cast<uint8_t>(std::strtol(hex.c_str(), nullptr, 16));
}

// Piece of one token with special tokens rendered (llama.cpp's token_to_piece cache, special = true).
std::string make_piece(const Vocab& v, int32_t id) {
    const std::string& text = v.tokens[static_cast<size_t>(id)];
    const TokenType type    = v.type(id);
    if (is_special_type(type)) return text;
    if (type == TokenType::byte) return std::string(1, static_cast<char>(byte_of_token(text)));
    if (type != TokenType::normal) return {};  // undefined / unused render as nothing
    std::string out;
    if (v.model == VocabModel::spm) {
        // U+2581 (E2 96 81) back to spaces.
        for (size_t i = 0; i < text.size(); ++i) {
            if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
                out += ' ';
                i += 2;
            } else {
                out += text[i];
            }
        }
        return out;
    }
    // gpt2: each code point back to its byte; llama.cpp's marker for code points outside the mapping.
    for (uint32_t c : detail::utf8_to_cpts(text)) {
        const int b = detail::byte_from_unicode(c);
        if (b >= 0) {
            out += static_cast<char>(b);
            continue;
        }
        std::string utf8;
        detail::append_utf8(utf8, c);
        out += "[UNK_BYTE_0x";
        static constexpr char k_hex[] = "0123456789abcdef";
        for (unsigned char u : utf8) (out += k_hex[u >> 4]) += k_hex[u & 15];
        out += text + "]";
    }
    return out;
}

// llama.cpp's clean_up_tokenization_spaces, three in-place passes over the decoded bytes.
void clean_spaces(std::string& s) {
    auto pass = [&s](auto&& step) {
        const size_t n = s.size();
        size_t total   = n ? 1 : 0;
        for (size_t i = 1; i < n; ++i) step(i, n, total);
        s.resize(total);
    };
    // " ?", " !", " .", " ," lose the space.
    pass([&s](size_t& i, size_t, size_t& total) {
        const char x = s[i];
        if (s[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
        s[total++] = x;
    });
    // " ' " becomes "'".
    pass([&s](size_t& i, size_t n, size_t& total) {
        const char x = s[i];
        if (x == '\'' && i + 1 < n && s[i - 1] == ' ' && s[i + 1] == ' ') {
            --total;
            s[++i] = '\0';
        }
        s[total++] = x;
    });
    // " 's", " 'm", " 're", " 've" lose the space.
    pass([&s](size_t& i, size_t n, size_t& total) {
        const char x = s[i];
        if (s[i - 1] == ' ' && x == '\'' && i + 1 < n) {
            const char x1 = s[i + 1];
            if (x1 == 's' || x1 == 'm') {
                --total;
            } else if (i + 2 < n) {
                const char x2 = s[i + 2];
                if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
            }
        }
        s[total++] = x;
    });
}

struct Fragment {
    int32_t token;  // -1: raw text [off, off + len) of the input
    size_t off;
    size_t len;
};

// Splits raw-text fragments around special token texts, longest tokens first (tokenizer_st_partition).
std::vector<Fragment> partition(const TokenizerImpl& t, std::string_view text, bool parse_special) {
    std::vector<Fragment> frags;
    if (!text.empty()) frags.push_back({-1, 0, text.size()});
    std::vector<Fragment> next;
    for (int32_t id : t.specials) {
        const TokenType type = t.vocab.type(id);
        if (!parse_special && (type == TokenType::control || type == TokenType::unknown)) continue;
        const std::string& tok = t.vocab.tokens[static_cast<size_t>(id)];
        next.clear();
        for (const Fragment& f : frags) {
            if (f.token >= 0) {
                next.push_back(f);
                continue;
            }
            const std::string_view span = text.substr(f.off, f.len);
            size_t from                 = 0;
            for (size_t hit; (hit = span.find(tok, from)) != std::string_view::npos; from = hit + tok.size()) {
                if (hit > from) next.push_back({-1, f.off + from, hit - from});
                next.push_back({id, 0, 0});
            }
            if (from < span.size()) next.push_back({-1, f.off + from, span.size() - from});
        }
        frags.swap(next);
    }
    return frags;
}

}  // namespace

Tokenizer Tokenizer::from_vocab(Vocab vocab) {
    vocab.validate();
    auto impl    = std::make_shared<TokenizerImpl>();
    Vocab& v     = impl->vocab;
    v            = std::move(vocab);
    const auto n = static_cast<size_t>(v.size());
    if (v.types.empty()) v.types.assign(n, TokenType::normal);

    impl->to_id.reserve(n);
    for (size_t i = 0; i < n; ++i)
        if (!v.tokens[i].empty()) impl->to_id.emplace(v.tokens[i], static_cast<int32_t>(i));

    impl->eog.assign(n, 0);
    for (const char* text : k_eog_texts) {
        const int32_t id = impl->find(text);
        if (id < 0) continue;
        impl->eog[static_cast<size_t>(id)] = 1;
        if (!is_special_type(v.types[static_cast<size_t>(id)])) v.types[static_cast<size_t>(id)] = TokenType::control;
    }
    if (v.eos >= 0) impl->eog[static_cast<size_t>(v.eos)] = 1;

    for (size_t i = 0; i < n; ++i)
        if (is_special_type(v.types[i]) && !v.tokens[i].empty()) impl->specials.push_back(static_cast<int32_t>(i));
    std::stable_sort(impl->specials.begin(), impl->specials.end(), [&v](int32_t a, int32_t b) {
        return v.tokens[static_cast<size_t>(a)].size() > v.tokens[static_cast<size_t>(b)].size();
    });

    if (v.model == VocabModel::bpe) {
        impl->regex                  = detail::bpe_regex_for(v.pre);  // throws for a pre-tokenizer it does not know
        const detail::BpePre& family = *detail::bpe_pre_for(v.pre);
        impl->clean_spaces           = family.clean_spaces;
        impl->ignore_merges          = family.ignore_merges;
        impl->ranks.reserve(v.merges.size());
        for (size_t r = 0; r < v.merges.size(); ++r)  // a repeated pair keeps its first (lowest) rank
            impl->ranks.emplace(detail::bpe_pair_key(v.merges[r].first, v.merges[r].second), static_cast<int32_t>(r));
    }

    impl->pieces.resize(n);
    for (size_t i = 0; i < n; ++i) impl->pieces[i] = make_piece(v, static_cast<int32_t>(i));
    return Tokenizer(std::move(impl));
}

namespace {

// encode() without BOS/EOS. prev_special carries SPM's "a space prefix goes before the first text and after each
// special token" across the pieces of a streamed text.
void encode_text(const TokenizerImpl& t, std::string_view text, bool parse_special, bool& prev_special,
                 std::vector<int32_t>& out) {
    const Vocab& v = t.vocab;
    for (const Fragment& f : partition(t, text, parse_special)) {
        if (f.token >= 0) {
            out.push_back(f.token);
            prev_special = true;
            continue;
        }
        const std::string_view raw = text.substr(f.off, f.len);
        if (v.model == VocabModel::bpe) {
            detail::bpe_encode(t, raw, out);
            continue;
        }
        std::string escaped;
        escaped.reserve(raw.size() + raw.size() / 2 + 3);
        if (v.add_space_prefix && prev_special) escaped += "\xE2\x96\x81";
        for (char c : raw) {
            if (c == ' ')
                escaped += "\xE2\x96\x81";
            else
                escaped += c;
        }
        detail::spm_encode(t, escaped, out);
        prev_special = false;
    }
}

bool ascii_letter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// A streamed text is cut only inside "X\nY", X a visible ASCII character and Y an ASCII letter, after the line
// break. No BPE pre-token crosses such a point, and the pieces before and after it do not depend on what lies
// beyond it (a whitespace run before the break would: GPT-2's "\s+(?!\S)" splits "\n\nT" as "\n" "\n" but ends a
// text's "\n\n" whole). Tested on each pre-tokenizer in TokenizerFiles.StreamedEncodingEqualsWholeText. SPM merges
// across the whole text, so a cut is safe only when no token's text holds a line break followed by a letter; the same
// holds for special-token texts that are split out. Returns whether this vocabulary may be cut.
bool cuts_are_safe(const TokenizerImpl& t, bool parse_special) {
    const Vocab& v = t.vocab;
    for (size_t id = 0; id < t.pieces.size(); ++id) {
        const TokenType type = v.type(static_cast<int32_t>(id));
        const bool split_out = type == TokenType::user_defined || (parse_special && is_special_type(type));
        if (!split_out && !(v.model == VocabModel::spm && type == TokenType::normal)) continue;
        const std::string& piece = t.pieces[id];
        for (size_t i = 0; i + 1 < piece.size(); ++i)
            if (piece[i] == '\n' && ascii_letter(piece[i + 1])) return false;
    }
    return true;
}

}  // namespace

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
    const TokenizerImpl& t = *m_impl;
    const Vocab& v         = t.vocab;
    std::vector<int32_t> out;
    if (add_special && v.add_bos) out.push_back(v.bos);
    bool prev_special = true;
    encode_text(t, text, parse_special, prev_special, out);
    if (add_special && v.add_eos) out.push_back(v.eos);
    return out;
}

uint64_t Tokenizer::encode_stream(std::istream& in, bool add_special, bool parse_special,
                                  const std::function<void(const std::vector<int32_t>&)>& emit, size_t chunk_bytes,
                                  size_t max_unbroken) const {
    const TokenizerImpl& t = *m_impl;
    const Vocab& v         = t.vocab;
    const bool may_cut     = cuts_are_safe(t, parse_special);
    chunk_bytes            = std::max<size_t>(chunk_bytes, 1);
    std::vector<int32_t> ids;
    if (add_special && v.add_bos) ids.push_back(v.bos);
    bool prev_special = true;
    std::string pending;  // text read and not yet encoded
    uint64_t total = 0;
    std::vector<char> buf(chunk_bytes);
    for (bool eof = false; !eof;) {
        in.read(buf.data(), std::streamsize(buf.size()));
        const auto n = size_t(in.gcount());
        if (in.bad()) throw std::runtime_error("read error after " + std::to_string(total) + " bytes");
        eof = n == 0 || in.eof();
        pending.append(buf.data(), n);
        total += n;
        // The last cut point in what is pending: encode up to it and keep the rest.
        // Only the new bytes are searched (from the byte before them), so a long line costs one pass.
        size_t cut = 0;
        if (may_cut && !eof)
            for (size_t i = pending.size(), first = std::max<size_t>(pending.size() - n, 1); i-- > first && cut == 0;)
                if (i >= 2 && pending[i - 1] == '\n' && ascii_letter(pending[i]) && pending[i - 2] > ' ' &&
                    pending[i - 2] <= '~')
                    cut = i;
        if (eof) cut = pending.size();
        if (cut == 0 && !eof) {
            if (pending.size() > max_unbroken)
                throw std::runtime_error(
                    may_cut ? "more than " + byte_size_text(max_unbroken) +
                                  " of text without a line break followed by a letter, where it could be cut "
                                  "(the text is tokenized in pieces to bound memory)"
                            : "more than " + byte_size_text(max_unbroken) +
                                  " of text, and this vocabulary's tokens span line breaks, so it cannot be "
                                  "tokenized in pieces");
            continue;
        }
        encode_text(t, std::string_view(pending).substr(0, cut), parse_special, prev_special, ids);
        pending.erase(0, cut);
        if (eof && add_special && v.add_eos) ids.push_back(v.eos);
        if (!ids.empty()) emit(ids);
        ids.clear();
    }
    return total;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids, bool render_special) const {
    const TokenizerImpl& t = *m_impl;
    std::string out;
    bool strip_space = t.vocab.add_space_prefix;  // only the first token's leading space, as llama.cpp
    for (int32_t id : ids) {
        check_id(id);
        const std::string& piece = t.pieces[static_cast<size_t>(id)];
        const bool hidden =
            !render_special && (t.vocab.type(id) == TokenType::control || t.vocab.type(id) == TokenType::unknown);
        if (!hidden) out.append(piece, strip_space && !piece.empty() && piece[0] == ' ' ? 1 : 0);
        strip_space = false;
    }
    if (t.clean_spaces) clean_spaces(out);
    return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool render_special) const {
    check_id(id);
    const TokenType type = m_impl->vocab.type(id);
    if (!render_special && (type == TokenType::control || type == TokenType::unknown)) return {};
    return m_impl->pieces[static_cast<size_t>(id)];
}

void Tokenizer::check_id(int32_t id) const {
    if (id < 0 || id >= m_impl->vocab.size())
        throw std::out_of_range("token id " + std::to_string(id) + " out of range [0, " +
                                std::to_string(m_impl->vocab.size()) + ")");
}

const Vocab& Tokenizer::vocab() const {
    return m_impl->vocab;
}
int32_t Tokenizer::n_tokens() const {
    return m_impl->vocab.size();
}
int32_t Tokenizer::bos() const {
    return m_impl->vocab.bos;
}
int32_t Tokenizer::eos() const {
    return m_impl->vocab.eos;
}

bool Tokenizer::is_eog(int32_t id) const {
    return id >= 0 && id < m_impl->vocab.size() && m_impl->eog[static_cast<size_t>(id)] != 0;
}

int32_t Tokenizer::token_id(std::string_view text) const {
    return m_impl->find(text);
}

std::optional<Tokenizer> tokenizer_of(const GgufFile& file, std::string* why_none) {
    if (!file.find("tokenizer.ggml.tokens")) {
        if (why_none) *why_none = file.path() + " has no tokenizer metadata (tokenizer.ggml.tokens)";
        return std::nullopt;
    }
    try {
        return Tokenizer::from_vocab(vocab_from_gguf(file));
    } catch (const std::exception& e) {
        if (why_none) *why_none = e.what();
        return std::nullopt;
    }
}

}  // namespace speculum::model
