// CS Drafting (Chen et al., "Cascade Speculative Drafting", paper 004) closed forms: the PGF φ_{α,k}, EWIF of
// speculative decoding (Cor. 4.2), the vertical cascade (Thm. 4.3) and its generalisation to any depth, the
// horizontal cascade (Thm. 4.5, Cor. 4.6) and Max-Gram as a zero-cost bottom drafter. Pure functions of numbers;
// every value is "modeled" (i.i.d. or per-position Bernoulli acceptance, fixed cost per call).
#pragma once

#include <vector>

namespace speculum::analytic {

// Max-Gram drafts a block of 10 tokens per call at zero cost (paper §3.3, code `_MAG_GENERATION = 10`).
inline constexpr int kMaxGramBlock = 10;

// φ_{α,k}(x) = 1 + (x−1)(1−(αx)^{k+1})/(1−αx): PGF of tokens per target run, Eq. (1). The printed Eq. (6) is
// off by (x−1); design/analytic_readings.md fixes Eq. (1) as the reading.
double phi(double alpha, int k, double x);

// Expected tokens per target run for a chain with per-position acceptance α_1..α_k (α_i = P(position i accepted
// | positions < i accepted)): 1 + Σ_i Π_{j≤i} α_j. With a scalar α this is φ'(1) = (1−α^{k+1})/(1−α).
double expected_tokens_chain(const std::vector<double>& alpha_positions);

// P(tokens per target run = t), t = 0..k+1 (index 0 is always 0): the distribution behind φ.
std::vector<double> chain_length_distribution(const std::vector<double>& alpha_positions);

// Cor. 4.2: EWIF_SD = φ'(1)/(ck+1). `alpha` is a scalar or a per-position vector (expand_positions rule).
double ewif_sd(const std::vector<double>& alpha, double c, int k);
double ewif_sd(double alpha, double c, int k);

// Best k in [1, k_max] for EWIF_SD (ties go to the smaller k).
int best_k_sd(const std::vector<double>& alpha, double c, int k_max);

// A block drafter (DFlash, DSpark): one draft pass proposes up to `block` tokens at once, so a chain of k costs
// ⌈k / block⌉ passes of cost c: EWIF = φ'(1) / (c ⌈k / block⌉ + 1). block = 1 is Cor. 4.2. Modeled.
double ewif_block(const std::vector<double>& alpha, double c, int k, int block);
// Best k in [1, k_max] for ewif_block (ties go to the smaller k).
int best_k_block(const std::vector<double>& alpha, double c, int k_max, int block);

// Thm. 4.3 as printed (reading: α = α(M_t, M_d1), φⁿ is the n-th power): d1 runs n SD steps over k-token drafts
// of d2, then the target reviews once. EWIF = (1 − α φⁿ(α)) / ((1−α)(1 + n c1 + n k c2)), φ = φ_{α',k}.
double ewif_vertical_two_level(double alpha, double alpha_prime, int k, int n, double c1, double c2);

// One level of a vertical cascade. levels[0] drafts for the target; levels[j] drafts for levels[j−1]; the last
// level is the bottom drafter that generates `steps` tokens autoregressively (k), every other level is a
// reviewer that runs `steps` SD steps (n_j) per call of the level above.
struct DraftLevel {
    std::vector<double> alpha{0.8};  // acceptance of this level's tokens by the level above, per position
                                     // within the reviewed draft (one entry = i.i.d.; last entry repeats)
    double c  = 0.05;                // time of one call of this level / time of one target call
    int steps = 4;                   // reviewer: SD steps per parent call (n_j); bottom: tokens per step (k)
    bool operator==(const DraftLevel&) const = default;
};

struct CascadeResult {
    double expected_tokens = 0;                     // E[tokens per target run] (accepted + the target's own token)
    double cost            = 0;                     // E[time per target run] in units of one target call
    double ewif            = 0;                     // expected_tokens / cost
    std::vector<double> draft_length_distribution;  // P(target reviews a draft of length j), j = 0..max
};

// Any depth, exact under per-position acceptance: the draft-length distribution is propagated level by level
// (one SD step = "accept a of the reviewed draft, emit a+1"; n steps = n-fold convolution), then the target's
// expectation is taken. Cost = 1 + Σ_{reviewers j} c_j Π_{i≤j} n_i + c_bottom · k · Π_{reviewers} n_i.
// A single level is plain speculative decoding (Cor. 4.2); two levels reproduce Thm. 4.3.
CascadeResult vertical_cascade(const std::vector<DraftLevel>& levels);

// The same for scalar α only, by the PGF recursion of paper §2.5(a): G_bottom(x) = x^k,
// G_j(x) = [1 + (x−1)(1 − α_{j+1} x G_{j+1}(α_{j+1} x))/(1 − α_{j+1} x)]^{n_j}; tokens = (1 − α_1 G_1(α_1))/(1−α_1).
// Uses alpha[0] of each level. Used to cross-check vertical_cascade.
CascadeResult vertical_cascade_pgf(const std::vector<DraftLevel>& levels);

// Max-Gram bottom level: `alpha` = acceptance of Max-Gram tokens by its reviewer, c = 0, k = kMaxGramBlock.
DraftLevel max_gram_level(double alpha, int block = kMaxGramBlock);

// Thm. 4.5: position i of the draft comes from a model with acceptance α_i and cost c_i:
// T = Σ_{i=0..k} Π_{j≤i} α_j / (1 + Σ_i c_i). alpha and c must have the same length k.
double horizontal_cascade(const std::vector<double>& alpha, const std::vector<double>& c);

// Cor. 4.6 with the corrected range (sum over i = l..k; analytic_readings.md): dT/dα_l, l = 1..k (index l−1).
std::vector<double> horizontal_cascade_gradient(const std::vector<double>& alpha, const std::vector<double>& c);

// A horizontal segment: `count` consecutive positions from one model.
struct HorizontalSegment {
    double alpha                                    = 0.8;   // acceptance of this model's tokens by the target
    double c                                        = 0.05;  // cost per call relative to the target
    int count                                       = 4;     // positions drafted by this model
    bool operator==(const HorizontalSegment&) const = default;
};
// Thm. 4.5 from segments (e.g. Table 1: BASE for 5 positions, then SMALL for 3).
double horizontal_cascade(const std::vector<HorizontalSegment>& segments);

}  // namespace speculum::analytic
