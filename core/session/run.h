// The one way to run a configuration: a SpecConfig on a Target over its prompts. resolve_prompts turns the config's
// dataset, text or token ids into prompts; make_draft_stack builds every level with drafts::make_drafter; run()
// validates, builds the stack and decodes each prompt with SpecEngine (baseline included), with cancel, progress
// and a token event sink, returning per-prompt and total statistics. speculum-cli run, the app's measured panels
// (ui/model/engine_measurer) and engine sweeps (core/sweep/engine_evaluator) all call run().
#pragma once

#include "core/analytic/calibration.h"
#include "core/cancel.h"
#include "core/drafts/make_drafter.h"
#include "core/engine/cascade.h"
#include "core/engine/run_stats.h"
#include "core/engine/spec_config.h"
#include "core/model/tokenizer.h"
#include "core/session/target.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace speculum::session {

// Builds every level with drafts::make_drafter and assembles the stack (build_draft_stack). A level that reviews
// in a cascade uses the drafter's own model and forward options (self-drafts, separate models).
// first: set to the first level's drafter (the one the target verifies) when given.
std::shared_ptr<engine::CompositeDrafter> make_draft_stack(const engine::SpecConfig& cfg, const model::Model& target,
                                                           const drafts::DrafterOptions& options   = {},
                                                           std::shared_ptr<drafts::Drafter>* first = nullptr);

struct RunPrompt {
    std::string id;  // dataset id, or "prompt"
    std::string task;
    std::vector<int32_t> tokens;
    int32_t max_new_tokens = 0;  // from the config (datasets: the line's value, capped by the config's)
};

// The prompts a config asks for: dataset (filtered by task, at most max_prompts), else the text prompt, else
// prompt_ids. Text needs `tokenizer` (std::invalid_argument naming the field otherwise). Errors name the field.
std::vector<RunPrompt> resolve_prompts(const engine::SpecConfig& cfg, const model::Tokenizer* tokenizer);

struct PromptRun {
    RunPrompt prompt;
    engine::RunResult result;
};

// The repeated measurement of the speedup (SpecConfig::repeats): every pass decodes each prompt speculatively and
// then by the plain baseline right after it, one pair per prompt, so slow drifts of the machine hit both sides.
struct RepeatSummary {
    int passes    = 0;
    double wall_s = 0;
    std::string stop;                   // why the passes stopped ("interval within 5 %", "10 passes (the most)", ...)
    std::vector<double> speedup_pairs;  // each pair's speculative tokens/s ÷ its baseline's, in run order
    analytic::MedianInterval speedup;   // median of the pairs and its 95 % distribution-free interval
    analytic::MedianInterval tokens_per_s, baseline_tokens_per_s;
    analytic::MedianInterval cost_ratio;  // level 1's c per pair (0 pairs without a draft model pass)
    std::optional<double> other_load;     // share of the CPU other processes used meanwhile (hw::other_load)
    static constexpr double kLoadedShare = 0.10;
    bool loaded() const { return other_load && *other_load > kLoadedShare; }  // the figures are suspect
};

// Why the passes stop after the one `rs` has just summarised, or "" to go on: at cfg.repeats.max passes; once the
// minimum (passes and min_time_s) is reached, when the speedup's interval is narrow enough (6 pairs at least) or
// no width is asked for; when max_time_s is spent after the minimum passes; or when there are no pairs to repeat.
std::string repeat_stop(const engine::Repeats& rep, const RepeatSummary& rs);

// How run() reports while it works. Every hook is optional and is called on the running thread.
struct RunHooks {
    CancelToken cancel;  // checked while building drafts, between prompts and inside the engine
    // Overall fraction: the first 5 % building the draft stack, then each prompt's share (its speculative decode
    // and its baseline about half each).
    ProgressFn progress;
    // Once the draft stack is built, before the first prompt: its name and the prompts.
    std::function<void(const std::string& drafter, const std::vector<RunPrompt>&)> on_start;
    // The first pass only (later passes repeat it for the timing):
    std::function<void(size_t prompt, const RunPrompt&)> on_prompt;          // before prompt `prompt` decodes
    std::function<void(size_t prompt, const engine::TokenEvent&)> on_token;  // each committed token
    // After the prompt's baseline: its run, and the statistics of every prompt so far (engine::accumulate).
    std::function<void(size_t prompt, const PromptRun&, const engine::RunStats& total)> on_prompt_done;
    // After every pass, the first included: the repeated measurement so far.
    std::function<void(const RepeatSummary&)> on_pass_done;
};

struct RunOutcome {
    std::string drafter;          // the draft stack's name (CATS: which layers draft and verify)
    std::vector<PromptRun> runs;  // the first pass
    engine::RunStats total;       // engine::accumulate over the first pass's prompts
    RepeatSummary repeats;        // every pass's speedup pairs (with the baseline)
    // Cassandra's objective from the measured acceptance, for one self-draft level (docs/analytic.md), at the mean
    // context of the run: prompt tokens plus half the generated ones, per prompt.
    std::optional<double> cassandra_j;
    double mean_context = 0;
    // Greedy runs with a baseline: the mean, over prompts, of the share of tokens equal to the target's own output
    // before the first difference (1 = lossless); nullopt when nothing was checked.
    std::optional<double> agreement;
    // levels[0].strict_subset: what the verifier is (the target stored as the draft's part and the rest) and its
    // bytes; empty otherwise.
    std::string verifier_note;
    uint64_t split_bytes = 0, split_dense_bytes = 0, split_draft_bytes = 0;
};

// Validates `cfg` against the target, resolves its prompts, builds the draft stack and decodes every prompt
// (verifying on target.verifier when there is one, or on the target split with its draft for levels[0].strict_subset),
// in as many passes as cfg.repeats asks for. Throws std::invalid_argument naming the config field, or Cancelled once
// hooks.cancel fires.
RunOutcome run(const engine::SpecConfig& cfg, const Target& target, const RunHooks& hooks = {});

}  // namespace speculum::session
