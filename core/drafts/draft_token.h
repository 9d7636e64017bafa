// How a neural draft picks its next token from its logits, shared by the model drafters (a separate model or a
// self-draft, and a target's MTP layer): softmax at the draft temperature, greedy argmax or a seeded sample,
// llama.cpp's p_min stop, and what the chain records for the token.
#pragma once

#include "core/drafts/drafter.h"
#include "core/model/sampler.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

namespace speculum::drafts {

// softmax(logits / T) into p (T > 0). Throws model::NonFiniteLogits on a NaN or +inf, or when every logit is -inf,
// as model::argmax does: a broken draft fails the run the same way whether it drafts a chain or a tree.
inline void draft_softmax(std::span<const float> logits, float temperature, std::vector<float>& p) {
    model::check_finite_logits(logits);
    p.resize(logits.size());
    const float mx = *std::max_element(logits.begin(), logits.end());
    double sum     = 0.0;
    for (size_t t = 0; t < logits.size(); ++t) sum += p[t] = std::exp((logits[t] - mx) / temperature);
    for (float& v : p) v = static_cast<float>(v / sum);
}

// Chooses the next draft token (argmax when params.temperature <= 0, else a sample from softmax(logits / T)) and
// appends it to `out` with its confidence, q (1 for a greedy one-hot draft) and, when asked, its distribution.
// Returns the token, or -1 (nothing appended) when its probability is below params.p_min. `dist` is scratch.
inline int32_t choose_draft_token(std::span<const float> logits, const ProposeParams& params, model::Sampler& sampler,
                                  std::vector<float>& dist, DraftChain& out) {
    const bool greedy = params.temperature <= 0.0f;
    draft_softmax(logits, greedy ? 1.0f : params.temperature, dist);
    const int32_t tok = greedy ? model::argmax(logits) : sampler.sample_from(dist);
    if (dist[size_t(tok)] < params.p_min) return -1;
    out.tokens.push_back(tok);
    out.confidence.push_back(dist[size_t(tok)]);
    out.q.push_back(greedy ? 1.0f : dist[size_t(tok)]);
    out.source.push_back(0);
    if (params.want_distributions) {
        if (greedy) {
            std::vector<float> one_hot(dist.size(), 0.0f);
            one_hot[size_t(tok)] = 1.0f;
            out.q_dist.push_back(std::move(one_hot));
        } else {
            out.q_dist.push_back(dist);
        }
    }
    return tok;
}

}  // namespace speculum::drafts
