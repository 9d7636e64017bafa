// CS Drafting's combined vertical + horizontal cascade (Algorithm 1, the k-matrix): reviewer i's draft is filled
// segment by segment by the levels j > i of row i; a level with a non-zero row of its own drafts by speculative
// decoding over the levels below it (vertical), a level with an empty row is a leaf (Max-Gram or a neural model
// drafting autoregressively). Exact expectations by dynamic programming under i.i.d. per-pair acceptance: modeled.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <vector>

namespace speculum::analytic {

// How a segment's length is decided. The paper's analysis (Thm. 4.3) fixes the number of SD steps instead; that
// is vertical_cascade() in csdrafting.h.
enum class KMatrixMode {
    // Speculum's engine: a request for K tokens yields exactly K. Segment s of reviewer i's draft gets
    // min(k[i][j_s], K − earlier segments) tokens; a reviewer level asked for n tokens runs SD steps whose inner
    // drafts are min(Σ_j k[j][·], n − produced − 1) tokens long (so the last step never overshoots) until it has n.
    truncate,
    // CS Drafting's code (_csd_iteration): segment s repeats sub-calls of its level while the draft is shorter than
    // the cumulative threshold k[i][j_1] + … + k[i][j_s]; a reviewer sub-call adds its accepted tokens + 1, a leaf
    // call adds `block` tokens; the last sub-call of a segment may overshoot, so draft lengths are random.
    threshold,
};

struct KMatrixCascade {
    // (n+1)×(n+1), upper triangular: k[i][j] = positions of reviewer i's draft filled by level j (j > i), as
    // increments in column order (Speculum's spec.k_matrix; the paper's Table 2 k_12 is cumulative: k_12 = k[0][1]
    // + k[0][2]). Row 0 is the target's draft; a level with an all-zero row is a leaf.
    std::vector<std::vector<int>> k;
    // (n+1)×(n+1): alpha[i][j] = P(reviewer i accepts a token that level j produced), i.i.d. per token (CS Drafting's
    // α(M_i, M_j)); read where k[i][j] > 0.
    std::vector<std::vector<double>> alpha;
    std::vector<double> c;   // [j−1]: cost of one unit of level j ÷ one target pass (a reviewer pass, a leaf call)
    std::vector<int> block;  // [j−1]: tokens per leaf call (1 = a neural model, 10 = Max-Gram in the paper; 0 = any
                             // number in one call, Speculum's Max-Gram, truncate mode only); ignored for reviewers
    KMatrixMode mode = KMatrixMode::truncate;
    // Optional per-position acceptance of the target's draft, overriding alpha[0][·] (truncate mode; calibration
    // fits it from a run's per-position counts). The last entry repeats.
    std::vector<double> target_alpha;
    bool operator==(const KMatrixCascade&) const = default;
};

// Expected work per target run (or per request, see kmatrix_generation), per level j = 0..n.
struct LevelWork {
    double calls = 0;     // calls of the level by its reviewer (leaf proposes, reviewer sub-calls)
    double units = 0;     // reviewer passes (the target's verification passes at j = 0) or leaf units
                          // (⌈tokens/block⌉; one call for block 0)
    double reviewed = 0;  // draft tokens the level reviewed (reviewers only)
    double accepted = 0;  // of which accepted
};

struct KMatrixResult {
    double expected_tokens = 0;                     // E[tokens per target run]: accepted + the target's own token
    double cost            = 0;                     // E[time per target run] ÷ one target pass: 1 + Σ_j c_j units_j
    double ewif            = 0;                     // expected_tokens / cost
    std::vector<LevelWork> work;                    // [j]: per target run (work[0].units = 1)
    std::vector<double> draft_length_distribution;  // P(the target reviews a draft of length L), L = 0..max
    KMatrixMode mode = KMatrixMode::truncate;       // the length semantics it was computed under
};

// Throws InvalidInput naming the field ("kmatrix.k[1][0]").
void validate(const KMatrixCascade& m);

// One level of a vertical chain target <- 1 <- 2 <- ... as the engine runs it (truncate lengths): level j drafts
// `steps` tokens per step for level j − 1, each accepted i.i.d. with `alpha`, at cost `c` per unit.
struct ChainLevel {
    double alpha  = 0.8;
    double c      = 0.05;
    int steps     = 4;
    bool max_gram = false;  // a Max-Gram leaf: any number of tokens in one call that costs nothing (block 0)
};
// The K-matrix of that chain (mode truncate), to compare like with like with what the engine measures.
KMatrixCascade vertical_chain_kmatrix(const std::vector<ChainLevel>& levels);

// One target run: the target reviews the draft of row 0 once.
KMatrixResult kmatrix_cascade(const KMatrixCascade& m);

// Truncate mode only: the engine's whole generation of n_tokens tokens, where the target itself acts as a reviewer
// level asked for n_tokens (each step drafts min(Σ k[0][·], tokens left − 1)). work[0].units = E[target steps],
// work[0].reviewed = E[draft tokens the target reviewed]; expected_tokens = n_tokens; cost and ewif as above.
KMatrixResult kmatrix_generation(const KMatrixCascade& m, int n_tokens);

// JSON (kmatrix_json.cpp), strict: unknown keys and wrong types throw InvalidInput naming the path
// ("kmatrix.levels[1].block"). Shape: {"mode": "truncate"|"threshold", "k": [[int]], "alpha": [[number]],
// "levels": [{"c", "block", "max_gram"}], "target_alpha": [number]}; max_gram sets c = 0 and the block
// (10 in threshold mode, 0 = one call per request in truncate mode) unless they are given.
KMatrixCascade kmatrix_from_json(const nlohmann::json& j);
void to_json(nlohmann::json& j, const KMatrixCascade& m);
void to_json(nlohmann::json& j, const KMatrixResult& r);
const char* to_string(KMatrixMode mode);

}  // namespace speculum::analytic
