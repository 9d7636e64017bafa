// Verification rules: greedy, lenient greedy, stochastic chains and trees.
#include "core/engine/verify.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace speculum::engine {

double softmax_at(std::span<const float> logits, int32_t token) {
    if (token < 0 || static_cast<size_t>(token) >= logits.size()) return 0.0;
    const float mx = *std::max_element(logits.begin(), logits.end());
    double sum     = 0.0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
    return std::exp(static_cast<double>(logits[static_cast<size_t>(token)]) - mx) / sum;
}

static void check_rows(const model::LogitsView& logits, size_t need, const char* who) {
    if (logits.n < 0 || static_cast<size_t>(logits.n) < need)
        throw std::invalid_argument(std::string(who) + ": " + std::to_string(need) + " logit rows needed, got " +
                                    std::to_string(logits.n));
}

ChainVerdict verify_chain_greedy(std::span<const int32_t> draft, const model::LogitsView& logits,
                                 std::span<const float> q, float lenience) {
    check_rows(logits, draft.size() + 1, "verify_chain_greedy");
    ChainVerdict v;
    for (size_t j = 0; j < draft.size(); ++j) {
        const int32_t best = model::argmax(logits.row(static_cast<int32_t>(j)));
        bool ok            = draft[j] == best;
        if (!ok && lenience > 1.0f) {
            const double qj = j < q.size() ? q[j] : 1.0;
            ok              = softmax_at(logits.row(static_cast<int32_t>(j)), draft[j]) > qj / lenience;
        }
        if (!ok) {
            v.next_token = best;
            v.next_kind  = TokenKind::corrected;
            return v;
        }
        ++v.n_accepted;
    }
    v.next_token = model::argmax(logits.row(static_cast<int32_t>(draft.size())));
    v.next_kind  = TokenKind::bonus;
    return v;
}

int32_t sample_unnormalised(std::span<const float> w, model::Rng& rng) {
    double total = 0.0;
    for (float x : w) total += x;
    if (!(total > 0.0)) return model::argmax(w);
    const double u = rng.next_double() * total;
    double c       = 0.0;
    int32_t last   = 0;
    for (size_t t = 0; t < w.size(); ++t) {
        if (w[t] <= 0.0f) continue;
        c += w[t];
        last = static_cast<int32_t>(t);
        if (u < c) return last;
    }
    return last;
}

PositionVerdict verify_position_stochastic(std::span<const float> p, std::span<const float> q, int32_t d,
                                           model::Rng& rng, std::vector<float>& scratch, float lenience) {
    if (d < 0 || static_cast<size_t>(d) >= p.size())
        throw std::invalid_argument("verify_position_stochastic: draft token " + std::to_string(d) +
                                    " outside the vocabulary of " + std::to_string(p.size()));
    if (!q.empty() && q.size() != p.size())
        throw std::invalid_argument("verify_position_stochastic: q has " + std::to_string(q.size()) +
                                    " entries, p has " + std::to_string(p.size()));
    const double pd = p[static_cast<size_t>(d)];
    const double qd = q.empty() ? 1.0 : q[static_cast<size_t>(d)];
    // Accept with min(1, l p/q); q(d) = 0 can only come from a drafter that lied about its distribution: reject.
    if (qd > 0.0 && rng.next_double() < std::min(1.0, lenience * pd / qd)) return {true, d};
    scratch.assign(p.begin(), p.end());
    if (q.empty()) {
        scratch[static_cast<size_t>(d)] = 0.0f;
    } else {
        for (size_t t = 0; t < p.size(); ++t) scratch[t] = std::max(0.0f, p[t] - q[t]);
    }
    return {false, sample_unnormalised(scratch, rng)};
}

ChainVerdict verify_chain_stochastic(std::span<const int32_t> draft, const model::LogitsView& logits,
                                     const std::vector<std::vector<float>>& q_dist, model::Sampler& sampler,
                                     float lenience) {
    check_rows(logits, draft.size() + 1, "verify_chain_stochastic");
    std::vector<float> p, scratch;
    ChainVerdict v;
    for (size_t j = 0; j < draft.size(); ++j) {
        sampler.probabilities(logits.row(static_cast<int32_t>(j)), p);
        const std::span<const float> q =
            j < q_dist.size() ? std::span<const float>(q_dist[j]) : std::span<const float>();
        const PositionVerdict pv = verify_position_stochastic(p, q, draft[j], sampler.rng(), scratch, lenience);
        if (!pv.accepted) {
            v.next_token = pv.token;
            v.next_kind  = TokenKind::corrected;
            return v;
        }
        ++v.n_accepted;
    }
    v.next_token = sampler.sample(logits.row(static_cast<int32_t>(draft.size())));
    v.next_kind  = TokenKind::bonus;
    return v;
}

