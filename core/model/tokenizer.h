// Text <-> token ids for GGUF vocabularies: SentencePiece-style ("llama") and byte-level BPE ("gpt2" with the
// GPT-2 pre-tokenizer), giving the same ids as llama.cpp's llama_tokenize / llama_detokenize.
// Not supported: WPM, UGM, RWKV vocabularies and BPE pre-tokenizers other than the GPT-2 family.
#pragma once

#include "core/model/vocab.h"

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace speculum::model {

namespace detail {
struct TokenizerImpl;
}

// Immutable after construction; copies share the tables. encode/decode are safe to call from several threads.
class Tokenizer {
public:
    // Validates the vocabulary and builds the lookup tables. As llama.cpp does, tokens whose text marks an end of
    // turn ("<|endoftext|>", "<|im_end|>", "<|eot_id|>", ...) become control tokens and end generation, as does
    // eos. Throws std::invalid_argument naming the field (e.g. an unsupported tokenizer.ggml.pre).
    static Tokenizer from_vocab(Vocab vocab);

    // add_special: bos (and eos) as the vocabulary's add_bos/add_eos flags say. parse_special: control and
    // unknown-type token texts in `text` ("<s>", "<|endoftext|>") become those tokens; user-defined tokens are
    // always split out first. Any bytes are accepted: invalid UTF-8 is handled as llama.cpp does.
    std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
    // encode() of a text read from `in`, handed to `emit` piece by piece: the same ids as encode() of the whole text
    // in a bounded amount of memory. The text is cut only after a line break between a visible ASCII character and an
    // ASCII letter, where no token of the vocabulary can span (SPM vocabularies whose tokens hold such a break are not
    // cut). A piece is about chunk_bytes, and more than max_unbroken bytes with no place to cut throws
    // std::runtime_error, as does a read error. Returns the number of bytes read.
    uint64_t encode_stream(std::istream& in, bool add_special, bool parse_special,
                           const std::function<void(const std::vector<int32_t>&)>& emit,
                           size_t chunk_bytes = size_t(1) << 20, size_t max_unbroken = size_t(16) << 20) const;

    // The text of `ids` as llama_detokenize(remove_special=false, unparse_special=render_special): control and
    // unknown tokens render only when render_special; SPM drops the space prefix it added while encoding; gpt2
    // vocabularies clean " ," " ." " 's" spacing like llama.cpp. Throws std::out_of_range on an invalid id.
    std::string decode(const std::vector<int32_t>& ids, bool render_special = false) const;

    // One token's bytes (may be part of a UTF-8 character). Throws std::out_of_range on an invalid id.
    std::string token_to_piece(int32_t id, bool render_special = true) const;

    const Vocab& vocab() const;
    int32_t n_tokens() const;
    int32_t bos() const;  // -1 when the vocabulary has none
    int32_t eos() const;
    bool is_eog(int32_t id) const;                  // end of generation (eos, eot, ...); false for invalid ids
    int32_t token_id(std::string_view text) const;  // exact token text lookup, -1 when absent

private:
    explicit Tokenizer(std::shared_ptr<const detail::TokenizerImpl> impl) : m_impl(std::move(impl)) {}
    void check_id(int32_t id) const;

    std::shared_ptr<const detail::TokenizerImpl> m_impl;
};

// The tokenizer a GGUF file describes, or none: the one "tokenizer of this model, or none" helper. Without
// tokenizer metadata (tokenizer.ggml.tokens), or when the vocabulary is refused, returns nullopt and, when why_none
// is given, says why there (the refusal names the key). Callers that need one throw with that reason.
std::optional<Tokenizer> tokenizer_of(const GgufFile& file, std::string* why_none = nullptr);

}  // namespace speculum::model
