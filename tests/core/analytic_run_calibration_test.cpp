// Calibration from engine runs on simulated runs with a known truth: the engine's process (chain, Max-Gram with
// short drafts, a vertical cascade) is simulated step by step with known acceptance and a known time law, and
// the fit must recover the law and predict the speedup; bad runs are rejected naming the field.
#include "core/analytic/checks.h"
#include "core/analytic/cost.h"
#include "core/analytic/montecarlo.h"
#include "core/analytic/run_calibration.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace speculum::analytic;

namespace {

// Seconds: what each unit of work costs in the simulated machine.
struct Law {
    double t_plain          = 0.010;  // plain decoding step of the target
    double verify_fixed     = 0.012;  // verification pass over w tokens: fixed + per_token · w
    double verify_per_token = 0.0015;
    double t_pass           = 0.002;    // one forward pass of the draft model
    double t_maxgram        = 0.00002;  // one Max-Gram call
    double overhead         = 0.0005;   // per target step
    double knee             = 0.0;      // extra seconds per token beyond 4 tokens in a pass (a compute-bound CPU)
    // A mixture of experts: seconds per distinct expert one layer of the pass reads, from this usage and sharing
    double per_expert = 0.0;
    std::vector<double> usage;
    double rho = 1.0;
    double distinct(int w) const { return expected_distinct_experts(usage, w, rho); }
    double verify(int w) const {
        return verify_fixed + verify_per_token * w + knee * std::max(0, w - 4) +
               (per_expert > 0 ? per_expert * distinct(w) : 0.0);
    }
};

struct Sim {
    std::vector<double> alpha;  // target, per position
    int gamma           = 4;
    int inner_gamma     = 0;      // > 0: level 1 reviews Max-Gram drafts of this length (vertical cascade)
    double alpha_inner  = 0.5;    // level 1's acceptance of Max-Gram tokens
    bool maxgram_leaf   = false;  // level 1 is Max-Gram (chain), which may return short drafts
    double short_chance = 0.0;    // P(Max-Gram finds no match and returns an empty draft)
    int prompts = 20, tokens = 256;
    uint64_t seed      = 1;
    bool record_widths = false;  // the report gives passes by width (engine reports since issue #24)
};

MeasuredEngineRun simulate(const Sim& s, const Law& law = {}) {
    Rng rng(s.seed);
    MeasuredEngineRun r;
    r.source           = std::string("sim");
    r.target           = std::string("t");
    const bool cascade = s.inner_gamma > 0;
    const int n        = cascade ? 2 : 1;
    r.k_matrix.assign(size_t(n) + 1, std::vector<int>(size_t(n) + 1, 0));
    r.k_matrix[0][1] = s.gamma;
    if (cascade) r.k_matrix[1][2] = s.inner_gamma;
    r.levels.resize(size_t(n) + 1);
    r.levels[0].name = "t";
    r.levels[1]      = {.name = s.maxgram_leaf ? "mag" : "draft", .per_call = s.maxgram_leaf};
    if (cascade) r.levels[2] = {.name = "mag", .per_call = true};
    r.pos_reached.assign(size_t(s.gamma), 0);
    r.pos_accepted.assign(size_t(s.gamma), 0);
    for (int p = 0; p < s.prompts; ++p) {
        r.generated.push_back(s.tokens);
        for (int left = s.tokens; left > 0;) {
            int k = std::min(s.gamma, left - 1), len = k;
            if (k > 0) {  // draft
                if (cascade) {
                    MeasuredLevel& l1 = r.levels[1];
                    ++l1.n_calls;
                    for (int made = 0; made < k;) {
                        int g = std::min(s.inner_gamma, k - made - 1);
                        if (g > 0) ++r.levels[2].n_calls, r.levels[2].t_s += law.t_maxgram;
                        int a = 0;
                        while (a < g && rng.uniform() < s.alpha_inner) ++a;
                        ++l1.n_forward, l1.t_s += law.t_pass, l1.n_reviewed += g, l1.n_review_accepted += a;
                        made += a + 1;
                    }
                } else if (s.maxgram_leaf) {
                    ++r.levels[1].n_calls, r.levels[1].t_s += law.t_maxgram;
                    if (rng.uniform() < s.short_chance) len = 0;  // no suffix match: Max-Gram returns nothing
                } else {
                    ++r.levels[1].n_calls, r.levels[1].n_forward += k, r.levels[1].t_s += k * law.t_pass;
                }
            }
            int a = 0;  // verify: the target reviews the len drafted tokens
            while (a < len && rng.uniform() < s.alpha[size_t(a)]) ++a;
            for (int i = 0; i < len && i <= a; ++i) ++r.pos_reached[size_t(i)], r.pos_accepted[size_t(i)] += i < a;
            ++r.n_steps, r.n_drafted += len;
            r.levels[0].n_reviewed += len, r.levels[0].n_review_accepted += a;
            r.t_verify_s += law.verify(len + 1);
            if (s.record_widths) {
                if (r.verify_width_passes.size() <= size_t(len + 1))
                    r.verify_width_passes.resize(size_t(len) + 2, 0), r.verify_width_s.resize(size_t(len) + 2, 0.0);
                ++r.verify_width_passes[size_t(len) + 1];
                r.verify_width_s[size_t(len) + 1] += law.verify(len + 1);
            }
            left -= a + 1;
        }
    }
    for (size_t j = 1; j < r.levels.size(); ++j) r.t_draft_s += r.levels[j].t_s;
    r.t_decode_s            = r.t_verify_s + r.t_draft_s + law.overhead * double(r.n_steps);
    r.baseline_tokens_per_s = 1.0 / law.t_plain;
    r.speedup               = double(s.prompts * s.tokens) / r.t_decode_s * law.t_plain;
    return r;
}

const std::vector<double> kAlpha{0.9, 0.85, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3};

}  // namespace

