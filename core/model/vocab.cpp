// Vocab names and validation (the GGUF reading is in vocab_gguf.cpp).
#include "core/model/vocab.h"

#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>

namespace speculum::model {

static void fail(const std::string& field, const std::string& reason) {
    throw std::invalid_argument(field + ": " + reason);
}

void Vocab::validate() const {
    const size_t n = tokens.size();
    if (n == 0) fail("tokenizer.ggml.tokens", "empty vocabulary");
    if (n > static_cast<size_t>(INT32_MAX)) fail("tokenizer.ggml.tokens", "more than 2^31-1 tokens");
    if (!scores.empty() && scores.size() != n)
        fail("tokenizer.ggml.scores", std::to_string(scores.size()) + " scores for " + std::to_string(n) + " tokens");
    if (!types.empty() && types.size() != n)
        fail("tokenizer.ggml.token_type", std::to_string(types.size()) + " types for " + std::to_string(n) + " tokens");
    for (size_t i = 0; i < types.size(); ++i) {
        const auto t = static_cast<int32_t>(types[i]);
        if (t < 0 || t > static_cast<int32_t>(TokenType::byte))
            fail("tokenizer.ggml.token_type", "token " + std::to_string(i) + " has unknown type " + std::to_string(t));
    }
    const std::pair<const char*, int32_t> ids[] = {
        {"tokenizer.ggml.bos_token_id", bos},       {"tokenizer.ggml.eos_token_id", eos},
        {"tokenizer.ggml.unknown_token_id", unk},   {"tokenizer.ggml.padding_token_id", pad},
        {"tokenizer.ggml.seperator_token_id", sep},
    };
    for (const auto& [key, id] : ids) {
        if (id < -1 || id >= static_cast<int64_t>(n))
            fail(key, "id " + std::to_string(id) + " out of range [0, " + std::to_string(n) + ")");
    }
    if (add_bos && bos < 0) fail("tokenizer.ggml.add_bos_token", "true, but tokenizer.ggml.bos_token_id is not set");
    if (add_eos && eos < 0) fail("tokenizer.ggml.add_eos_token", "true, but tokenizer.ggml.eos_token_id is not set");

    std::unordered_map<std::string_view, size_t> seen;
    seen.reserve(n);
    for (size_t i = 0; i < n; ++i) {
        if (tokens[i].empty()) continue;  // llama.cpp renames empty tokens; they can never be matched
        auto [it, inserted] = seen.emplace(tokens[i], i);
        if (!inserted)
            fail("tokenizer.ggml.tokens", "duplicate token '" + tokens[i] + "' at ids " + std::to_string(it->second) +
                                              " and " + std::to_string(i));
    }

    if (model == VocabModel::bpe) {
        if (merges.empty()) fail("tokenizer.ggml.merges", "a gpt2 (BPE) vocabulary needs merges");
        for (size_t i = 0; i < merges.size(); ++i) {
            if (merges[i].first.empty() || merges[i].second.empty())
                fail("tokenizer.ggml.merges", "merge " + std::to_string(i) + " has an empty side");
        }
    }
}

}  // namespace speculum::model
