// Tune's search on a scripted evaluator (each drafter's acceptance and cost fixed, its runs' figures computed from
// them, so nothing depends on measured time): it finds the drafters that apply, prunes exactly what the model says
// cannot win and never measures it, measures the rest with successive halving, picks the best of what it measured
// (a tree of the best family here), confirms it with an interval, resumes from the store after a cancel, and stops
// the search at the budget on an injected clock. Also the chain model against a probe's own figures, and options.
#include "core/sweep/tune.h"
#include "core/store/hash.h"

#include "core/model/synthetic.h"
#include "support/fresh_path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

namespace speculum::sweep {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// A chain of `gamma` with acceptance alpha per position and cost c per drafted token: 100 rounds at a 10 ms step,
// a verification pass of w tokens costing 1 + 0.1 (w - 1) steps. Exactly what modeled_chain_speedup models.
engine::RunStats scripted_run(double alpha, double c, int gamma) {
    engine::RunStats s;
    const int rounds = 100;
    const double t1  = 0.01;
    s.n_steps        = rounds;
    double reach     = rounds;
    for (int k = 0; k < gamma; ++k) {
        const auto reached = int64_t(std::llround(reach));
        reach *= alpha;
        const auto accepted = int64_t(std::llround(reach));
        s.pos_reached.push_back(reached), s.pos_accepted.push_back(accepted);
        s.n_accepted += accepted;
    }
    s.n_drafted             = s.pos_reached.empty() ? 0 : s.pos_reached[0] * gamma;
    s.n_generated           = int32_t(rounds + s.n_accepted);
    s.baseline_tokens_per_s = 1.0 / t1;
    s.t_draft_s             = rounds * gamma * c * t1;
    s.t_verify_s            = rounds * (1.0 + 0.1 * gamma) * t1;
    s.t_decode_s            = s.t_draft_s + s.t_verify_s;
    s.verify_width_passes.assign(size_t(gamma) + 2, 0), s.verify_width_s.assign(size_t(gamma) + 2, 0.0);
    s.verify_width_passes[size_t(gamma) + 1] = rounds, s.verify_width_s[size_t(gamma) + 1] = s.t_verify_s;
    s.tokens_per_s = s.n_generated / s.t_decode_s;
    s.speedup      = s.tokens_per_s / s.baseline_tokens_per_s;
    return s;
}

class ScriptedEvaluator : public Evaluator {
public:
    std::map<std::string, std::pair<double, double>> drafters;  // label -> (alpha, c)
    std::vector<std::string> calls;                             // label of each evaluated configuration
    double* clock                     = nullptr;  // advanced by seconds_per_prompt for every prompt a run takes
    double seconds_per_prompt         = 0;
    bool compact_peak                 = false;  // the compact self-draft's figures follow its knobs
    static constexpr double kTreeGain = 1.05, kCascadeLoss = 0.9;

