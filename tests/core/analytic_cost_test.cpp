// Roofline forward time, memory-budget model and chain timing on a hardware profile.
#include "core/analytic/checks.h"
#include "core/analytic/cost.h"
#include "core/analytic/csdrafting.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace speculum::analytic;
using speculum::hw::HardwareProfile;

namespace {
HardwareProfile toy() {
    HardwareProfile p;
    p.id = p.name   = "toy";
    p.mem_bw_gbps   = 100;  // 1e11 B/s
    p.mem_gb        = 16;
    p.fp32_tflops   = 1;  // 1e12 FLOP/s
    p.fp16_tflops   = 2;
    p.flash_bw_gbps = 2;
    p.measured      = true;
    return p;
}
}  // namespace

TEST(Cost, RooflineMemoryAndComputeBound) {
    ModelSpec m;  // 7B fp16, no context
    auto c = forward_cost(toy(), m, 1, 0);
    EXPECT_FALSE(c.compute_bound);
    EXPECT_NEAR(c.t_memory, (14e9 + kv_bytes_per_token(m)) / 1e11, 1e-12);
    EXPECT_NEAR(c.time, c.t_memory, 1e-12);
    // 2·7e9·n FLOPs at 2e12 FLOP/s crosses 0.14 s at n ≈ 20.
    auto big = forward_cost(toy(), m, 64, 0);
    EXPECT_TRUE(big.compute_bound);
    EXPECT_GT(big.time, c.time);
    // KV bytes: 2 · 32 · 4096 · 2 B = 524288 B per token.
    EXPECT_DOUBLE_EQ(kv_bytes_per_token(m), 524288.0);
    auto hw             = toy();
    hw.call_overhead_us = 100;
    EXPECT_NEAR(forward_cost(hw, m, 1, 0).time - c.time, 1e-4, 1e-12);
}

TEST(Cost, MemoryPlanFitsStreamsAndKvCapacity) {
    auto p = plan_memory(toy(), 0, 14.0, 524288.0, 1000);
    EXPECT_TRUE(p.fits);
    EXPECT_EQ(p.kv_capacity_tokens, int64_t(2e9 / 524288.0));
    auto s = plan_memory(toy(), 8.0, 14.0, 524288.0, 0);  // CATS-style: 6 GB of weights re-read per forward
    EXPECT_FALSE(s.fits);
    EXPECT_NEAR(s.streamed_gb, 6.0, 1e-12);
    EXPECT_NEAR(s.stream_time_s, 3.0, 1e-12);
    EXPECT_EQ(s.kv_capacity_tokens, 0);
}

TEST(Cost, ChainTimingApproachesEwifWhenMemoryBound) {
    // Memory-bound, no overhead: c = bytes ratio and the verify pass costs ~ one forward, so the hardware
    // speedup is close to EWIF with that c.
    ModelSpec target, draft;
    draft.params_b = 0.07;
    double e       = expected_tokens_chain({0.7, 0.7, 0.7, 0.7});
    auto t         = chain_timing(toy(), target, draft, 4, 0, e);
    double ew      = ewif_sd(0.7, t.c, 4);
    EXPECT_NEAR(t.speedup, ew, 0.05 * ew);
    EXPECT_LT(t.speedup, ew);  // verification of 5 tokens is not free (KV writes)
    // Streaming weights from flash makes the target dominate: speedup → expected tokens.
    auto s = chain_timing(toy(), target, draft, 4, 0, e, 6.0);
    EXPECT_GT(s.speedup, t.speedup);
    EXPECT_LT(s.speedup, e);
    EXPECT_THROW(chain_timing(toy(), target, draft, 4, 0, 0.5), InvalidInput);
    ModelSpec bad = draft;
    bad.compute   = "fp8";
    EXPECT_THROW(chain_timing(toy(), target, bad, 4, 0, e), InvalidInput);
}

TEST(Cost, ChainRooflineHasTheThreeOperatingPoints) {
    ModelSpec target, draft;
    draft.params_b                       = 0.5;
    const std::vector<RooflinePoint> pts = chain_roofline(toy(), target, draft, 4, 256);
    ASSERT_EQ(pts.size(), 3u);
    EXPECT_EQ(pts[1].label, "target verify, 5 tokens");
    const ForwardCost one = forward_cost(toy(), target, 1, 256), five = forward_cost(toy(), target, 5, 256);
    EXPECT_DOUBLE_EQ(pts[0].intensity, one.flops / one.bytes);
    EXPECT_DOUBLE_EQ(pts[1].flops_per_s, five.flops / five.time);
    EXPECT_GT(pts[1].intensity, pts[0].intensity) << "verifying 5 tokens reads the weights once for 5x the FLOPs";
}

// A hybrid's recurrent state (issue #50): snapshots move a state per verified token, rerun one token's inputs and a
// checkpoint; a dense spec is unchanged; bad values are refused by name and the JSON round-trips.
TEST(AnalyticCost, RecurrentStateRollbackTerm) {
    ModelSpec m;
    EXPECT_EQ(state_bytes(m, 8), 0.0);
    m.state_mb = 20, m.state_input_kb = 100;
    EXPECT_DOUBLE_EQ(state_bytes(m, 8), 2 * 20e6 + 8 * 20e6);
    m.rollback = "rerun";
    EXPECT_DOUBLE_EQ(state_bytes(m, 8), 2 * 20e6 + 8 * 100e3 + 4 * 20e6);
    EXPECT_LT(state_bytes(m, 16), [&] {
        ModelSpec s = m;
        s.rollback  = "snapshot";
        return state_bytes(s, 16);
    }()) << "at 16 tokens rerun moves less";
    m.rollback = "checkpoints";
    EXPECT_THROW(validate(m, "target"), InvalidInput);
    m.rollback = "rerun", m.state_mb = -1;
    EXPECT_THROW(validate(m, "target"), InvalidInput);
}