TEST(RunCalibration, RecoversTheTimeLawAndPredictsChains) {
    Law law;
    auto k3  = simulate({.alpha = kAlpha, .gamma = 3, .seed = 1});
    auto k7  = simulate({.alpha = kAlpha, .gamma = 7, .seed = 2});
    auto cal = calibrate_engine_runs({k3, k7});
    ASSERT_EQ(cal.targets.size(), 1u);
    const FittedTarget& t = cal.targets[0];
    EXPECT_NEAR(t.t_plain_s, law.t_plain, 1e-12);
    // Each run's mean verification time lies exactly on the law's line, so two widths give the line exactly (in
    // plain steps).
    EXPECT_NEAR(t.verify_fixed, law.verify_fixed / law.t_plain, 1e-9);
    EXPECT_NEAR(t.verify_per_token, law.verify_per_token / law.t_plain, 1e-9);
    EXPECT_NEAR(t.overhead_per_step, law.overhead / law.t_plain, 1e-9);
    ASSERT_EQ(cal.levels.size(), 1u);
    EXPECT_NEAR(cal.levels[0].c_per_pass, law.t_pass / law.t_plain, 1e-9);
    EXPECT_NEAR(cal.levels[0].c, law.t_pass / law.t_plain, 0.02 * law.t_pass / law.t_plain);  // modeled passes
    for (const auto& p : cal.runs) {
        EXPECT_LT(std::abs(p.residual), 0.02) << p.source;
        EXPECT_NEAR(p.tokens_per_step_modeled / p.tokens_per_step_measured, 1.0, 0.02);
    }
    for (size_t i = 0; i < 3; ++i) EXPECT_NEAR(cal.runs[0].alpha_target[i], kAlpha[i], 0.03) << i;
    // A machine uniformly twice as slow during one run changes no fitted figure (times are in its plain steps).
    auto slow = k7;
    slow.t_decode_s *= 2, slow.t_draft_s *= 2, slow.t_verify_s *= 2, slow.levels[1].t_s *= 2;
    slow.baseline_tokens_per_s /= 2;
    auto both = calibrate_engine_runs({k3, slow});
    EXPECT_NEAR(both.targets[0].verify_per_token, t.verify_per_token, 1e-9);
    EXPECT_NEAR(both.levels[0].c, cal.levels[0].c, 1e-9);
    EXPECT_NEAR(both.runs[1].residual, cal.runs[1].residual, 1e-9);
    // A wrong measured figure shows up as a residual.
    k3.speedup *= 1.5;
    EXPECT_NEAR(calibrate_engine_runs({k3}).runs[0].residual, 1.0 / 1.5 - 1.0, 0.02);
}

