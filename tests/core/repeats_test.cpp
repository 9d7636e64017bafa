// Repeated measurement: the distribution-free interval of a median, the CPU share of other processes, and
// session::run's passes (pairs per prompt, stop rules, the first pass's counts).
#include "core/analytic/calibration.h"
#include "core/clock.h"
#include "core/hw/cpu_load.h"
#include "core/session/run.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

using namespace speculum;

TEST(MedianInterval, OrderStatisticsWithBinomialCoverage) {
    EXPECT_EQ(analytic::median_interval({}).n, 0);
    const analytic::MedianInterval one = analytic::median_interval({2.0});
    EXPECT_EQ(one.median, 2.0);
    EXPECT_EQ(one.lo, 2.0);
    EXPECT_EQ(one.coverage, 0.0);
    // Five samples cannot reach 95 %: [min, max] covers 1 − 2/32 = 93.75 %.
    const analytic::MedianInterval five = analytic::median_interval({5, 1, 4, 2, 3});
    EXPECT_EQ(five.median, 3.0);
    EXPECT_EQ(five.lo, 1.0);
    EXPECT_EQ(five.hi, 5.0);
    EXPECT_NEAR(five.coverage, 1.0 - 2.0 / 32.0, 1e-12);
    // Six: [x(1), x(6)] covers 1 − 2/64 = 96.9 %; x(2)..x(5) would cover 1 − 14/64 < 95 %.
    const analytic::MedianInterval six = analytic::median_interval({6, 1, 5, 2, 4, 3});
    EXPECT_EQ(six.median, 3.5);
    EXPECT_EQ(six.lo, 1.0);
    EXPECT_EQ(six.hi, 6.0);
    EXPECT_NEAR(six.coverage, 1.0 - 2.0 / 64.0, 1e-12);
    // 100 samples 1..100: the textbook 95 % interval is [x(40), x(61)] (coverage 0.9648).
    std::vector<double> x;
    for (int i = 100; i >= 1; --i) x.push_back(i);
    x.push_back(std::nan(""));  // dropped
    const analytic::MedianInterval h = analytic::median_interval(x);
    EXPECT_EQ(h.n, 100);
    EXPECT_EQ(h.median, 50.5);
    EXPECT_EQ(h.lo, 40.0);
    EXPECT_EQ(h.hi, 61.0);
    EXPECT_NEAR(h.coverage, 0.9648, 1e-4);
    EXPECT_NEAR(h.rel_width(), 21.0 / 50.5, 1e-12);
}

TEST(CpuLoad, OwnWorkIsNotOtherLoad) {
    const hw::CpuSample a = hw::cpu_sample();
    if (!a.valid) GTEST_SKIP() << "no /proc/stat here";
    volatile double sink = 0;
    const auto until     = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (std::chrono::steady_clock::now() < until) sink = sink + 1.0;  // busy: this process's own CPU time
    const std::optional<double> other = hw::other_load(a, hw::cpu_sample());
    ASSERT_TRUE(other.has_value());
    EXPECT_GE(*other, 0.0);
    EXPECT_LE(*other, 1.0);
    EXPECT_FALSE(hw::other_load(a, a).has_value()) << "no time passed";
    hw::CpuSample invalid;
    EXPECT_FALSE(hw::other_load(invalid, a).has_value());
}

TEST(CpuLoad, LastLevelCacheFromSysfs) {
    const std::optional<uint64_t> llc = hw::last_level_cache_bytes();
    if (!llc) GTEST_SKIP() << "no cache information in sysfs here";
    EXPECT_GE(*llc, uint64_t(256) << 10) << "a last-level cache is at least 256 KiB";
    EXPECT_LE(*llc, uint64_t(4) << 30);
}

