// Plain autoregressive generation (no speculation): prefill the prompt (prefill_as_verified), then sample and
// decode one token at a time. The baseline every speculative run is compared against, and the engine of
// `speculum-cli generate`.
#pragma once

#include "core/cancel.h"
#include "core/model/forward.h"
#include "core/model/sampler.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace speculum::model {

struct GenerateStats {
    int32_t n_prompt  = 0;    // prompt tokens evaluated
    int32_t n_decoded = 0;    // tokens generated (the first one comes from the prefill logits)
    int32_t n_eval    = 0;    // single-token decode passes run (n_decoded - 1 unless stopped early)
    double t_prompt_s = 0.0;  // prefill wall time
    double t_decode_s = 0.0;  // wall time of the decode steps (sampling included)
};

// Appends up to n_new tokens after `prompt` (which must fit the context with them). Calls on_token(token) for each
// new token; returning false stops early. Stops at `eos` (>= 0) after emitting it. The context must be empty.
// Throws Cancelled when `cancel` fires (checked before each token), and NonFiniteLogits when the model gives NaN or
// infinite logits, with the first layer and site whose activations were not finite (locate_non_finite).
GenerateStats generate(InferenceContext& ctx, Sampler& sampler, const std::vector<int32_t>& prompt, int32_t n_new,
                       const std::function<bool(int32_t)>& on_token, const CancelToken& cancel = {}, int32_t eos = -1);

// Evaluates `prompt` in `ctx` as a speculative run does (engine::Reviewer::sync, then a verification pass that starts
// with the last token): all but the last token with InferenceContext::prefill (batches of n_batch), then the last
// token alone; returns its logits. A pass's attention kernel depends on its size (kernels::attend below 32 tokens,
// GEMMs from there), so a prompt evaluated in other batches gives other bits, which can flip a greedy near-tie
// between a speculative run and its baseline. generate() prefills this way.
std::span<const float> prefill_as_verified(InferenceContext& ctx, const std::vector<int32_t>& prompt);

// Runs `tokens` through a fresh context of `model` and names where a NaN or inf first appears and the step that made
// it ("NaN first in layer 2's attention input, so it arose in layer 1's feed-forward block (the down matrix)"), or
// "" when every activation into the output matrix was finite. A diagnosis for NonFiniteLogits; costs one prefill.
std::string locate_non_finite(const Model& model, const ContextConfig& cfg, const std::vector<int32_t>& tokens);

}  // namespace speculum::model