TEST(RunCalibration, MaxGramShortDraftsCountAsRejections) {
    // Max-Gram returns an empty draft 40 % of the time: the ratio over drafted positions (≈ 0.5) overstates the
    // acceptance per asked position (0.6 · 0.5 = 0.3); the fit (a missing token is a rejection) finds the latter and
    // reproduces the measured tokens per step.
    auto run = simulate(
        {.alpha = std::vector<double>(5, 0.5), .gamma = 5, .maxgram_leaf = true, .short_chance = 0.4, .seed = 3});
    auto raw      = double(run.pos_accepted[0]) / double(run.pos_reached[0]);
    auto cal      = calibrate_engine_runs({run});
    const auto& p = cal.runs[0];
    EXPECT_NEAR(raw, 0.5, 0.03);
    EXPECT_NEAR(p.alpha_target[0], 0.3, 0.03);
    EXPECT_NEAR(p.tokens_per_step_modeled / p.tokens_per_step_measured, 1.0, 0.03);
    EXPECT_TRUE(cal.levels[0].per_call);
}

TEST(RunCalibration, CascadeRecoversTheReviewerAcceptance) {
    for (double inner : {0.3, 0.7}) {
        auto run      = simulate({.alpha = kAlpha, .gamma = 6, .inner_gamma = 3, .alpha_inner = inner, .seed = 4});
        auto cal      = calibrate_engine_runs({run});
        const auto& p = cal.runs[0];
        ASSERT_EQ(p.levels.size(), 3u);
        EXPECT_NEAR(p.levels[1].alpha, inner, 0.03);
        EXPECT_NEAR(p.levels[1].accepted_modeled, p.levels[1].accepted_measured, 1e-6);
        EXPECT_NEAR(p.levels[1].units_modeled / p.levels[1].units_measured, 1.0, 0.03);  // reviewer steps
        EXPECT_NEAR(p.levels[2].units_modeled / p.levels[2].units_measured, 1.0, 0.03);  // Max-Gram calls
        EXPECT_LT(std::abs(p.residual), 0.02);
        EXPECT_EQ(p.levels[2].alpha, -1);  // a leaf has no acceptance of its own
    }
}

TEST(RunCalibration, VerificationCostByWidthReplacesTheLine) {
    // A verification pass that gets steeply dearer past 4 tokens, as on a compute-bound CPU: Max-Gram chains whose
    // drafts are often empty (width 1) mixed with full ones, at two draft lengths. A line over the runs' mean widths
    // misses both; the passes by width give each run's verification time exactly.
    Law law;
    law.knee = 0.006;
    Sim a{.alpha = std::vector<double>(8, 0.6), .gamma = 3, .maxgram_leaf = true, .short_chance = 0.5, .seed = 7};
    Sim b   = a;
    b.gamma = 7, b.seed = 8;
    auto line       = calibrate_engine_runs({simulate(a, law), simulate(b, law)});
    a.record_widths = b.record_widths = true;
    auto by_width                     = calibrate_engine_runs({simulate(a, law), simulate(b, law)});
    double worst_line                 = 0;
    for (const auto& p : line.runs) worst_line = std::max(worst_line, std::abs(p.residual));
    EXPECT_GT(worst_line, 0.03) << "the line should miss a knee";
    for (const auto& p : by_width.runs) EXPECT_LT(std::abs(p.residual), 0.01) << p.source;
    const auto& v = by_width.targets[0].verify_by_width;
    ASSERT_GE(v.size(), 9u);
    EXPECT_NEAR(v[1], law.verify(1) / law.t_plain, 1e-9);
    EXPECT_NEAR(v[8], law.verify(8) / law.t_plain, 1e-9);
}

