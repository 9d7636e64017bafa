// Tune: "how should I draft for this model on this machine?" in one call. Finds the drafters that apply to the
// target, measures each once (a probe), models the variants of each (draft length) from its probe's measured
// acceptance, draft cost and the target's measured verification curve, prunes what the model says cannot win,
// measures the rest with successive halving over prompts (trees, cascades and early stops of the best families
// are measured, not modeled), and confirms the winner with repeated A/B pairs and an interval. Every measurement
// goes through the sweep engine (an Evaluator, evaluate_point) into one result store, so a killed tune resumes
// from what it stored. The CLI (`speculum-cli tune`) and the app's Tune panel both call run_tune.
#pragma once

#include "core/cancel.h"
#include "core/engine/spec_config.h"
#include "core/engine/speedup_waterfall.h"
#include "core/model/model.h"
#include "core/session/run_report.h"
#include "core/store/result_store.h"
#include "core/sweep/evaluator.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace speculum::sweep {

struct TuneOptions {
    std::string dataset;                    // JSONL prompt suite; empty = prompt_ids
    std::string task;                       // only the dataset's prompts of this task ("" = all)
    std::vector<int32_t> prompt_ids;        // the prompt for a target without a tokenizer (random weights)
    std::vector<std::string> draft_models;  // separate draft GGUFs the user has
    std::vector<std::string> eagle3_heads;  // EAGLE-3 head GGUFs
    std::vector<std::string> mtp_modules;   // MTP module GGUFs (the target's own NextN layers are found by itself)
    std::vector<std::string> block_drafts;  // DFlash / DSpark GGUFs (a file with DSpark heads is tried as both)
    bool bundled_drafts    = false;         // also the bundled family's drafts (resources/models): the bundled target
    bool self_drafts       = true;          // derived drafts: early exit, layer skip, compact prune/truncate, MXFP4
    double budget_s        = 600;           // wall time of the search (the winner's confirmation comes after)
    int32_t max_new_tokens = 48;
    int32_t min_prompts    = 2;  // prompts per configuration at the first rung (and the probes)
    int32_t max_prompts    = 8;  // prompts at the last rung
    int32_t eta            = 2;  // successive halving: keep the best 1/eta, give them eta times the prompts
    std::vector<int32_t> gammas{2, 3, 4, 5, 6, 8};  // draft lengths modeled per family
    int32_t probe_gamma = 4;                        // the draft length each family is first measured at
    std::vector<int32_t> tree_budgets{8, 16};       // Sequoia trees of the best model-based family (measured)
    std::vector<double> p_mins{0.3};                // early-stopped drafts of the best family (measured)
    bool cascades          = true;                  // best model-based family over the best statistical one
    double prune_below     = 0.75;  // a variant modeled below this share of the best modeled one is not measured
    int32_t confirm_passes = 4;     // repeated A/B passes confirming the winner (2 at least)
    // Bayesian optimisation where it pays: the compact self-draft's pruning ratio and truncation bits (a 35-point
    // grid no probe can model), when its probe says it can win. Measured configurations (0 = off).
    int32_t bayes_evaluations                 = 8;
    bool operator==(const TuneOptions&) const = default;
    void validate() const;  // throws std::invalid_argument naming the field ("tune.eta: must be >= 2")
};
void to_json(nlohmann::json& j, const TuneOptions& o);
void from_json(const nlohmann::json& j, TuneOptions& o);  // strict (JsonReader), "tune.FIELD: why"

// A drafter that applies to the target, with the level(s) it drafts with.
struct TuneFamily {
    std::string name;                       // "small draft", "suffix decoding", "self: exit@3"
    std::vector<drafts::DraftSpec> levels;  // usually one
    bool statistical = false;               // no model: draft cost near zero, no trees
    bool compact     = false;               // the compact self-draft (pruned, truncated): its knobs are searched
};
// The drafters `options` and the target allow, in a fixed order (statistical first, then heads, models, self).
std::vector<TuneFamily> tune_families(const TuneOptions& options, const model::Model& target);

// One configuration tune considered.
struct TuneCandidate {
    std::string label;  // "small draft, γ 5", "small draft, tree 16"
    std::string family;
    nlohmann::json config;                   // the SpecConfig
    std::optional<double> modeled_speedup;   // from the family's probe (chains), when modeled
    std::optional<double> measured_speedup;  // at the most prompts it was measured with
    int prompts        = 0;
    double draft_bytes = 0;  // weights the draft levels read per pass
    // The memory axis of the Pareto front: weights the draft keeps beyond the target's (its bytes read per pass, a
    // proxy for its own tensors; 0 for a draft that reads the target's tensors: early exit, layer skip, strict-subset
    // storage, statistical drafters).
    double extra_bytes = 0;
    std::string state;      // "measured", "pruned (modeled 1.12x < 0.85 x best 1.90x)", "failed: ...", "not reached"
    bool on_front = false;  // on the Pareto front of measured speedup against draft bytes
};

struct TuneEvent {
    std::string phase;  // "probe", "rung 1/3 (4 prompts)", "confirm"
    TuneCandidate candidate;
    bool cached = false;  // taken from the store, measured by an earlier tune (a resumed one)
};
using TuneEventFn = std::function<void(const TuneEvent&)>;

struct TuneHooks {
    CancelToken cancel;
    ProgressFn progress;
    TuneEventFn on_event;
    std::function<double()> now;  // seconds, for the budget; empty = the steady clock (tests inject one)
};

struct TuneResult {
    std::vector<TuneFamily> families;
    std::vector<TuneCandidate> candidates;  // everything considered, best measured first
    std::optional<engine::SpecConfig> winner;
    std::optional<session::RepeatSummary> confirmed;  // the winner's repeated A/B pairs (the two finalists are
                                                      // confirmed; the higher median wins)
    engine::RunStats winner_stats;                    // the confirmation's totals (the waterfall's input)
    engine::SpeedupWaterfall waterfall;               // where the winner's speedup went
    engine::CombinedOracle combined;                  // per-position best of the families' probes (modeled)
    // Measured now; read from the store (measured by an earlier tune); pruned by the model; failed.
    size_t measured = 0, cached = 0, pruned = 0, failed = 0;
    size_t bayes_families = 0;  // families whose knobs Bayesian optimisation searched (the compact self-draft)
    bool budget_exhausted = false;
    int prompt_scale      = 1;  // the rungs' prompts were min_prompts..max_prompts times this (the budget allowed)
    double wall_s         = 0;
};
void to_json(nlohmann::json& j, const TuneResult& r);

// Runs the search for `target`, measuring through `evaluator` (an EngineEvaluator on the same target; tests give
// a scripted one) into `store`. Throws Cancelled when cancelled (what finished stays stored),
// std::invalid_argument for bad options.
TuneResult run_tune(const TuneOptions& options, const model::Model& target, Evaluator& evaluator,
                    store::ResultStore& store, const TuneHooks& hooks = {});

// The model tune prunes with: a chain of draft length gamma from a probe run's figures. Acceptance per position
// beyond the probe's draft length repeats its last measured value; a verification pass costs the target's curve
// (`curve`: steps per pass by width, measured across the probes, interpolated between measured widths and extended
// along the chord from one step at width 1) at the probe's mix of widths (its full-length drafts drawn at gamma + 1
// tokens, shorter ones kept: an n-gram drafter that found nothing verifies one token); the draft costs the probe's
// measured steps per drafted token; other overhead the probe's steps per round. Returns 0 without a baseline.
double modeled_chain_speedup(const engine::RunStats& probe, int gamma, const std::vector<double>& curve);

}  // namespace speculum::sweep
