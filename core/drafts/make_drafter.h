// The one entry point from a DraftSpec to a running Drafter (build_draft), with a report of what it built: a
// self-draft from the target's weights, a separate GGUF checked for vocabulary compatibility, an MTP layer or an
// EAGLE-3 head, or a statistical drafter (Max-Gram with an optional corpus bigram table, llama.cpp's n-gram caches).
#pragma once

#include "core/cancel.h"
#include "core/drafts/draft_spec.h"
#include "core/drafts/drafter.h"
#include "core/drafts/self_draft.h"
#include "core/model/forward.h"
#include "core/model/model.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace speculum::drafts {

// Text -> token ids with the target's tokenizer (for Wanda calibration text and the bigram corpus).
using TokenizeFn = std::function<std::vector<int32_t>(const std::string& text)>;

struct DrafterOptions {
    model::ContextConfig context;  // the draft's own context; n_ctx 0 = the target's training context length
    TokenizeFn tokenize;           // for a corpus named by the spec; empty = the target GGUF's own tokenizer
    // Calibration token sequences for Wanda used instead of tokenizing spec.prune.calibration (when non-empty).
    std::vector<std::vector<int32_t>> calibration_tokens;
    ProgressFn progress;
    CancelToken cancel;
};

// Wanda's activation norms for a self-draft spec that prunes by Wanda: over options.calibration_tokens, else the
// spec's calibration suite tokenized as make_drafter does. Empty norms for any other spec.
ActivationNorms wanda_norms(const DraftSpec& spec, const model::Model& target, const DrafterOptions& options);

// The one build sequence of a self-draft (kind self): build_draft's for that kind, and the draft export's (which
// writes the weights and needs no drafter): Wanda's activation norms first when its pruning needs them (wanda_norms),
// then build_self_draft with options.progress and options.cancel. What it built (matrices, bytes owned and shared,
// build time) is the result's.
SelfDraft build_self_draft(const model::Model& target, const DraftSpec& spec, const DrafterOptions& options);

// FR-Spec's reduced head: the n ids most frequent in `seqs` (ties to the lower id), ascending; every id < n_vocab.
std::vector<int32_t> frequent_tokens(const std::vector<std::vector<int32_t>>& seqs, int32_t n_vocab, int32_t n);
// The head tokens of a spec with head_vocab > 0 (its corpus tokenized by options.tokenize, else the target's
// tokenizer); empty for the full head.
std::vector<int32_t> head_tokens_for(const DraftSpec& spec, const model::Model& target, const DrafterOptions& options);

// What build_draft built: the drafter, and what a report shows of it (`speculum-cli draft`, status lines).
struct DraftBuild {
    std::unique_ptr<Drafter> drafter;
    double seconds = 0;  // wall time of the whole build (loading, activation norms, transforms, tables)
    // Kind self: what the transform pipeline built (matrices, bytes owned and shared); its model shares the
    // drafter's weight buffers, so saving it as a GGUF needs no second build.
    std::optional<SelfDraft> self;
    // Kind model: the draft GGUF as loaded (sharing the drafter's buffers); its vocabulary passed llama.cpp's checks.
    std::optional<model::Model> model;
};

// Validates the spec against the target and builds the drafter. Throws std::invalid_argument (bad spec,
// incompatible vocabulary, missing tokenizer), GgufError (unreadable draft model) or Cancelled.
DraftBuild build_draft(const DraftSpec& spec, const model::Model& target, const DrafterOptions& options = {});

// build_draft's drafter alone.
std::unique_ptr<Drafter> make_drafter(const DraftSpec& spec, const model::Model& target,
                                      const DrafterOptions& options = {});

}  // namespace speculum::drafts
