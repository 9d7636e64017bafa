// Monte Carlo simulator of the stochastic processes behind the closed forms: chain acceptance with per-position
// α, the vertical cascade (recursive SD, any depth), and token trees with exclusive per-rank acceptance. It
// simulates the process step by step (it never evaluates a closed form), with an explicit, seeded RNG, so tests
// can cross-check every closed form within a few standard errors.
#pragma once

#include "core/analytic/csdrafting.h"
#include "core/analytic/kmatrix.h"
#include "core/analytic/trees.h"

#include <cstdint>
#include <vector>

namespace speculum::analytic {

// xoshiro256** seeded through splitmix64: small, fast and reproducible across platforms.
class Rng {
public:
    explicit Rng(uint64_t seed);
    uint64_t next();
    double uniform();  // [0, 1) with 53 random bits
private:
    uint64_t m_s[4];
};

struct McStats {
    double mean      = 0;
    double std_error = 0;  // standard error of the mean
    int64_t samples  = 0;
};

// Tokens per target run for a k-token chain: accept position i with probability α_i until the first rejection.
McStats mc_chain(const std::vector<double>& alpha, int k, int64_t rounds, uint64_t seed);
// Tokens per target run of a vertical cascade: each reviewer level runs its steps by recursively drafting,
// reviewing token by token and emitting accepted + 1; the target reviews the final draft once.
McStats mc_vertical_cascade(const std::vector<DraftLevel>& levels, int64_t rounds, uint64_t seed);
// The k-matrix cascade in either mode: every level's calls are simulated recursively token by token (truncate:
// requests cut so each yields exactly what was asked; threshold: sub-calls repeat until the cumulative threshold).
// tokens = accepted + 1 per target run; cost = 1 + Σ_j c_j · units_j.
struct McKMatrix {
    McStats tokens;
    McStats cost;
};
McKMatrix mc_kmatrix_cascade(const KMatrixCascade& m, int64_t rounds, uint64_t seed);
// Accepted length (root counted) of a token tree: from the root, draw one child by the exclusive per-rank
// probabilities p[depth][rank] among the node's children; stop when none is drawn.
McStats mc_tree(const TokenTree& tree, const AcceptanceTable& p, int64_t rounds, uint64_t seed);

}  // namespace speculum::analytic
