// ML-SpecQD (paper 002) Eq. (1) and its multi-level recursion. Reading (design/analytic_readings.md): α = G/N is
// the mean *fraction* of the N drafted tokens accepted per round (not a per-token probability); S is a level's
// speed relative to the target, and in the recursion every S_l is relative to the target. Values are "modeled".
#pragma once

#include <vector>

namespace speculum::analytic {

// Eq. (1): Speedup = (G+1)/(1+N/S) = (α + 1/N)/(1/N + 1/S).
double mlspecqd_speedup(double alpha, int n, double s);

// The fraction α = E[G]/N implied by per-position acceptance α_1..α_N (E[G] = Σ_i Π_{j≤i} α_j).
double mlspecqd_alpha_from_positions(const std::vector<double>& alpha_positions);

struct QdLevel {
    double alpha                          = 0.8;  // fraction of this level's drafts accepted by the level above
    int n                                 = 4;    // drafts this level proposes per round to the level above
    double s                              = 4.0;  // speed of this level relative to the target (4 = 4× faster)
    bool operator==(const QdLevel&) const = default;
};

struct QdResult {
    double speedup = 1;                   // S'_0
    std::vector<double> effective_speed;  // S'_l for l = 1..L (index l−1): speed once accelerated by the levels below
};
// levels[0] drafts for the target. S'_L = S_L; S'_l = (α_{l+1} N_{l+1} + 1)/(1/S_l + N_{l+1}/S'_{l+1}) with
// S_0 = 1; Speedup = S'_0. One level is Eq. (1).
QdResult mlspecqd_multilevel(const std::vector<QdLevel>& levels);

}  // namespace speculum::analytic