std::vector<std::vector<int32_t>> tree_children(const drafts::DraftTree& tree) {
    const int32_t n = tree.size();
    if (tree.parent.size() != static_cast<size_t>(n))
        throw std::invalid_argument("DraftTree: parent has " + std::to_string(tree.parent.size()) + " entries for " +
                                    std::to_string(n) + " tokens");
    std::vector<std::vector<int32_t>> ch(static_cast<size_t>(n) + 1);
    for (int32_t i = 0; i < n; ++i) {
        const int32_t par = tree.parent[static_cast<size_t>(i)];
        if (par < -1 || par >= i)
            throw std::invalid_argument("DraftTree: node " + std::to_string(i) + " has parent " + std::to_string(par) +
                                        " (parents must come before children)");
        ch[static_cast<size_t>(par + 1)].push_back(i);
    }
    auto rank_of = [&](int32_t i) { return i < static_cast<int32_t>(tree.rank.size()) ? tree.rank[size_t(i)] : 0; };
    for (auto& c : ch)
        std::stable_sort(c.begin(), c.end(), [&](int32_t a, int32_t b) { return rank_of(a) < rank_of(b); });
    return ch;
}

static int32_t rank_or_zero(const drafts::DraftTree& tree, int32_t i) {
    return i < static_cast<int32_t>(tree.rank.size()) ? tree.rank[static_cast<size_t>(i)] : 0;
}

TreeVerdict verify_tree_greedy(const drafts::DraftTree& tree, const model::LogitsView& logits) {
    check_rows(logits, static_cast<size_t>(tree.size()) + 1, "verify_tree_greedy");
    const auto ch = tree_children(tree);
    TreeVerdict v;
    int32_t node = -1;  // -1 = the root
    for (;;) {
        const int32_t best = model::argmax(logits.row(node + 1));
        const auto& kids   = ch[static_cast<size_t>(node + 1)];
        auto hit = std::find_if(kids.begin(), kids.end(), [&](int32_t c) { return tree.tokens[size_t(c)] == best; });
        if (hit == kids.end()) {
            v.next_token = best;
            v.next_kind  = kids.empty() ? TokenKind::bonus : TokenKind::corrected;
            return v;
        }
        node = *hit;
        v.path.push_back(node);
        v.rank.push_back(rank_or_zero(tree, node));
    }
}

TreeVerdict verify_tree_stochastic(const drafts::DraftTree& tree, const model::LogitsView& logits,
                                   model::Sampler& sampler) {
    check_rows(logits, static_cast<size_t>(tree.size()) + 1, "verify_tree_stochastic");
    const auto ch = tree_children(tree);
    std::vector<float> p;
    TreeVerdict v;
    int32_t node = -1;
    for (;;) {
        sampler.probabilities(logits.row(node + 1), p);
        const auto& kids = ch[static_cast<size_t>(node + 1)];
        int32_t next     = -1;
        for (int32_t c : kids) {
            const int32_t x = tree.tokens[static_cast<size_t>(c)];
            if (x < 0 || static_cast<size_t>(x) >= p.size()) continue;
            double mass = 0.0;
            for (float w : p) mass += w;
            if (!(mass > 0.0)) break;
            // Candidate x is a deterministic proposal (q = δ_x): accept with p(x); else remove x and renormalise.
            if (sampler.rng().next_double() * mass < p[static_cast<size_t>(x)]) {
                next = c;
                break;
            }
            p[static_cast<size_t>(x)] = 0.0f;
        }
        if (next < 0) {
            v.next_token = sample_unnormalised(p, sampler.rng());
            v.next_kind  = kids.empty() ? TokenKind::bonus : TokenKind::corrected;
            return v;
        }
        node = next;
        v.path.push_back(node);
        v.rank.push_back(rank_or_zero(tree, node));
    }
}

}  // namespace speculum::engine