// A mixture-of-experts target (issue #49): a pass costs a fixed part, a part per token and a part per distinct
// expert a layer reads, whose count grows slower than the tokens (routers share experts across a pass's tokens).
// Runs that record their routing let calibration fit the three apart and the sharing exponent, and model a width no
// run verified from the usage; a run without the routing keeps the line.
TEST(RunCalibration, MixtureOfExpertsTermFromTheRecordedRouting) {
    Law law;
    law.verify_per_token = 0.0004, law.per_expert = 0.0009, law.rho = 0.6;
    law.usage.assign(16, 0.0);
    for (int e = 0; e < 16; ++e) law.usage[size_t(e)] = 4.0 * (e < 4 ? 0.15 : 0.4 / 12.0);  // skewed, sums to 4
    Sim a{.alpha = std::vector<double>(8, 0.6), .gamma = 3, .maxgram_leaf = true, .short_chance = 0.4, .seed = 3};
    Sim b   = a;
    b.gamma = 7, b.seed = 4;
    a.record_widths = b.record_widths = true;
    auto routed                       = [&](MeasuredEngineRun r) {
        r.expert_usage = law.usage;
        r.distinct_by_width.assign(r.verify_width_passes.size(), 0.0);
        for (size_t w = 1; w < r.verify_width_passes.size(); ++w)
            if (r.verify_width_passes[w] > 0) r.distinct_by_width[w] = law.distinct(int(w));
        return r;
    };
    const auto cal        = calibrate_engine_runs({routed(simulate(a, law)), routed(simulate(b, law))});
    const FittedTarget& t = cal.targets[0];
    EXPECT_NEAR(t.verify_per_expert, law.per_expert / law.t_plain, 1e-6);
    EXPECT_NEAR(t.verify_per_token, law.verify_per_token / law.t_plain, 1e-6);
    EXPECT_NEAR(t.verify_fixed, law.verify_fixed / law.t_plain, 1e-6);
    EXPECT_NEAR(t.expert_sharing, law.rho, 0.02);
    // A width no run verified: from the usage and the fitted sharing, within 1 %.
    EXPECT_EQ(t.distinct_by_width.size() > 12 ? t.distinct_by_width[12] : 0.0, 0.0);
    EXPECT_NEAR(t.verify_modeled(12), law.verify(12) / law.t_plain, 0.01 * law.verify(12) / law.t_plain);
    for (const auto& p : cal.runs) EXPECT_LT(std::abs(p.residual), 0.01) << p.source;
    // Without the routing: no MoE term, and the modeled pass is the line.
    const auto plain = calibrate_engine_runs({simulate(a, law), simulate(b, law)});
    EXPECT_EQ(plain.targets[0].verify_per_expert, 0.0);
    EXPECT_DOUBLE_EQ(plain.targets[0].verify_modeled(12),
                     plain.targets[0].verify_fixed + 12 * plain.targets[0].verify_per_token);
}

TEST(RunCalibration, AModelDraftingAndReviewingIsTwoCosts) {
    // The same draft model as a leaf (one token per pass) and as a reviewer (passes over inner + 1 tokens, dearer):
    // pooled by name alone one c would serve both; by role each gets its own.
    Law law;
    auto leaf   = simulate({.alpha = kAlpha, .gamma = 4, .seed = 5});
    Law dear    = law;
    dear.t_pass = 0.005;  // a reviewer pass over 4 tokens
    auto review = simulate({.alpha = kAlpha, .gamma = 6, .inner_gamma = 3, .alpha_inner = 0.5, .seed = 6}, dear);
    auto cal    = calibrate_engine_runs({leaf, review});
    ASSERT_EQ(cal.levels.size(), 3u);  // draft as drafter, draft as reviewer of 4, Max-Gram
    for (const auto& l : cal.levels) {
        if (l.name != "draft") continue;
        if (l.role == "drafter") {
            EXPECT_NEAR(l.c_per_pass, law.t_pass / law.t_plain, 1e-9);
        } else {
            EXPECT_EQ(l.role, "reviewer of 4");
            EXPECT_NEAR(l.c_per_pass, dear.t_pass / law.t_plain, 1e-9);
        }
    }
    for (const auto& p : cal.runs) EXPECT_LT(std::abs(p.residual), 0.03) << p.source;
}

TEST(RunCalibration, RejectsInconsistentRuns) {
    auto ok     = simulate({.alpha = kAlpha, .gamma = 3, .prompts = 2, .tokens = 32});
    auto expect = [&](MeasuredEngineRun r, const std::string& field) {
        try {
            calibrate_engine_runs({r});
            ADD_FAILURE() << "accepted; expected an error naming " << field;
        } catch (const InvalidInput& e) {
            EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("sim: "), std::string::npos) << e.what();  // names the source
        }
    };
    auto r                  = ok;
    r.baseline_tokens_per_s = 0;
    expect(r, "--no-baseline");
    r                = ok;
    r.k_matrix[1][0] = 1;
    expect(r, "k_matrix[1][0]");
    r = ok;
    r.levels.pop_back();
    expect(r, "levels");
    r                 = ok;
    r.pos_accepted[1] = r.pos_reached[1] + 1;
    expect(r, "pos_accepted[1]");
    r              = ok;
    r.generated[1] = 0;
    expect(r, "runs[1].n_generated");
    r            = ok;
    r.t_verify_s = -1;
    expect(r, "t_verify_s");
    EXPECT_THROW(calibrate_engine_runs({}), InvalidInput);
}
