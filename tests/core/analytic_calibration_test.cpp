// Calibration on synthetic runs: simulated acceptance with known α is recovered inside its Wilson interval,
// the predicted speedup matches a synthetic measurement, the JSON round-trips and bad runs are rejected.
#include "core/analytic/calibration.h"
#include "core/analytic/checks.h"
#include "core/analytic/csdrafting.h"
#include "core/analytic/montecarlo.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace speculum::analytic;

namespace {
// Simulate `rounds` chain rounds with per-position α and count reached/accepted per position.
MeasuredRun synthetic_run(const std::vector<double>& alpha, int rounds, uint64_t seed) {
    MeasuredRun r;
    r.k = int(alpha.size());
    r.reached.assign(alpha.size(), 0);
    r.accepted.assign(alpha.size(), 0);
    Rng rng(seed);
    int64_t tokens = 0;
    for (int n = 0; n < rounds; ++n) {
        int a = 0;
        for (size_t i = 0; i < alpha.size(); ++i) {
            ++r.reached[i];
            if (rng.uniform() >= alpha[i]) break;
            ++r.accepted[i];
            ++a;
        }
        tokens += a + 1;
    }
    // Synthetic timing: target verify 100 ms, draft 5 ms, autoregressive 95 ms per token.
    r.level_time_s       = {0.100, 0.005};
    r.t_autoregressive_s = 0.095;
    double t_total       = rounds * (0.100 + r.k * 0.005);
    r.measured_speedup   = (double(tokens) / t_total) / (1.0 / 0.095);
    return r;
}
}  // namespace

TEST(Calibration, WilsonInterval) {
    auto i = wilson_interval(50, 100);
    EXPECT_NEAR(i.lo, 0.4038, 1e-3);  // textbook value for 50/100 at 95 %
    EXPECT_NEAR(i.hi, 0.5962, 1e-3);
    auto z = wilson_interval(0, 10);
    EXPECT_EQ(z.lo, 0.0);
    EXPECT_GT(z.hi, 0.2);
    auto none = wilson_interval(0, 0);
    EXPECT_EQ(none.lo, 0.0);
    EXPECT_EQ(none.hi, 1.0);
}

TEST(Calibration, RecoversAlphaAndPredictsSpeedup) {
    std::vector<double> truth{0.9, 0.75, 0.6, 0.45};
    auto run = synthetic_run(truth, 20000, 11);
    auto rep = calibrate(run);
    for (size_t i = 0; i < truth.size(); ++i) {
        EXPECT_LE(rep.alpha_ci[i].lo, truth[i]) << i;
        EXPECT_GE(rep.alpha_ci[i].hi, truth[i]) << i;
    }
    EXPECT_NEAR(rep.c[0], 0.05, 1e-12);
    // The synthetic measurement follows the same timing model, so the error is statistical only.
    EXPECT_LT(std::abs(rep.relative_error), 0.01);
    EXPECT_NEAR(rep.predicted_timed, expected_tokens_chain(rep.alpha) * 0.095 / 0.120, 1e-12);
    EXPECT_NEAR(rep.predicted_ewif, expected_tokens_chain(rep.alpha) / 1.2, 1e-12);
    // A wrong measured figure shows up as a large error.
    run.measured_speedup *= 1.5;
    EXPECT_NEAR(calibrate(run).relative_error, 1.0 / 1.5 - 1.0, 0.01);
}

TEST(Calibration, JsonRoundTripAndValidation) {
    auto run = synthetic_run({0.8, 0.5}, 500, 3);
    nlohmann::json j;
    to_json(j, run);
    MeasuredRun back;
    from_json(j, back);
    EXPECT_EQ(back, run);
    auto bad           = j;
    bad["accepted"][0] = 100000;
    EXPECT_THROW(from_json(bad, back), InvalidInput);
    bad                 = j;
    bad["level_time_s"] = {0.1};
    EXPECT_THROW(from_json(bad, back), InvalidInput);
    bad           = j;
    bad["colour"] = "red";
    EXPECT_THROW(from_json(bad, back), InvalidInput);
    bad      = j;
    bad["k"] = "two";
    EXPECT_THROW(from_json(bad, back), InvalidInput);
}
