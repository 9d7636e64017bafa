// Tokenizer vocabulary as stored in GGUF metadata (tokenizer.ggml.*): a plain value type, filled by
// vocab_from_gguf() or built by hand in tests. It holds data only; encoding lives in tokenizer.h.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace speculum::model {

class GgufFile;

// tokenizer.ggml.model: "llama" is SentencePiece-style BPE over scores, "gpt2" byte-level BPE over merges.
enum class VocabModel { spm, bpe };

// tokenizer.ggml.token_type values, numbered as llama.cpp writes them.
enum class TokenType : int32_t {
    undefined    = 0,
    normal       = 1,
    unknown      = 2,
    control      = 3,
    user_defined = 4,
    unused       = 5,
    byte         = 6,
};

struct Vocab {
    VocabModel model = VocabModel::spm;
    std::vector<std::string> tokens;                          // id -> text (SPM: spaces as U+2581; BPE: byte-mapped)
    std::vector<float> scores;                                // id -> score (SPM merge priority); empty = all 0
    std::vector<TokenType> types;                             // id -> type; empty = all normal
    std::vector<std::pair<std::string, std::string>> merges;  // BPE: merge rank = index (0 merges first)
    int32_t bos           = -1;                               // special ids, -1 when absent
    int32_t eos           = -1;
    int32_t unk           = -1;
    int32_t pad           = -1;
    int32_t sep           = -1;
    bool add_bos          = false;  // encode(add_special=true) prepends bos
    bool add_eos          = false;  // encode(add_special=true) appends eos
    bool add_space_prefix = false;  // SPM: a leading space before text (llama default true); decode strips it
    std::string pre;                // tokenizer.ggml.pre ("gpt-2", "default", ...); empty when absent
    std::string chat_template;      // tokenizer.chat_template (Jinja text; data/chat_template.h); empty when absent

    int32_t size() const { return static_cast<int32_t>(tokens.size()); }
    TokenType type(int32_t id) const { return types.empty() ? TokenType::normal : types[static_cast<size_t>(id)]; }
    float score(int32_t id) const { return scores.empty() ? 0.0f : scores[static_cast<size_t>(id)]; }

    // Throws std::invalid_argument naming the field: empty vocabulary, scores/types length differing from the
    // token count, unknown token types, special ids out of range, add_bos/add_eos without the id, duplicate
    // token texts, BPE without merges or with an empty merge side.
    void validate() const;

    bool operator==(const Vocab&) const = default;
};

// Reads the tokenizer.ggml.* keys. Defaults follow llama.cpp: "llama" gets bos=1, eos=2, unk=0, add_bos=true,
// add_space_prefix=true when the keys are absent; "gpt2" gets no special ids and add_bos=false.
// Throws GgufError "FILE: KEY: reason" for missing keys, wrong types, bad merges and failed validation.
Vocab vocab_from_gguf(const GgufFile& file);

}  // namespace speculum::model
