// Saving a self-draft as a GGUF that llama.cpp and Speculum load as an ordinary model: the target's metadata
// (tokenizer included, so the file passes the vocabulary check against its target), the draft's tensors in their
// stored types (BF16 / F16 / Q8_0 / MXFP4 ...), and an early-exit draft cut to its first exit_layer + 1 layers.
#pragma once

#include "core/drafts/self_draft.h"

#include <string>

namespace speculum::drafts {

// Throws std::invalid_argument when the draft cannot be a plain GGUF: skip sets (a GGUF cannot skip sublayers)
// or KV transforms (runtime behaviour, not weights) unless `allow_runtime_only` (then they are just not saved).
void save_self_draft_gguf(const model::Model& target, const SelfDraft& draft, const DraftSpec& spec,
                          const std::string& path, bool allow_runtime_only = false);

}  // namespace speculum::drafts
