// What a measured speculative run reports to the UI, as plain data: the engine's RunStats of the finished prompts,
// and the committed tokens with their provenance as they stream in. Filled from session::run's hooks; never from a
// model.
#pragma once

#include "core/analytic/calibration.h"
#include "core/drafts/draft_spec.h"
#include "core/engine/run_stats.h"
#include "core/session/run.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace speculum::ui {

enum class TokenOrigin { accepted, corrected, bonus };  // draft token kept | target's correction | target's bonus

struct TokenPiece {
    std::string text;        // detokenized piece (may be empty or partial UTF-8 for byte tokens)
    int level          = 0;  // who proposed it: 0 = the target, i = draft level i
    TokenOrigin origin = TokenOrigin::accepted;
    int step           = 0;  // target verification pass that committed it (counted over the run's prompts)
    int prompt         = 0;  // index into MeasuredView::prompts
};

struct PromptView {
    std::string id;  // dataset id ("code_completion-000") or "prompt"
    std::string task;
    std::string text;  // the prompt's text (its last few hundred bytes), or its token ids without a tokenizer
};

// The one measured-result type is engine::RunStats (core/engine/run_stats.h): the panels, the manifest and the
// reports all read it, with its alpha() and mean_accepted_length(). The view adds only what streams to the GUI.
struct MeasuredView {
    engine::RunStats stats;  // accumulated over the first pass's finished prompts (engine::accumulate)
    // The run report of a finished run (core/session/run_report.h, what speculum-cli run --report writes); null
    // while streaming.
    std::shared_ptr<const nlohmann::json> report;
    session::RepeatSummary repeats;   // every pass's speedup pairs so far (SpecConfig::repeats)
    std::vector<TokenPiece> tokens;   // committed tokens in order (the first pass)
    std::vector<PromptView> prompts;  // the prompts decoded so far (the last one may still stream)
    int prompts_total = 0;            // prompts this run decodes
    std::string drafter;              // the draft stack's name ("early exit @ layer 1")
    std::string source;               // where the prompts came from ("code_completion.jsonl, task ...")
    int lossless_checked    = 0;      // greedy prompts compared with the target's own output
    int lossless_mismatches = 0;      // of those, prompts whose tokens differ (must stay 0)
    int64_t n_generated     = 0;      // tokens committed so far, the streaming prompt's included (stats lags behind)
    int64_t n_steps         = 0;      // target passes so far, likewise
    bool complete           = false;  // false while results are still streaming in
    bool cancelled          = false;  // the user cancelled the run: these are partial figures

    // The headline speedup: the median of the A/B pairs once there are several, else the first pass's.
    double speedup() const { return repeats.speedup.n > 1 ? repeats.speedup.median : stats.speedup; }
};

// How every panel states an interval's coverage: "95 % interval", or, with fewer A/B pairs than a 95 % interval of
// the median needs, its true coverage ("73 % interval (2 pairs; a 95 % interval of the median needs 6)").
std::string interval_text(double coverage, int n);

// The one acceptance figure every panel names the same way: accepted ÷ drafted over the run (or a cascade level's
// review), "acceptance 55 % (330 of 600 drafted tokens accepted)"; "acceptance: no token drafted" when none was.
// Beside it the panels show tokens per target pass and the per-position alpha_i (accepted ÷ reached at position i).
std::string acceptance_text(int64_t accepted, int64_t drafted);
std::string acceptance_text(const engine::RunStats& s);

// Plain messages for figures that need one, shown beside the run: no token was drafted; a draft costlier than a
// target step (an identity self-draft is the target itself); a loaded CPU. Empty when none applies.
std::vector<std::string> run_explanations(const MeasuredView& v, const drafts::DraftSpec& level1);

// The acceptance rates' 95 % intervals are core/analytic's Wilson intervals.
using analytic::Interval;
using analytic::wilson_interval;

}  // namespace speculum::ui
