// vocab_from_gguf: the tokenizer.ggml.* metadata keys into a Vocab, with llama.cpp's defaults for absent keys.
#include "core/model/gguf.h"
#include "core/model/vocab.h"

#include "core/model/tokenizer_impl.h"  // BPE pre-tokenizer families (the add_bos default)

#include <stdexcept>
#include <string>

namespace speculum::model {

namespace {

// An optional token id: absent keeps the default; present must be an integer in [0, n_tokens).
int32_t read_token_id(const GgufFile& f, const char* key, int32_t fallback, size_t n_tokens) {
    if (!f.find(key)) return fallback;
    const uint64_t id = f.get_uint(key);  // wrong types and negative values fail here, naming the key
    if (id >= n_tokens)
        f.fail(key, "token id " + std::to_string(id) + " out of range [0, " + std::to_string(n_tokens) + ")");
    return static_cast<int32_t>(id);
}

const GgufValue& read_array(const GgufFile& f, const char* key) {
    const GgufValue* v = f.find(key);
    if (!v) f.fail(key, "missing");
    if (v->type != GgufType::ARRAY) f.fail(key, std::string("expected an array, got ") + gguf_type_name(v->type));
    return *v;
}

}  // namespace

Vocab vocab_from_gguf(const GgufFile& f) {
    Vocab v;
    const std::string model = f.get_string("tokenizer.ggml.model");
    if (model == "llama") {
        v.model = VocabModel::spm;
    } else if (model == "gpt2") {
        v.model = VocabModel::bpe;
    } else {
        f.fail("tokenizer.ggml.model", "unsupported tokenizer '" + model + "' (supported: llama, gpt2)");
    }
    v.pre           = f.get_string_or("tokenizer.ggml.pre", "");
    v.chat_template = f.get_string_or("tokenizer.chat_template", "");

    const GgufValue& tokens = read_array(f, "tokenizer.ggml.tokens");
    if (tokens.array_type != GgufType::STRING)
        f.fail("tokenizer.ggml.tokens",
               std::string("expected an array of string, got array of ") + gguf_type_name(tokens.array_type));
    if (tokens.strings.empty()) f.fail("tokenizer.ggml.tokens", "empty vocabulary");
    if (tokens.strings.size() > static_cast<size_t>(INT32_MAX)) f.fail("tokenizer.ggml.tokens", "too many tokens");
    v.tokens       = tokens.strings;
    const size_t n = v.tokens.size();

    if (const GgufValue* s = f.find("tokenizer.ggml.scores")) {
        if (s->type != GgufType::ARRAY || !(s->array_type == GgufType::FLOAT32 || s->array_type == GgufType::INT32))
            f.fail("tokenizer.ggml.scores", "expected an array of float32 or int32");
        const size_t m = s->array_type == GgufType::FLOAT32 ? s->floats.size() : s->ints.size();
        if (m != n) f.fail("tokenizer.ggml.scores", std::to_string(m) + " scores for " + std::to_string(n) + " tokens");
        v.scores.resize(n);
        for (size_t i = 0; i < n; ++i)
            v.scores[i] =
                s->array_type == GgufType::FLOAT32 ? static_cast<float>(s->floats[i]) : static_cast<float>(s->ints[i]);
    }
    if (const GgufValue* t = f.find("tokenizer.ggml.token_type")) {
        if (t->type != GgufType::ARRAY || t->array_type != GgufType::INT32)
            f.fail("tokenizer.ggml.token_type", "expected an array of int32");
        if (t->ints.size() != n)  // longer is refused as shorter is: the file's arrays disagree
            f.fail("tokenizer.ggml.token_type",
                   std::to_string(t->ints.size()) + " types for " + std::to_string(n) + " tokens");
        v.types.resize(n);
        for (size_t i = 0; i < n; ++i) {
            const int64_t x = t->ints[i];
            // llama.cpp maps unknown values to "undefined" (a token that decodes to nothing); so do we.
            v.types[i] = (x >= 0 && x <= static_cast<int64_t>(TokenType::byte)) ? static_cast<TokenType>(x)
                                                                                : TokenType::undefined;
        }
    }

    if (v.model == VocabModel::bpe) {
        const GgufValue& merges = read_array(f, "tokenizer.ggml.merges");
        if (merges.array_type != GgufType::STRING) f.fail("tokenizer.ggml.merges", "expected an array of string");
        v.merges.reserve(merges.strings.size());
        for (size_t i = 0; i < merges.strings.size(); ++i) {
            const std::string& m = merges.strings[i];
            // llama.cpp splits at the first space after the first byte: "Ġ t" -> ("Ġ", "t"), "  x" -> (" ", "x").
            const size_t pos = m.size() > 1 ? m.find(' ', 1) : std::string::npos;
            if (pos == std::string::npos || pos + 1 >= m.size())
                f.fail("tokenizer.ggml.merges", "merge " + std::to_string(i) + " '" + m + "' is not 'LEFT RIGHT'");
            v.merges.emplace_back(m.substr(0, pos), m.substr(pos + 1));
        }
    }

    // Defaults as in llama.cpp's llama_vocab::impl::load (gpt2's legacy default id 11 is not copied).
    const bool spm            = v.model == VocabModel::spm;
    v.bos                     = read_token_id(f, "tokenizer.ggml.bos_token_id", spm && n > 1 ? 1 : -1, n);
    v.eos                     = read_token_id(f, "tokenizer.ggml.eos_token_id", spm && n > 2 ? 2 : -1, n);
    v.unk                     = read_token_id(f, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1, n);
    v.pad                     = read_token_id(f, "tokenizer.ggml.padding_token_id", -1, n);
    v.sep                     = read_token_id(f, "tokenizer.ggml.seperator_token_id", -1, n);  // sic: llama.cpp's key
    const detail::BpePre* pre = v.model == VocabModel::bpe ? detail::bpe_pre_for(v.pre) : nullptr;
    v.add_bos          = f.get_bool_or("tokenizer.ggml.add_bos_token", spm || (pre && pre->add_bos && v.bos >= 0));
    v.add_eos          = f.get_bool_or("tokenizer.ggml.add_eos_token", false);
    v.add_space_prefix = f.get_bool_or("tokenizer.ggml.add_space_prefix", spm);

    try {
        v.validate();
    } catch (const std::invalid_argument& e) {
        // e.what() is "KEY: reason"; re-raise as "FILE: KEY: reason".
        const std::string what = e.what();
        const size_t colon     = what.find(": ");
        if (colon == std::string::npos) f.fail("tokenizer", what);
        f.fail(what.substr(0, colon), what.substr(colon + 2));
    }
    return v;
}

}  // namespace speculum::model
