// Where the speedup went: the waterfall's terms from a run's own figures, ending exactly at its measured speedup;
// the oracle headroom from the measured verification curve; the combined-proposer oracle over several runs. Also a
// real engine run on a random-weight target (costs real): its steps end at the speedup the engine reported.
#include "core/engine/speedup_waterfall.h"
#include "engine_fixtures.h"

#include <gtest/gtest.h>

namespace speculum::test {
namespace {

using engine::RunStats;
using engine::speedup_waterfall;

// 40 tokens in 10 target passes; one plain step = 10 ms; draft 20 ms, verification 180 ms, decode 250 ms.
RunStats hand_made() {
    RunStats s;
    s.n_generated           = 40;
    s.n_steps               = 10;
    s.n_drafted             = 40;
    s.n_accepted            = 30;
    s.pos_reached           = {10, 9, 8, 7};
    s.pos_accepted          = {9, 8, 7, 6};
    s.baseline_tokens_per_s = 100.0;
    s.t_draft_s             = 0.020;
    s.t_verify_s            = 0.180;
    s.t_decode_s            = 0.250;
    s.tokens_per_s          = 40 / 0.250;
    s.speedup               = s.tokens_per_s / s.baseline_tokens_per_s;
    s.verify_width_passes   = {0, 0, 0, 0, 0, 10};  // ten 5-token passes of 18 ms
    s.verify_width_s        = {0, 0, 0, 0, 0, 0.180};
    return s;
}

TEST(SpeedupWaterfall, TermsComeFromTheRunAndEndAtItsMeasuredSpeedup) {
    const RunStats s                 = hand_made();
    const engine::SpeedupWaterfall w = speedup_waterfall(s);
    ASSERT_TRUE(w.unavailable.empty()) << w.unavailable;
    ASSERT_EQ(w.steps.size(), 4u);
    EXPECT_EQ(w.steps[0].name, "acceptance alone");
    EXPECT_DOUBLE_EQ(w.steps[0].speedup, 4.0);                 // 40 tokens / 10 passes
    EXPECT_DOUBLE_EQ(w.steps[1].speedup, 0.4 / (0.1 + 0.02));  // n·t₁ / (passes·t₁ + t_draft)
    EXPECT_DOUBLE_EQ(w.steps[2].speedup, 0.4 / 0.2);           // n·t₁ / (t_draft + t_verify)
    EXPECT_DOUBLE_EQ(w.steps[3].speedup, s.speedup);           // = measured
    EXPECT_DOUBLE_EQ(w.measured, 1.6);
    double sum = w.steps[0].speedup;
    for (size_t i = 1; i < w.steps.size(); ++i) {
        EXPECT_LE(w.steps[i].delta, 0.0) << "each cost takes speedup away";
        EXPECT_FALSE(w.steps[i].modeled) << "every term is measured";
        sum += w.steps[i].delta;
    }
    EXPECT_NEAR(sum, w.measured, 1e-12);
    EXPECT_NE(w.steps[1].detail.find("0.20 decoding steps of drafting per round"), std::string::npos)
        << w.steps[1].detail;
    // Headroom: 5 tokens a pass at 1.8 steps a pass.
    EXPECT_EQ(w.oracle_width, 5);
    EXPECT_NEAR(w.oracle_speedup, 5.0 / 1.8, 1e-9);
    const nlohmann::json j = w;
    EXPECT_EQ(j["steps"].size(), 4u);
    EXPECT_TRUE(j["headroom"]["modeled"].get<bool>());
}

TEST(SpeedupWaterfall, SaysWhyThereIsNone) {
    RunStats s              = hand_made();
    s.baseline_tokens_per_s = 0;
    EXPECT_NE(speedup_waterfall(s).unavailable.find("no autoregressive baseline"), std::string::npos);
    EXPECT_TRUE(speedup_waterfall(s).steps.empty());
    EXPECT_EQ(nlohmann::json(speedup_waterfall(s)).count("steps"), 0u);
    s             = hand_made();
    s.n_generated = 0;
    EXPECT_EQ(speedup_waterfall(s).unavailable, "nothing was generated");
}

TEST(SpeedupWaterfall, CombinedOracleTakesTheBestDrafterPerPosition) {
    RunStats a = hand_made(), b = hand_made();
    a.pos_reached = {10, 10}, a.pos_accepted = {9, 2};         // α = 0.9, 0.2
    b.pos_reached = {10, 10, 10}, b.pos_accepted = {5, 8, 5};  // α = 0.5, 0.8, 0.5
    const engine::CombinedOracle o = engine::combined_oracle({&a, &b});
    EXPECT_EQ(o.alpha, (std::vector<double>{0.9, 0.8, 0.5}));
    EXPECT_EQ(o.best_run, (std::vector<int>{0, 1, 1}));
    EXPECT_NEAR(o.accepted_length, 0.9 + 0.72 + 0.36, 1e-12);
    // Cheapest draft per drafted token: b's 0.2 steps a round over 3 positions (a's is 0.2 over 2); verification
    // of the longest run (b): 1.8 steps a round.
    EXPECT_NEAR(o.speedup, (1.0 + o.accepted_length) / (3 * (0.2 / 3) + 1.8), 1e-9);
    EXPECT_EQ(engine::combined_oracle({}).speedup, 0.0);
}

TEST(SpeedupWaterfall, ARealRunEndsAtTheSpeedupTheEngineReported) {
    const model::Model target = model::make_synthetic_model(engine_target_spec(2, 5));
    const std::vector<int32_t> prompt{7, 1, 33, 9, 2, 71};
    const std::vector<int32_t> ref = greedy_reference(target, prompt, 40);
    engine::SpecConfig c;
    c.levels.resize(1);
    c.gamma          = {4};
    c.max_new_tokens = 24;
    c.context        = exact_ctx();
    c.baseline       = true;
    engine::SpecEngine eng(target, c, std::make_shared<OracleDrafter>(prompt, ref, 96, std::vector<int32_t>{3}));
    const engine::RunStats s = eng.run(prompt, {}, {}).stats;
    ASSERT_GT(s.speedup, 0.0);
    const engine::SpeedupWaterfall w = speedup_waterfall(s);
    ASSERT_EQ(w.steps.size(), 4u);
    EXPECT_NEAR(w.measured, s.speedup, 1e-9 * s.speedup);
    EXPECT_DOUBLE_EQ(w.steps[0].speedup, s.mean_accepted_length());
    EXPECT_GT(w.oracle_speedup, 0.0) << "the run measured its verification widths";
}

// The verification passes by context length: a run whose context crosses a bucket's end records passes in both
// buckets (every pass once, with its width), the waterfall carries them, and its verification detail names them.
TEST(SpeedupWaterfall, TheVerificationTermIsMeasuredByContextLength) {
    model::SyntheticSpec spec = engine_target_spec(2, 5);
    spec.n_ctx                = 512;
    const model::Model target = model::make_synthetic_model(spec);
    const model::ContextConfig ctx{.n_ctx = 512, .n_batch = 64, .path = model::ForwardPath::reference};
    std::vector<int32_t> prompt;
    for (int32_t i = 0; i < engine::kVerifyContextBucket - 10; ++i) prompt.push_back((i * 7 + 3) % 96);
    std::vector<int32_t> ref;
    {
        model::InferenceContext ic(target, ctx);
        model::Sampler sampler;
        model::generate(ic, sampler, prompt, 40, [&](int32_t t) {
            ref.push_back(t);
            return true;
        });
    }
    engine::SpecConfig c;
    c.levels.resize(1);
    c.gamma          = {4};
    c.max_new_tokens = 30;
    c.context        = ctx;
    c.baseline       = true;
    engine::SpecEngine eng(target, c, std::make_shared<OracleDrafter>(prompt, ref, 96, std::vector<int32_t>{3}));
    const engine::RunStats s = eng.run(prompt, {}, {}).stats;
    const auto curve         = s.verify_context_curve();
    ASSERT_EQ(curve.size(), 2u) << "the context went from " << prompt.size() << " past "
                                << engine::kVerifyContextBucket;
    EXPECT_EQ(curve[0].context_from, 0);
    EXPECT_EQ(curve[1].context_from, engine::kVerifyContextBucket);
    EXPECT_EQ(curve[0].passes + curve[1].passes, s.n_steps);
    int64_t width_tokens = 0;
    for (size_t w = 0; w < s.verify_width_passes.size(); ++w) width_tokens += int64_t(w) * s.verify_width_passes[w];
    EXPECT_NEAR(curve[0].mean_width * double(curve[0].passes) + curve[1].mean_width * double(curve[1].passes),
                double(width_tokens), 1e-6);
    EXPECT_GT(curve[1].steps, 0.0);
    const engine::SpeedupWaterfall w = speedup_waterfall(s);
    EXPECT_EQ(w.verify_by_context, curve);
    EXPECT_NE(w.steps[2].detail.find("by context: 0-255 tokens"), std::string::npos) << w.steps[2].detail;
    EXPECT_EQ(nlohmann::json(w)["verification_by_context"].size(), 2u);
    // The stored figures read back (a sweep row, tune's probes).
    EXPECT_EQ(engine::run_figures_from_json(nlohmann::json(s)).verify_context_curve(), curve);
}

}  // namespace
}  // namespace speculum::test