    std::string kind() const override { return "engine"; }
    std::string model_hash() const override { return "scripted-model"; }
    std::string dataset_hash(const json& config, int prompts) const override {
        return store::json_hash({{"prompts", prompts}, {"ids", config.value("prompt_ids", json::array())}});
    }
    void validate(const json&) const override {}
    EvalResult evaluate(const json& config, const EvalContext& ctx) override {
        const engine::SpecConfig cfg = config.get<engine::SpecConfig>();
        if (clock) *clock += seconds_per_prompt * ctx.prompts * std::max(1, cfg.repeats.max);
        const std::string label = cfg.levels.at(0).label;
        calls.push_back(label + (cfg.verification == engine::Verification::tree ? " tree" : "") +
                        (cfg.levels.size() > 1 ? " cascade" : ""));
        auto [alpha, c] = drafters.count(label) ? drafters.at(label) : std::pair{0.3, 0.2};
        if (compact_peak && cfg.levels[0].prune.ratio > 0)  // acceptance peaks at prune 0.625 + truncate 5 bits
            alpha = 0.95 - 0.6 * std::abs(cfg.levels[0].prune.ratio - 0.625) -
                    0.03 * std::abs(cfg.levels[0].weight_trunc_bits - 5),
            c = 0.04;
        engine::RunStats s = scripted_run(alpha, c, cfg.gamma[0]);
        double gain        = cfg.verification == engine::Verification::tree ? kTreeGain : 1.0;
        if (cfg.levels.size() > 1) gain *= kCascadeLoss;
        s.speedup *= gain;
        EvalResult r;
        r.stats                  = s;
        r.metrics["speedup"]     = s.speedup;
        r.metrics["draft_bytes"] = c * 1e6;
        r.prompts                = ctx.prompts;
        if (cfg.repeats.max > 1) {
            session::RepeatSummary rs;
            rs.passes            = cfg.repeats.max;
            rs.speedup           = {s.speedup, s.speedup * 0.97, s.speedup * 1.03, 2 * ctx.prompts, 0.95};
            r.stats["repeated"]  = rs;
            r.metrics["speedup"] = rs.speedup.median;
        }
        return r;
    }
    int max_parallel() const override { return 1; }
};

const model::Model& target() {
    static const model::Model m = [] {
        model::SyntheticSpec s;
        s.n_vocab = 64, s.n_embd = 32, s.n_layer = 4, s.n_head = 2, s.n_head_kv = 1, s.n_ff = 64, s.n_ctx = 128;
        return model::make_synthetic_model(s);
    }();
    return m;
}

TuneOptions options() {
    TuneOptions o;
    o.prompt_ids  = {1, 2, 3, 4};
    o.gammas      = {1, 2, 3, 4, 6, 8};
    o.min_prompts = 1, o.max_prompts = 4, o.eta = 2;
    o.tree_budgets = {8};
    o.p_mins       = {0.3};
    o.budget_s     = 1e9;
    return o;
}

ScriptedEvaluator scripted() {
    ScriptedEvaluator e;
    e.drafters["self: early exit after layer 1"] = {0.9, 0.05};  // the best family
    e.drafters["suffix decoding"]                = {0.6, 0.0};
    e.drafters["self: MXFP4 weights"]            = {0.95, 0.6};  // accepted, but too costly
    return e;
}

std::string winner_label(const TuneResult& r) {
    for (const TuneCandidate& c : r.candidates)
        if (c.label.find("(confirmed)") != std::string::npos) return c.label;
    return "";
}

TEST(Tune, FindsTheDraftersThatApply) {
    TuneOptions o = options();
    std::vector<std::string> names;
    for (const TuneFamily& f : tune_families(o, target())) names.push_back(f.name);
    EXPECT_THAT(names,
                ::testing::ElementsAre("suffix decoding", "prompt lookup", "Max-Gram", "self: early exit after layer 0",
                                       "self: early exit after layer 1", "self: skip every other FFN",
                                       "self: prune 0.5 + truncate 4 bits (compact)", "self: MXFP4 weights"));
    o.self_drafts   = false;
    o.draft_models  = {"/models/small.gguf"};
    o.eagle3_heads  = {"/models/head.gguf"};
    const auto fams = tune_families(o, target());
    ASSERT_EQ(fams.size(), 5u);
    EXPECT_EQ(fams[3].name, "EAGLE-3 head head");
    EXPECT_EQ(fams[4].levels[0].kind, drafts::DraftKind::model);
    EXPECT_EQ(fams[4].levels[0].model_path, "/models/small.gguf");
    EXPECT_TRUE(fams[0].statistical);
    EXPECT_FALSE(fams[4].statistical);
}

TEST(Tune, TheChainModelGivesAProbeItsOwnSpeedup) {
    const engine::RunStats probe = scripted_run(0.8, 0.1, 4);
    std::vector<double> curve(6, 0.0);
    curve[5] = 1.4;
    EXPECT_NEAR(modeled_chain_speedup(probe, 4, curve), probe.speedup, 1e-9);
    // Other lengths: the same acceptance and cost per token, the verification curve extended from one step at
    // width 1 through the measured 1.4 at width 5 (0.1 a token).
    EXPECT_NEAR(modeled_chain_speedup(probe, 6, curve), scripted_run(0.8, 0.1, 6).speedup, 0.02);
    EXPECT_NEAR(modeled_chain_speedup(probe, 2, curve), scripted_run(0.8, 0.1, 2).speedup, 0.02);
    engine::RunStats none      = probe;
    none.baseline_tokens_per_s = 0;
    EXPECT_EQ(modeled_chain_speedup(none, 4, curve), 0.0);
}

TEST(Tune, PrunesMeasuresAndPicksTheBestOfWhatItMeasured) {
    ScriptedEvaluator ev = scripted();
    auto store =
        store::ResultStore::open(test::fresh_tmp_path("tune_search.sqlite"), store::ResultStore::Mode::read_write);
    std::vector<TuneEvent> events;
    TuneHooks hooks;
    hooks.on_event      = [&](const TuneEvent& e) { events.push_back(e); };
    const TuneOptions o = options();
    const TuneResult r  = run_tune(o, target(), ev, *store, hooks);

    ASSERT_TRUE(r.winner.has_value());
    EXPECT_EQ(r.winner->levels[0].label, "self: early exit after layer 1");
    EXPECT_EQ(r.winner->verification, engine::Verification::tree) << "the tree of the best family measured best";
    EXPECT_THAT(winner_label(r), HasSubstr("Sequoia tree 8"));
    ASSERT_TRUE(r.confirmed.has_value());
    EXPECT_GT(r.confirmed->speedup.hi, r.confirmed->speedup.lo);
    EXPECT_EQ(r.waterfall.steps.size(), 4u);

    // Pruned: exactly the candidates modeled below prune_below x the best modeled one, and none of them measured
    // after its family's probe.
    double best_modeled = 0;
    for (const TuneCandidate& c : r.candidates) best_modeled = std::max(best_modeled, c.modeled_speedup.value_or(0.0));
    size_t pruned = 0;
    for (const TuneCandidate& c : r.candidates) {
        const bool is_pruned = c.state.rfind("pruned", 0) == 0;
        pruned += is_pruned;
        if (c.modeled_speedup) {
            EXPECT_EQ(is_pruned, *c.modeled_speedup < o.prune_below * best_modeled) << c.label;
        }
        if (!is_pruned) continue;
        for (const TuneEvent& e : events) {
            EXPECT_FALSE(e.candidate.label == c.label && e.phase != "probe") << c.label << " measured in " << e.phase;
        }
    }
    EXPECT_EQ(pruned, r.pruned);
    EXPECT_GT(r.pruned, 10u) << "most variants of the weak drafters are pruned";
    // The MXFP4 self-draft is accepted most but costs too much: pruned at every length but its probe.
    for (const TuneCandidate& c : r.candidates)
        if (c.family == "self: MXFP4 weights" && c.label.find(", gamma 4") == std::string::npos) {
            EXPECT_THAT(c.state, HasSubstr("pruned")) << c.label;
        }
    // Best of what it measured: no candidate measured at the last rung's prompts beat the winner's choice.
    double best_last = 0;
    for (const TuneCandidate& c : r.candidates)
        if (c.measured_speedup && c.prompts == o.max_prompts * r.prompt_scale &&
            c.label.find("(confirmed)") == std::string::npos)
            best_last = std::max(best_last, *c.measured_speedup);
    EXPECT_NEAR(best_last, scripted_run(0.9, 0.05, 8).speedup * ScriptedEvaluator::kTreeGain, 0.2);
    EXPECT_GT(r.measured, 8u);
    EXPECT_EQ(r.cached, 0u) << "a fresh store: a probe read again at the first rung is this run's own";
    const json j = r;
    EXPECT_EQ(j["candidates"].size(), r.candidates.size());
    EXPECT_TRUE(j.contains("winner"));
    EXPECT_TRUE(j["combined_oracle"]["modeled"].get<bool>());
    // The front's memory axis is the draft's own weights: an early exit reads the target's tensors (none of its
    // own), MXFP4 re-encodes them (its bytes read per pass). The best measured configuration is on the front.
    bool front = false;
    for (const TuneCandidate& c : r.candidates) {
        front = front || c.on_front;
        if (!c.measured_speedup) continue;
        if (c.family == "self: early exit after layer 1") {
            EXPECT_GT(c.draft_bytes, 0.0) << c.label;
            EXPECT_EQ(c.extra_bytes, 0.0) << c.label;
        }
        if (c.family == "self: MXFP4 weights") {
            EXPECT_GT(c.extra_bytes, 0.0) << c.label;
            EXPECT_EQ(c.extra_bytes, c.draft_bytes) << c.label;
        }
    }
    EXPECT_TRUE(front);
    EXPECT_TRUE(r.candidates.front().on_front) << r.candidates.front().label;
}

TEST(Tune, ResumesFromTheStoreAfterACancel) {
    const auto path     = test::fresh_tmp_path("tune_resume.sqlite");
    const TuneOptions o = options();
    {
        ScriptedEvaluator ev = scripted();
        auto store           = store::ResultStore::open(path, store::ResultStore::Mode::read_write);
        CancelToken cancel;
        TuneHooks hooks;
        hooks.cancel   = cancel;
        int seen       = 0;
        hooks.on_event = [&](const TuneEvent&) {
            if (++seen == 5) cancel.cancel();
        };
        EXPECT_THROW((void)run_tune(o, target(), ev, *store, hooks), Cancelled);
        EXPECT_EQ(store->count(), 5u) << "what finished before the cancel is stored";
    }
    ScriptedEvaluator ev = scripted();
    auto store           = store::ResultStore::open(path, store::ResultStore::Mode::read_write);
    const TuneResult r   = run_tune(o, target(), ev, *store);
    EXPECT_EQ(r.cached, 5u) << "the five measured before the cancel";
    EXPECT_EQ(ev.calls.size(), r.measured);
    ASSERT_TRUE(r.winner.has_value());
    EXPECT_EQ(r.winner->verification, engine::Verification::tree);
    // Once more: everything comes from the store.
    ScriptedEvaluator again = scripted();
    const TuneResult r2     = run_tune(o, target(), again, *store);
    EXPECT_TRUE(again.calls.empty());
    EXPECT_EQ(r2.measured, 0u);
    EXPECT_EQ(*r2.winner, *r.winner);
}

TEST(Tune, TheBudgetEndsTheSearchButTheWinnerIsStillConfirmed) {
    ScriptedEvaluator ev = scripted();
    auto store =
        store::ResultStore::open(test::fresh_tmp_path("tune_budget.sqlite"), store::ResultStore::Mode::read_write);
    TuneOptions o = options();
    o.budget_s    = 100;
    double clock  = 0;
    TuneHooks hooks;
    hooks.now          = [&] { return clock; };
    hooks.on_event     = [&](const TuneEvent&) { clock += 12; };  // each measurement "takes" 12 s
    const TuneResult r = run_tune(o, target(), ev, *store, hooks);
    EXPECT_TRUE(r.budget_exhausted);
    EXPECT_LE(r.measured, 10u) << "about 100 s / 12 s, then the confirmation";
    ASSERT_TRUE(r.winner.has_value());
    ASSERT_TRUE(r.confirmed.has_value());
    size_t not_measured = 0;
    for (const TuneCandidate& c : r.candidates) not_measured += c.state == "not measured: the budget was spent";
    EXPECT_GT(not_measured, 0u);
}

// A large budget buys more prompts per rung (x2, x4, x8: 8 here) when the halving and the confirmation are estimated to
// fit in it from the probes' time per prompt; a small one keeps the rungs as asked.
TEST(Tune, TheBudgetScalesThePromptsOfTheRungs) {
    for (const auto& [budget, scale] : {std::pair{60.0, 1}, {2000.0, 8}}) {
        ScriptedEvaluator ev = scripted();
        double clock         = 0;
        ev.clock = &clock, ev.seconds_per_prompt = 1.0;  // each prompt "takes" one second
        auto store =
            store::ResultStore::open(test::fresh_tmp_path("tune_scale.sqlite"), store::ResultStore::Mode::read_write);
        TuneOptions o = options();
        o.budget_s    = budget;
        TuneHooks hooks;
        hooks.now          = [&] { return clock; };
        const TuneResult r = run_tune(o, target(), ev, *store, hooks);
        EXPECT_EQ(r.prompt_scale, scale) << "budget " << budget;
        ASSERT_TRUE(r.winner.has_value());
        int most = 0;
        for (const TuneCandidate& c : r.candidates) most = std::max(most, c.prompts);
        EXPECT_EQ(most, o.max_prompts * scale) << "the confirmation ran at the scaled last rung";
    }
}

// Where the compact self-draft can win, Bayesian optimisation searches its pruning ratio, truncation bits and draft
// length: it measures at most the evaluations asked for, finds a better configuration than the family's probe, and
// its best proposal is measured on in the halving. Off (0 evaluations), or where the probe says the family cannot
// win (the other tests' scripted compact draft), nothing is proposed.
TEST(Tune, BayesianOptimisationSearchesTheCompactDraftsKnobsWhereItPays) {
    for (int evaluations : {8, 0}) {
        ScriptedEvaluator ev = scripted();
        ev.compact_peak      = true;
        auto store =
            store::ResultStore::open(test::fresh_tmp_path("tune_bayes.sqlite"), store::ResultStore::Mode::read_write);
        TuneOptions o       = options();
        o.bayes_evaluations = evaluations;
        std::vector<TuneEvent> events;
        TuneHooks hooks;
        hooks.on_event     = [&](const TuneEvent& e) { events.push_back(e); };
        const TuneResult r = run_tune(o, target(), ev, *store, hooks);
        size_t proposals   = 0;
        double probe = 0, best = 0;
        std::string best_label;
        for (const TuneEvent& e : events) {
            if (e.phase == "probe" && e.candidate.family.find("compact") != std::string::npos)
                probe = *e.candidate.measured_speedup;
            if (e.phase.rfind("Bayesian", 0) != 0) continue;
            ++proposals;
            EXPECT_EQ(e.candidate.prompts, o.min_prompts) << "proposals are measured at the first rung";
            if (*e.candidate.measured_speedup > best)
                best = *e.candidate.measured_speedup, best_label = e.candidate.label;
        }
        EXPECT_EQ(r.bayes_families, evaluations > 0 ? 1u : 0u);
        if (evaluations == 0) {
            EXPECT_EQ(proposals, 0u);
            continue;
        }
        EXPECT_GE(proposals, 4u) << "at least the initial design";
        EXPECT_LE(proposals, size_t(evaluations));
        EXPECT_GT(best, probe * 1.05) << "the search found a better compact draft than prune 0.5 + truncate 4 bits";
        bool halved = false;  // the best proposal was measured again with more prompts
        for (const TuneEvent& e : events)
            halved = halved || (e.phase.rfind("rung", 0) == 0 && e.candidate.label == best_label &&
                                e.candidate.prompts > o.min_prompts);
        EXPECT_TRUE(halved) << best_label;
    }
    ScriptedEvaluator ev = scripted();  // the compact draft is modeled far below the best: not searched
    auto store =
        store::ResultStore::open(test::fresh_tmp_path("tune_bayes2.sqlite"), store::ResultStore::Mode::read_write);
    EXPECT_EQ(run_tune(options(), target(), ev, *store).bayes_families, 0u);
}

TEST(Tune, OptionsRoundTripAndErrorsNameTheField) {
    TuneOptions o  = options();
    o.dataset      = "datasets/prose_continuation.jsonl";
    o.draft_models = {"a.gguf", "b.gguf"};
    EXPECT_EQ(json(o).get<TuneOptions>(), o);
    auto error_of = [](json j) {
        try {
            (void)j.get<TuneOptions>();
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    json j   = o;
    j["eta"] = 1;
    EXPECT_THAT(error_of(j), HasSubstr("tune.eta: must be >= 2"));
    j         = o;
    j["gama"] = 1;
    EXPECT_THAT(error_of(j), HasSubstr("tune.gama: is not a known key"));
    j                 = o;
    j["draft_models"] = {1};
    EXPECT_THAT(error_of(j), HasSubstr("tune.draft_models[0]: expected a string"));
    j                      = o;
    j["bayes_evaluations"] = -1;
    EXPECT_THAT(error_of(j), HasSubstr("tune.bayes_evaluations: must be in [0, 500]"));
    TuneOptions none;
    EXPECT_THROW(none.validate(), std::invalid_argument) << "no prompts";
}

}  // namespace
}  // namespace speculum::sweep
