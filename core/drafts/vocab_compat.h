// Can a separate draft model speculate for the target? The checks of llama.cpp's common_speculative_are_compatible
// on GGUF tokenizer metadata: same vocab type, same BOS/EOS ids and add-flags, vocabulary sizes within 128, and
// identical token text from id 5 on. A refusal names the check that failed and the values that differ.
#pragma once

#include "core/model/gguf.h"
#include "core/model/model.h"

#include <stdexcept>
#include <string>

namespace speculum::drafts {

struct VocabMismatch : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

constexpr int32_t kVocabMaxSizeDifference = 128;  // llama.cpp SPEC_VOCAB_MAX_SIZE_DIFFERENCE
constexpr int32_t kVocabCheckStartTokenId = 5;    // llama.cpp SPEC_VOCAB_CHECK_START_TOKEN_ID

// Empty when compatible, else the reason ("vocab type differs: target 'llama', draft 'gpt2'").
std::string vocab_incompatibility(const model::GgufFile& target, const model::GgufFile& draft);

// Throws VocabMismatch with "draft 'PATH' cannot speculate for target 'PATH': REASON". When neither model carries
// tokenizer metadata (in-memory or random-weight models) only n_vocab is compared, and it must be equal; when only
// one does, the other is refused. A draft with more logits than the target has tokens is refused too.
void check_vocab_compatible(const model::Model& target, const model::Model& draft);

}  // namespace speculum::drafts