TEST(RunRepeats, StopRulesOnGivenSummaries) {
    engine::Repeats rep;
    session::RepeatSummary rs;
    rs.passes = 1;
    EXPECT_EQ(session::repeat_stop(rep, rs), "1 pass (the most)");
    rep.min = 2;
    rep.max = 10;
    EXPECT_EQ(session::repeat_stop(rep, rs), "") << "below the minimum";
    rs.passes        = 2;
    rs.speedup_pairs = {1.0, 2.0};
    rs.speedup       = analytic::median_interval(rs.speedup_pairs);
    EXPECT_EQ(session::repeat_stop(rep, rs), "") << "two pairs have no 95 % interval";
    rs.passes        = 6;
    rs.speedup_pairs = {1.0, 1.01, 1.02, 1.0, 1.01, 1.02};
    rs.speedup       = analytic::median_interval(rs.speedup_pairs);
    EXPECT_EQ(session::repeat_stop(rep, rs), "interval within 5 %");
    rep.min_time_s = 2.0;
    rs.wall_s      = 1.0;
    EXPECT_EQ(session::repeat_stop(rep, rs), "") << "the minimum time is not reached";
    rs.wall_s        = 3.0;
    rs.speedup_pairs = {1.0, 3.0, 1.0, 3.0, 1.0, 3.0};
    rs.speedup       = analytic::median_interval(rs.speedup_pairs);
    EXPECT_EQ(session::repeat_stop(rep, rs), "") << "too wide";
    rep.max_time_s = 2.5;
    EXPECT_EQ(session::repeat_stop(rep, rs), "time budget (2 s) spent");
    rep.rel_width = 0;
    EXPECT_EQ(session::repeat_stop(rep, rs), "the minimum of 2 s and 2 passes reached");
    session::RepeatSummary none;
    none.passes    = 2;
    none.wall_s    = 3.0;
    rep.rel_width  = 0.05;
    rep.max_time_s = 0;
    EXPECT_EQ(session::repeat_stop(rep, none), "no speedup pairs (no baseline)");
    none.passes = 10;
    EXPECT_EQ(session::repeat_stop(rep, none), "10 passes (the most)");
}

// The engine's and the session's times come from a stepping clock (1 ms a reading), so every pass of the same greedy
// decode measures the same speedup and the stop rules decide the same way on any machine, however loaded.
TEST(RunRepeats, PassesGivePairsAndStopByTheRules) {
    const SteppingClock clock(1'000'000);
    const session::Target target = session::load_target(session::TargetSource::random(model::SyntheticSpec{}));
    engine::SpecConfig cfg;
    drafts::DraftSpec self;
    self.exit_layer    = 0;
    cfg.levels         = {self};
    cfg.gamma          = {3};
    cfg.prompt_ids     = {1, 2, 3, 4};
    cfg.max_new_tokens = 12;

    const session::RunOutcome one = session::run(cfg, target);
    EXPECT_EQ(one.repeats.passes, 1);
    EXPECT_EQ(one.repeats.speedup_pairs.size(), 1u);
    EXPECT_EQ(one.repeats.stop, "1 pass (the most)");

    cfg.repeats.min = cfg.repeats.max = 4;
    int passes_seen                   = 0;
    session::RunHooks hooks;
    int prompts_done     = 0;
    hooks.on_prompt_done = [&](size_t, const session::PromptRun&, const engine::RunStats&) { ++prompts_done; };
    hooks.on_pass_done   = [&](const session::RepeatSummary& r) { EXPECT_EQ(r.passes, ++passes_seen); };
    const session::RunOutcome four = session::run(cfg, target, hooks);
    EXPECT_EQ(four.repeats.passes, 4);
    EXPECT_EQ(passes_seen, 4);
    EXPECT_EQ(prompts_done, 1) << "per-prompt hooks see the first pass only";
    EXPECT_EQ(four.repeats.speedup_pairs.size(), 4u);
    EXPECT_EQ(four.repeats.speedup.n, 4);
    EXPECT_EQ(four.repeats.stop, "4 passes (the most)");
    EXPECT_EQ(four.total.n_drafted, one.total.n_drafted) << "the counts are the first pass's (greedy repeats them)";
    EXPECT_EQ(four.runs.size(), 1u);
    EXPECT_GE(four.repeats.speedup.hi, four.repeats.speedup.lo);

    EXPECT_EQ(four.repeats.speedup.lo, four.repeats.speedup.hi) << "the clock steps: every pass times the same";

    // A width stops at the sixth pair (the first with a 95 % interval), before the most.
    cfg.repeats.min                 = 1;
    cfg.repeats.max                 = 50;
    cfg.repeats.rel_width           = 0.01;
    const session::RunOutcome loose = session::run(cfg, target);
    EXPECT_EQ(loose.repeats.passes, 6);
    EXPECT_EQ(loose.repeats.stop, "interval within 1 %");

    cfg.repeats.rel_width            = 1e-9;  // never precise enough: the time budget ends it, after the minimum
    cfg.repeats.min                  = 3;
    cfg.repeats.max_time_s           = 1e-6;
    const session::RunOutcome budget = session::run(cfg, target);
    EXPECT_EQ(budget.repeats.passes, 3);
    EXPECT_NE(budget.repeats.stop.find("time budget"), std::string::npos) << budget.repeats.stop;

    cfg.baseline = false;
    EXPECT_THROW(cfg.validate(), std::invalid_argument) << "repeats measure the speedup: they need the baseline";
}
