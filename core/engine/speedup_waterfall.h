// Where the speedup went: a run's measured speedup decomposed from what its acceptance alone would give, one cost
// at a time, and the headroom above it.
//
//   acceptance alone   τ = n_generated / n_steps           drafts free, a verification pass as cheap as one step
//   − the draft's cost n·t₁ / (n_steps·t₁ + t_draft)        t₁ = one plain decoding step (the baseline's)
//   − verification     n·t₁ / (t_draft + t_passes)          the target's passes beyond one step each (also shown by
//                                                           context length: the cost of a pass at each context)
//   − overhead         n·t₁ / t_decode = measured           acceptance rule, rollback, sampling, bookkeeping
//
// t_passes is the target's passes alone (RunStats::verify_width_s summed); t_verify adds the acceptance rule.
//
// Every term is computed from the run's own measured times, so the steps end exactly at the measured speedup. The
// headroom is modeled: an oracle drafter that is always right, free, verified at each pass width the run measured
// (w tokens committed per pass of cost v(w) steps: w / v(w)), and, over several runs, the per-position best of the
// drafters tried (SpecDecode-Bench's combined-proposer oracle: the expected accepted length under the best α at
// each position, at the cheapest draft cost of those runs).
#pragma once

#include "core/engine/run_stats.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace speculum::engine {

struct WaterfallStep {
    std::string name;      // "acceptance alone", "draft cost", "verification cost", "overhead"
    double speedup = 0.0;  // the speedup once this term is counted
    double delta   = 0.0;  // speedup − the previous step's (0 for the first)
    bool modeled   = false;
    std::string detail;  // what the term is, in the run's figures ("0.57 decode steps of draft per round")
    bool operator==(const WaterfallStep&) const = default;
};

struct SpeedupWaterfall {
    std::string unavailable;           // why there is none (no baseline, nothing generated); empty when there is
    std::vector<WaterfallStep> steps;  // acceptance alone → … → overhead (= measured)
    double measured = 0.0;             // the run's speedup (the last step)
    // Headroom (modeled from measured verification costs).
    double oracle_speedup = 0.0;  // best w / v(w) over the pass widths the run measured
    int32_t oracle_width  = 0;    // the width that gives it
    std::string oracle_detail;
    // The verification term by context length (measured): what a pass cost at each context the run reached, so a
    // long-context slowdown shows apart from the pass widths.
    std::vector<VerifyContextCost> verify_by_context;
    bool operator==(const SpeedupWaterfall&) const = default;
};

SpeedupWaterfall speedup_waterfall(const RunStats& s);
// The target's verification passes alone: the timed widths summed (t_verify_s when a run has none).
double target_pass_seconds(const RunStats& s);

// The combined-proposer oracle of several runs of one target (modeled): per position the best conditional
// acceptance of any run, the expected accepted length of a chain of the longest run's γ under it, and that length
// over (1 + γ·c_min + v − 1) where c_min is the cheapest measured draft cost and v the mean verification pass in
// steps of the run with that γ. 0 when no run has a baseline.
struct CombinedOracle {
    std::vector<double> alpha;  // per position: the best α_i of the runs
    std::vector<int> best_run;  // per position: which run gave it
    double accepted_length                       = 0.0;
    double speedup                               = 0.0;
    bool operator==(const CombinedOracle&) const = default;
};
CombinedOracle combined_oracle(const std::vector<const RunStats*>& runs);

// {"unavailable"?, "steps": [{name, speedup, delta, modeled, detail}], "measured", "headroom": {"oracle_speedup",
// "oracle_width", "modeled": true, "detail"}}
void to_json(nlohmann::json& j, const SpeedupWaterfall& w);
void to_json(nlohmann::json& j, const CombinedOracle& o);

}  // namespace speculum::engine
