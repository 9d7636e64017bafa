// ML-SpecQD Eq. (1) and the multi-level recursion (see mlspecqd.h).
#include "core/analytic/mlspecqd.h"

#include "core/analytic/checks.h"
#include "core/analytic/csdrafting.h"

#include <string>

namespace speculum::analytic {

double mlspecqd_speedup(double alpha, int n, double s) {
    require_probability(alpha, "mlspecqd.alpha");
    require_count(n, 1, 4096, "mlspecqd.n");
    require_positive(s, "mlspecqd.s");
    return (alpha + 1.0 / n) / (1.0 / n + 1.0 / s);
}

double mlspecqd_alpha_from_positions(const std::vector<double>& alpha_positions) {
    if (alpha_positions.empty()) throw InvalidInput("mlspecqd: alpha positions must not be empty");
    return (expected_tokens_chain(alpha_positions) - 1.0) / double(alpha_positions.size());
}

QdResult mlspecqd_multilevel(const std::vector<QdLevel>& levels) {
    if (levels.empty()) throw InvalidInput("mlspecqd.levels must not be empty");
    for (size_t l = 0; l < levels.size(); ++l) {
        std::string f = "mlspecqd.levels[" + std::to_string(l) + "]";
        require_probability(levels[l].alpha, f + ".alpha");
        require_count(levels[l].n, 1, 4096, f + ".n");
        require_positive(levels[l].s, f + ".s");
    }
    QdResult r;
    r.effective_speed.assign(levels.size(), 0.0);
    double below             = levels.back().s;  // S'_L
    r.effective_speed.back() = below;
    for (int l = int(levels.size()) - 2; l >= -1; --l) {
        const QdLevel& child = levels[size_t(l + 1)];
        double s_l           = l < 0 ? 1.0 : levels[size_t(l)].s;
        double eff           = (child.alpha * child.n + 1.0) / (1.0 / s_l + child.n / below);
        if (l >= 0)
            r.effective_speed[size_t(l)] = eff;
        else
            r.speedup = eff;
        below = eff;
    }
    return r;
}

}  // namespace speculum::analytic
