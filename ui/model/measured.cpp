// The Wilson interval for a measured run's acceptance rates.
#include "ui/model/measured.h"

#include <algorithm>
#include <cmath>

namespace speculum::ui {

Interval wilson_interval(int64_t successes, int64_t trials, double z) {
    if (trials <= 0) return {};
    double n = double(trials), p = double(std::clamp<int64_t>(successes, 0, trials)) / n, z2 = z * z;
    double denom  = 1 + z2 / n;
    double center = (p + z2 / (2 * n)) / denom;
    double half   = z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom;
    return {std::max(0.0, center - half), std::min(1.0, center + half)};
}

}  // namespace speculum::ui
