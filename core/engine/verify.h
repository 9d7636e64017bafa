// Verification rules of speculative decoding as pure functions of logits and drafts: greedy exact match (with
// CS Drafting's lenience for intermediate reviewers), stochastic rejection sampling (Leviathan et al.: accept with
// min(1, p/q), resample from norm(max(0, p − q))), and the same two rules over a token tree. No model, no KV cache.
#pragma once

#include "core/drafts/drafter.h"
#include "core/model/forward.h"
#include "core/model/sampler.h"

#include <cstdint>
#include <span>
#include <vector>

namespace speculum::engine {

// How a committed token came about: a draft token the reviewer accepted, the reviewer's own token at the first
// rejected position (correction), or the reviewer's extra token after a fully accepted draft (bonus).
enum class TokenKind : uint8_t { accepted, corrected, bonus };

struct ChainVerdict {
    int32_t n_accepted  = 0;   // draft tokens accepted (a prefix of the draft)
    int32_t next_token  = -1;  // the reviewer's correction or bonus token
    TokenKind next_kind = TokenKind::bonus;
};

// softmax(logits)[token], computed stably in double.
double softmax_at(std::span<const float> logits, int32_t token);

// Greedy review of a chain. logits: (k + 1) rows, row j = the reviewer's logits after draft tokens d_0..d_{j-1}.
// d_j is accepted when it is the reviewer's argmax or, with lenience l > 1 (intermediate reviewers only),
// when p_rev(d_j) > q_j / l (CS Drafting's code; q_j = the draft's probability of d_j, 1 for one-hot drafters).
ChainVerdict verify_chain_greedy(std::span<const int32_t> draft, const model::LogitsView& logits,
                                 std::span<const float> q = {}, float lenience = 1.0f);

// One position of stochastic verification: d was drawn from q (empty q = one-hot at d, a deterministic drafter).
// Accepts with min(1, l·p(d)/q(d)); otherwise draws from norm(max(0, p − q)). With l = 1 the returned token is
// distributed exactly as p. `scratch` is resized to p.size().
struct PositionVerdict {
    bool accepted = false;
    int32_t token = -1;  // d when accepted, else the resampled token
};
PositionVerdict verify_position_stochastic(std::span<const float> p, std::span<const float> q, int32_t d,
                                           model::Rng& rng, std::vector<float>& scratch, float lenience = 1.0f);

// Draws from an unnormalised non-negative vector (returns the argmax if it sums to zero).
int32_t sample_unnormalised(std::span<const float> w, model::Rng& rng);

// Stochastic review of a chain. The target's p at each row is `sampler.probabilities(row)` (temperature, top-k,
// top-p); q_dist: per draft token the distribution it was drawn from, or empty for a deterministic drafter.
ChainVerdict verify_chain_stochastic(std::span<const int32_t> draft, const model::LogitsView& logits,
                                     const std::vector<std::vector<float>>& q_dist, model::Sampler& sampler,
                                     float lenience = 1.0f);

struct TreeVerdict {
    std::vector<int32_t> path;  // accepted node indices, root's child first
    std::vector<int32_t> rank;  // rank of each accepted node among its siblings
    int32_t next_token  = -1;
    TokenKind next_kind = TokenKind::bonus;  // bonus when the last accepted node (or the root) has no children
};

// Children of the root (index 0 of the result) and of each node i (index i + 1), ordered by rank.
std::vector<std::vector<int32_t>> tree_children(const drafts::DraftTree& tree);

// Greedy walk: at each accepted node, the child whose token is the target's argmax is accepted.
// logits: (tree.size() + 1) rows; row 0 = the root (last committed token), row i + 1 = node i.
TreeVerdict verify_tree_greedy(const drafts::DraftTree& tree, const model::LogitsView& logits);

// Stochastic walk (SpecInfer's multi-candidate rejection with deterministic candidates): at a node, siblings are
// tried in rank order; sibling x is accepted with probability p(x) under the current residual, else x's mass is
// removed and the residual renormalised. With no sibling accepted, the token is drawn from the residual. The
// committed path is distributed exactly as the target's sampling distribution (tested).
TreeVerdict verify_tree_stochastic(const drafts::DraftTree& tree, const model::LogitsView& logits,
                                   model::Sampler& sampler);

}  // namespace speculum::engine
