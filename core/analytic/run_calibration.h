// Calibration of the analytic model from measured engine runs (`speculum-cli run --report`): the model's free
// parameters are fitted from the runs — the target's per-position acceptance and the acceptance at every
// intermediate reviewer (per run), each level's time per modeled unit and so its cost ratio c, the verification
// time as a line in the width of the pass, a per-step overhead (pooled over the runs of one target) — and every
// run's speedup is predicted from them through the k-matrix model of the engine's process (kmatrix_generation),
// next to the measured speedup and the residual. Engine-agnostic: core/session/run_report.h fills MeasuredEngineRun.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::analytic {

// One level of a measured run (the report's total.levels[j]).
struct MeasuredLevel {
    std::string name;               // with the target, identifies the level across runs (one c per target and name)
    bool per_call = false;          // cost counted per call (Max-Gram: no forward passes; a block draft: one pass
                                    // per call whatever it drafts), else per forward pass
    int64_t n_calls           = 0;  // propose calls (reviewer passes for the target)
    int64_t n_forward         = 0;  // forward passes, catch-up passes included
    double t_s                = 0;  // the level's own wall time, children excluded (s)
    int64_t n_reviewed        = 0;  // draft tokens this level reviewed (target and intermediate reviewers)
    int64_t n_review_accepted = 0;
};

struct MeasuredEngineRun {
    std::string source;                      // where it came from (a report file), for tables and messages
    std::string target;                      // runs of one target share the verification and overhead fits
    std::vector<std::vector<int>> k_matrix;  // (n+1)×(n+1) increments; a vertical γ is k[i][i+1] = γ_i
    std::vector<int> generated;              // tokens generated per prompt
    int64_t n_steps   = 0;                   // target verification passes
    int64_t n_drafted = 0;                   // draft tokens the target reviewed
    std::vector<int64_t> pos_reached;        // [i]: steps where draft position i+1 was reviewed, 1..i accepted
    std::vector<int64_t> pos_accepted;       // [i]: of those, steps where it was accepted
    // Token-tree runs (one draft level): the shape verified each step as a TokenTree parent array (root included;
    // empty for chains and cascades), or, with sequoia_budget > 0, Sequoia's best tree for the fitted acceptance at
    // that budget (nodes counting the root) and depth; and the counts by depth and rank (RunStats::rank_counts).
    std::vector<int> tree_parent;
    int sequoia_budget = 0, sequoia_max_depth = 0;
    std::vector<std::vector<int64_t>> rank_offered, rank_accepted;
    std::vector<int64_t> verify_width_passes;  // [w]: the target's verification passes over w tokens (may be empty)
    std::vector<double> verify_width_s;        // [w]: their seconds
    // A mixture-of-experts target (the report's total.experts; empty for a dense one): each expert's share of the
    // routed token slots pooled over layers (sums to n_expert_used), and [w] the mean distinct experts one layer of a
    // w-token verification pass read (0 where no such pass).
    std::vector<double> expert_usage;
    std::vector<double> distinct_by_width;
    double t_decode_s = 0, t_draft_s = 0, t_verify_s = 0;  // s
    double baseline_tokens_per_s = 0;   // plain decoding of the same target (the speedup's denominator)
    double speedup               = 0;   // measured: tokens/s ÷ baseline tokens/s
    std::vector<MeasuredLevel> levels;  // [0] = target, [j] = draft level j
};
// Throws InvalidInput naming the source and the field.
void validate(const MeasuredEngineRun& r);

// Times are fitted in units of each run's own plain decoding step (1 / its baseline tokens/s), as CS Drafting
// defines c: a machine that is uniformly slower during one run (load, clocks) then changes no fitted figure.
struct FittedTarget {
    std::string target;
    double t_plain_s        = 0;  // plain decoding step, pooled over the runs (s; for display)
    double verify_fixed     = 0;  // verification pass over w tokens, in plain steps: v(w) = fixed + per_token·w
    double verify_per_token = 0;  // (least squares over the runs' mean widths; one width → per_token = 0)
    // Measured per width where the reports give passes by width: [w] = mean pass over w tokens in plain steps,
    // pooled over the runs (0 = no pass of that width; the line above stands in).
    std::vector<double> verify_by_width;
    // A mixture-of-experts target whose runs recorded their routing: the pass is fitted as
    // v(w) = verify_fixed + verify_per_token w + verify_per_expert D(w), D(w) the distinct experts one layer of it
    // reads (the compute grows with the tokens, the reads with the experts), over the measured widths (3 or more);
    // D(w) of an unmeasured width from the pooled usage and the fitted sharing exponent (analytic/cost.h,
    // expected_distinct_experts with rho). verify_per_expert = 0: no MoE term (a dense target, or too few widths).
    double verify_per_expert = 0;
    double expert_sharing    = 1;           // rho fitted to the measured distinct experts (1 = independent tokens)
    std::vector<double> expert_usage;       // pooled over the runs (sums to n_expert_used)
    std::vector<double> distinct_by_width;  // [w]: measured mean distinct experts per layer (0 = none measured)
    // The modeled pass over w tokens in plain steps (the line, or with the MoE term).
    double verify_modeled(int w) const;
    double overhead_per_step = 0;  // decode time outside drafting and verification per target step, in plain steps
    int runs                 = 0;
};

struct FittedLevel {
    std::string target, name;
    std::string role;  // "drafter", or "reviewer of w" (a reviewer's pass covers w tokens): costs differ by role
    bool per_call = false;
    double c      = 0;      // time per modeled unit (reviewer step, leaf forward pass, Max-Gram call) in plain
                            // steps: catch-up passes (the draft's prompt prefill, re-syncs) are folded in
    double c_per_pass = 0;  // time per measured forward pass (per call for Max-Gram) in plain steps
    double t_unit_s   = 0;  // c × the pooled plain step (s; for display)
    int runs          = 0;
};

struct LevelCheck {
    std::string name;
    double alpha            = -1;  // fitted acceptance at this reviewer (level ≥ 1; −1 for leaves and the target)
    double units_modeled    = 0;   // reviewer steps / leaf passes / Max-Gram calls over the whole run
    double units_measured   = 0;   // forward passes (calls for Max-Gram) as measured
    double accepted_modeled = 0, accepted_measured = 0;  // draft tokens this level accepted
};

struct RunPrediction {
    std::string source;
    std::vector<double> alpha_target;  // fitted per position (a missing draft token counts as a rejection)
    std::vector<LevelCheck> levels;    // [0] = target (units = steps)
    double tokens_per_step_modeled = 0, tokens_per_step_measured = 0;
    double time_modeled_s = 0, time_measured_s = 0;  // decode time (modeled: at the run's plain step)
    double speedup_predicted = 0;                    // modeled from the fitted parameters
    double speedup_measured  = 0;
    double residual          = 0;  // (predicted − measured) / measured
};

struct EngineCalibration {
    std::vector<FittedTarget> targets;
    std::vector<FittedLevel> levels;
    std::vector<RunPrediction> runs;
    double mean_abs_residual   = 0;
    double median_abs_residual = 0;
};

// Fits and predicts; throws InvalidInput (naming the run's source) on inconsistent runs.
EngineCalibration calibrate_engine_runs(const std::vector<MeasuredEngineRun>& runs);
void to_json(nlohmann::json& j, const EngineCalibration& c);

}  // namespace speculum::analytic
