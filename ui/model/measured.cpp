// Derived figures of a measured run and the Wilson interval for its acceptance rates.
#include "ui/model/measured.h"

#include <algorithm>
#include <cmath>

namespace speculum::ui {

std::vector<double> MeasuredView::alpha() const {
    std::vector<double> a(pos_reached.size(), 0.0);
    for (size_t i = 0; i < a.size() && i < pos_accepted.size(); ++i)
        if (pos_reached[i] > 0) a[i] = double(pos_accepted[i]) / double(pos_reached[i]);
    return a;
}

double MeasuredView::mean_accepted_length() const {
    double steps = 0, tokens = 0;
    for (size_t n = 0; n < accepted_len_hist.size(); ++n) {
        steps += double(accepted_len_hist[n]);
        tokens += double(accepted_len_hist[n]) * double(n + 1);
    }
    return steps > 0 ? tokens / steps : 0.0;
}

Interval wilson_interval(int64_t successes, int64_t trials, double z) {
    if (trials <= 0) return {};
    double n = double(trials), p = double(std::clamp<int64_t>(successes, 0, trials)) / n, z2 = z * z;
    double denom  = 1 + z2 / n;
    double center = (p + z2 / (2 * n)) / denom;
    double half   = z * std::sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom;
    return {std::max(0.0, center - half), std::min(1.0, center + half)};
}

}  // namespace speculum::ui
