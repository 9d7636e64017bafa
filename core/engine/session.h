// From a SpecConfig to a runnable engine: the draft stack built from the levels' DraftSpecs (make_drafter; model
// levels also review inside cascades), and the prompts of a run (token ids, text, or a JSONL dataset).
#pragma once

#include "core/drafts/make_drafter.h"
#include "core/engine/cascade.h"
#include "core/engine/spec_config.h"
#include "core/model/tokenizer.h"

#include <memory>
#include <string>
#include <vector>

namespace speculum::engine {

// Builds every level with drafts::make_drafter and assembles the stack (build_draft_stack). A level that reviews
// in a cascade uses the drafter's own model and forward options (self-drafts, separate models).
std::shared_ptr<CompositeDrafter> make_draft_stack(const SpecConfig& cfg, const model::Model& target,
                                                   const drafts::DrafterOptions& options = {});

struct RunPrompt {
    std::string id;  // dataset id, or "prompt"
    std::string task;
    std::vector<int32_t> tokens;
    int32_t max_new_tokens = 0;  // from the config (datasets: the line's value, capped by the config's)
};

// The prompts a config asks for: dataset (filtered by task, at most max_prompts), else the text prompt, else
// prompt_ids. Text needs `tokenizer` (std::invalid_argument naming the field otherwise). Errors name the field.
std::vector<RunPrompt> resolve_prompts(const SpecConfig& cfg, const model::Tokenizer* tokenizer);

}  // namespace speculum::engine
