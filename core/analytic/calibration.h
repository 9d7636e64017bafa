// Calibration of the analytic model from a measured run: per-position acceptance α_i = accepted_i / reached_i with
// Wilson score intervals, per-level cost ratios c = t_level / t_target, and the predicted speedup against the
// measured one with its relative error, from a hand-written MeasuredRun. Calibration from the engine's real run
// reports (`speculum-cli calibrate --report`) is run_calibration.h.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

namespace speculum::analytic {

struct MeasuredRun {
    int k = 0;                         // draft tokens per round (chain length)
    std::vector<int64_t> reached;      // per position i = 1..k: rounds where i was reviewed with 1..i−1 accepted
    std::vector<int64_t> accepted;     // per position: rounds where position i was accepted
    std::vector<double> level_time_s;  // mean time per call: [0] target verify call, [1..] draft levels
    double t_autoregressive_s                 = 0;  // target time per token without speculation (0 = unknown)
    double measured_speedup                   = 0;  // measured tokens/s ÷ autoregressive tokens/s (0 = unknown)
    bool operator==(const MeasuredRun&) const = default;
};
void validate(const MeasuredRun& r);  // throws InvalidInput naming the field
void to_json(nlohmann::json& j, const MeasuredRun& r);
void from_json(const nlohmann::json& j, MeasuredRun& r);

struct Interval {
    double lo = 0, hi = 1;
};
// Wilson score interval for a binomial proportion (z = 1.96: 95 %). trials = 0 gives [0, 1].
Interval wilson_interval(int64_t successes, int64_t trials, double z = 1.96);

// The sample median and a distribution-free interval for the population median: the order statistics x_(j) and
// x_(n+1−j) with the largest j whose coverage under Binomial(n, ½) is at least `confidence` (no assumption about
// the samples' distribution; they must be independent). Below 6 samples 95 % is out of reach: the interval is then
// [min, max] and `coverage` says what it reaches. Non-finite samples are dropped; no samples gives n = 0.
struct MedianInterval {
    double median = 0, lo = 0, hi = 0;
    int n           = 0;
    double coverage = 0;  // P(lo <= true median <= hi)
    double rel_width() const { return median != 0 ? (hi - lo) / std::abs(median) : 0.0; }
    bool operator==(const MedianInterval&) const = default;
};
MedianInterval median_interval(std::vector<double> samples, double confidence = 0.95);

struct CalibrationReport {
    std::vector<double> alpha;       // fitted α_i (0 where a position was never reached)
    std::vector<Interval> alpha_ci;  // 95 % Wilson intervals
    std::vector<double> c;           // c_l = t_level / t_target for draft levels l ≥ 1 (index l−1)
    double expected_tokens   = 1;    // 1 + Σ Π α_j with the fitted α
    double predicted_ewif    = 0;    // expected_tokens / (1 + k c_1): the cost-ratio (EWIF) prediction
    double predicted_timed   = 0;    // expected_tokens · t_ar / (t_verify + k t_draft) when t_ar is known
    double predicted_speedup = 0;    // predicted_timed if t_ar is known, else predicted_ewif
    double measured_speedup  = 0;
    double relative_error    = 0;  // (predicted − measured) / measured; 0 when nothing was measured
};
CalibrationReport calibrate(const MeasuredRun& run);
void to_json(nlohmann::json& j, const CalibrationReport& r);

}  // namespace speculum::analytic
