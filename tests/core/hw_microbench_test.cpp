// Microbenchmark sanity only (no timing assertions): quick mode returns positive, finite figures, makes a valid
// profile, reports progress, and honours a cancelled token.
#include "core/hw/microbench.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace speculum;
using namespace speculum::hw;

TEST(HwMicrobench, QuickRunIsSane) {
    double last = -1;
    int calls   = 0;
    auto r      = run_microbenchmarks({true, 2}, CancelToken{}, [&](double f, const std::string&) {
        EXPECT_GE(f, last - 1e-12);
        EXPECT_LE(f, 1.0 + 1e-9);
        last = f;
        ++calls;
    });
    for (double v : {r.read_bw_1t_gbps, r.read_bw_all_gbps, r.sgemv_1t_gflops, r.sgemv_all_gflops, r.sgemm_1t_gflops,
                     r.sgemm_all_gflops, r.call_overhead_us, r.seconds}) {
        EXPECT_TRUE(std::isfinite(v));
        EXPECT_GT(v, 0);
    }
    EXPECT_GT(calls, 5);
    EXPECT_LT(r.seconds, 30.0);  // generous: a sanity bound, not a timing claim
    auto p = profile_from_microbench(r);
    EXPECT_NO_THROW(validate(p));
    EXPECT_TRUE(p.measured);
    EXPECT_EQ(p.mem_bw_gbps, r.read_bw_all_gbps);
}

TEST(HwMicrobench, CancelledTokenStops) {
    CancelToken t;
    t.cancel();
    EXPECT_THROW(run_microbenchmarks({true, 1}, t, nullptr), Cancelled);
    EXPECT_THROW(bench_sgemm(64, 1, 2, t, nullptr), Cancelled);
}
