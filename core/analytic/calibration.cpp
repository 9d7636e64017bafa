// Fit of per-position α and per-level c from a measured run, and predicted vs measured speedup (see
// calibration.h).
#include "core/analytic/calibration.h"
#include "core/json_reader.h"

#include "core/analytic/checks.h"
#include "core/analytic/csdrafting.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <string>

namespace speculum::analytic {

void validate(const MeasuredRun& r) {
    require_count(r.k, 1, 4096, "run.k");
    if (r.reached.size() != size_t(r.k) || r.accepted.size() != size_t(r.k))
        throw InvalidInput("run.reached and run.accepted must have k = " + std::to_string(r.k) + " entries");
    for (int i = 0; i < r.k; ++i) {
        std::string f = std::string("[").append(std::to_string(i)).append("]");
        if (r.reached[i] < 0 || r.accepted[i] < 0)
            throw InvalidInput("run.reached" + f + " and accepted" + f + " must be >= 0");
        if (r.accepted[i] > r.reached[i]) throw InvalidInput("run.accepted" + f + " exceeds run.reached" + f);
        // Position i+1 can only be reviewed in rounds where position i was accepted.
        if (i + 1 < r.k && r.reached[i + 1] > r.accepted[i])
            throw InvalidInput("run.reached[" + std::to_string(i + 1) + "] exceeds run.accepted" + f);
    }
    if (r.level_time_s.size() < 2) throw InvalidInput("run.level_time_s needs the target and at least one draft level");
    for (size_t l = 0; l < r.level_time_s.size(); ++l)
        require_positive(r.level_time_s[l], "run.level_time_s[" + std::to_string(l) + "]");
    require_nonnegative(r.t_autoregressive_s, "run.t_autoregressive_s");
    require_nonnegative(r.measured_speedup, "run.measured_speedup");
}

void to_json(nlohmann::json& j, const MeasuredRun& r) {
    j = {{"k", r.k},
         {"reached", r.reached},
         {"accepted", r.accepted},
         {"level_time_s", r.level_time_s},
         {"t_autoregressive_s", r.t_autoregressive_s},
         {"measured_speedup", r.measured_speedup}};
}

void from_json(const nlohmann::json& j, MeasuredRun& r) {
    JsonReader in(j, "run", &throw_invalid_input);
    r = MeasuredRun{};
    for (const char* key : {"k", "reached", "accepted", "level_time_s"})
        if (!in.has(key)) in.fail(in.at(key), "missing");
    in.get("k", r.k);
    in.get("reached", r.reached);
    in.get("accepted", r.accepted);
    in.get("level_time_s", r.level_time_s);
    in.get("t_autoregressive_s", r.t_autoregressive_s);
    in.get("measured_speedup", r.measured_speedup);
    in.finish();
    validate(r);
}

Interval wilson_interval(int64_t s, int64_t n, double z) {
    if (n <= 0) return {0.0, 1.0};
    double p = double(std::clamp<int64_t>(s, 0, n)) / double(n), z2 = z * z, nn = double(n);
    double centre = (p + z2 / (2 * nn)) / (1 + z2 / nn);
    double half   = z * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / (1 + z2 / nn);
    return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

MedianInterval median_interval(std::vector<double> x, double confidence) {
    x.erase(std::remove_if(x.begin(), x.end(), [](double v) { return !std::isfinite(v); }), x.end());
    MedianInterval m;
    m.n = int(x.size());
    if (x.empty()) return m;
    std::sort(x.begin(), x.end());
    const size_t n = x.size();
    m.median       = n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
    // P(B <= k) for B ~ Binomial(n, 1/2), summed in log space (n may be large).
    const double log_half_n = double(n) * std::log(0.5);
    auto pmf                = [&](size_t k) {
        return std::exp(std::lgamma(double(n) + 1) - std::lgamma(double(k) + 1) - std::lgamma(double(n - k) + 1) +
                                       log_half_n);
    };
    // Coverage of [x_(j), x_(n+1-j)] (1-based j) is 1 − 2 P(B <= j − 1); it falls as j grows.
    size_t j   = 1;
    double cdf = pmf(0);  // P(B <= j - 1)
    m.coverage = 1.0 - 2.0 * cdf;
    for (size_t next = 2; next <= n / 2; ++next) {
        const double c = cdf + pmf(next - 1);
        if (1.0 - 2.0 * c < confidence) break;
        j = next, cdf = c, m.coverage = 1.0 - 2.0 * c;
    }
    m.lo = x[j - 1];
    m.hi = x[n - j];
    if (n == 1) m.coverage = 0;
    return m;
}

CalibrationReport calibrate(const MeasuredRun& run) {
    validate(run);
    CalibrationReport rep;
    for (int i = 0; i < run.k; ++i) {
        rep.alpha.push_back(run.reached[i] > 0 ? double(run.accepted[i]) / double(run.reached[i]) : 0.0);
        rep.alpha_ci.push_back(wilson_interval(run.accepted[i], run.reached[i]));
    }
    double t_target = run.level_time_s[0];
    for (size_t l = 1; l < run.level_time_s.size(); ++l) rep.c.push_back(run.level_time_s[l] / t_target);
    rep.expected_tokens = expected_tokens_chain(rep.alpha);
    rep.predicted_ewif  = rep.expected_tokens / (1.0 + run.k * rep.c[0]);
    if (run.t_autoregressive_s > 0) {
        rep.predicted_timed   = rep.expected_tokens * run.t_autoregressive_s / (t_target + run.k * run.level_time_s[1]);
        rep.predicted_speedup = rep.predicted_timed;
    } else {
        rep.predicted_speedup = rep.predicted_ewif;
    }
    rep.measured_speedup = run.measured_speedup;
    if (run.measured_speedup > 0)
        rep.relative_error = (rep.predicted_speedup - run.measured_speedup) / run.measured_speedup;
    return rep;
}

void to_json(nlohmann::json& j, const CalibrationReport& r) {
    nlohmann::json ci = nlohmann::json::array();
    for (const auto& i : r.alpha_ci) ci.push_back({i.lo, i.hi});
    j = {{"alpha", r.alpha},
         {"alpha_ci95", ci},
         {"c", r.c},
         {"expected_tokens", r.expected_tokens},
         {"predicted_ewif", r.predicted_ewif},
         {"predicted_timed", r.predicted_timed},
         {"predicted_speedup", r.predicted_speedup},
         {"measured_speedup", r.measured_speedup},
         {"relative_error", r.relative_error},
         {"label", "modeled prediction vs measured"}};
}

}  // namespace speculum::analytic
