// The one entry point from a DraftSpec to a running Drafter: a self-draft built from the target's weights, a
// separate GGUF checked for vocabulary compatibility, or Max-Gram with an optional corpus bigram table.
#pragma once

#include "core/cancel.h"
#include "core/drafts/draft_spec.h"
#include "core/drafts/drafter.h"
#include "core/model/forward.h"
#include "core/model/model.h"

#include <functional>
#include <memory>
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

struct ActivationNorms;  // self_draft.h
struct SelfDraft;        // self_draft.h

// Wanda's activation norms for a self-draft spec that prunes by Wanda: over options.calibration_tokens, else the
// spec's calibration suite tokenized as make_drafter does. Empty norms for any other spec. (Include self_draft.h.)
ActivationNorms wanda_norms(const DraftSpec& spec, const model::Model& target, const DrafterOptions& options);

// The one build sequence of a self-draft (kind self), shared by make_drafter, `speculum-cli draft` and the draft
// export: Wanda's activation norms first when its pruning needs them (wanda_norms), then build_self_draft with
// options.progress and options.cancel. What it built (matrices, bytes owned and shared, build time) is the result's.
SelfDraft build_self_draft(const model::Model& target, const DraftSpec& spec, const DrafterOptions& options);

// Validates the spec against the target and builds the drafter. Throws std::invalid_argument (bad spec,
// incompatible vocabulary, missing tokenizer), GgufError (unreadable draft model) or Cancelled.
std::unique_ptr<Drafter> make_drafter(const DraftSpec& spec, const model::Model& target,
                                      const DrafterOptions& options = {});

}  // namespace speculum::drafts
