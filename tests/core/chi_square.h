// Pearson's chi-square goodness-of-fit for the sampling tests: observed counts against expected probabilities,
// with cells whose expected count is under 5 pooled into one (the test's usual validity rule), and the critical
// value at P = 0.001 from the Wilson-Hilferty approximation (within 0.3 % of the tables for 7..63 degrees).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace speculum::test {

struct ChiSquare {
    double statistic = 0.0;
    int dof          = 0;  // cells after pooling, minus one
    // The value that a correct sampler exceeds with probability 0.001.
    double critical() const {
        const double k = dof, z = 3.0902;  // z of the upper 0.001 tail of a standard normal
        const double c = 1.0 - 2.0 / (9.0 * k) + z * std::sqrt(2.0 / (9.0 * k));
        return k * c * c * c;
    }
    bool passes() const { return dof > 0 && statistic < critical(); }
};

inline ChiSquare chi_square(const std::vector<int>& counts, const std::vector<double>& p, int n) {
    ChiSquare r;
    double pooled_obs = 0, pooled_exp = 0;
    int cells = 0;
    for (size_t i = 0; i < p.size(); ++i) {
        const double e = p[i] * n;
        if (e < 5.0) {
            pooled_obs += counts[i], pooled_exp += e;
            continue;
        }
        r.statistic += (counts[i] - e) * (counts[i] - e) / e;
        ++cells;
    }
    if (pooled_exp > 0.0) {
        // An observation in a cell of (near) zero expectation still counts against the sampler.
        const double e = std::max(pooled_exp, 1e-9);
        r.statistic += (pooled_obs - e) * (pooled_obs - e) / e;
        ++cells;
    }
    r.dof = cells - 1;
    return r;
}

}  // namespace speculum::test
