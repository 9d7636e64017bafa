// Runs a sweep: plans the configurations (grid, random draw, successive-halving rungs over prompts, or Bayesian
// optimisation proposing each next one from the scores so far), skips those already in the store (cache hits),
// evaluates the rest (in parallel in the calling arena when the evaluator allows it) and commits each finished
// configuration in its own transaction.
#pragma once

#include "core/cancel.h"
#include "core/store/result_store.h"
#include "core/sweep/evaluator.h"
#include "core/sweep/sweep_spec.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace speculum::sweep {

// One planned configuration.
struct SweepPoint {
    uint64_t grid_index = 0;  // index into the spec's grid
    nlohmann::json config;
    std::string config_hash;
    std::string label;  // "k=4 alpha=0.7"
};

// Grid: every index in order. Random/adaptive: `n` distinct grid indices drawn with the seed (the whole grid,
// in order, when n >= its size). Bayesian: the seeded initial design (the rest is proposed while it runs; the
// whole grid when n >= its size). Throws std::invalid_argument naming the field (via validate()).
std::vector<SweepPoint> plan_points(const SweepSpec& spec);
// The point at one grid index (configuration, hash, label), as plan_points makes it.
SweepPoint plan_point(const SweepSpec& spec, uint64_t grid_index);

// Reported once per finished configuration (from worker threads; keep it cheap).
struct SweepEvent {
    store::ResultRow row;
    bool cached  = false;  // found in the store, not evaluated
    size_t done  = 0;      // configurations finished so far in this run (evaluated + cached + failed)
    size_t total = 0;      // planned evaluations in this run (all rungs)
    int rung     = 0;      // adaptive: 0-based rung; 0 otherwise
    std::string label;
};
using SweepEventFn = std::function<void(const SweepEvent&)>;

struct SweepSummary {
    size_t planned   = 0;                  // evaluations planned (all rungs)
    size_t evaluated = 0;                  // evaluated now and stored
    size_t cached    = 0;                  // cache hits
    size_t failed    = 0;                  // evaluated with an error (stored as failed)
    std::vector<size_t> rung_sizes;        // adaptive: configurations per rung
    std::vector<int> rung_prompts;         // adaptive: prompts per rung
    std::optional<store::ResultRow> best;  // best objective among feasible done rows of the last rung/plan
    double wall_s = 0;
};

// The objective score of a row under the spec: the metric (negated when minimised); nullopt when the row
// failed, lacks the metric, or violates a constraint.
std::optional<double> objective_score(const SweepSpec& spec, const store::ResultRow& row);

// Evaluates one configuration at a fidelity into the row the store keeps (key, configuration, statistics,
// metrics, objective, wall time). An evaluator exception gives a "failed" row with its message; throws Cancelled
// when the token is set. What run_sweep does per configuration, for callers that evaluate elsewhere.
store::ResultRow evaluate_point(const SweepSpec& spec, Evaluator& evaluator, const SweepPoint& point, int prompts,
                                const CancelToken& token);

// Evaluates the configurations of one batch (a rung, in adaptive mode) that are not cache hits somewhere other
// than this process, e.g. on MPI ranks (speculum-cli sweep --mpi). Called on run_sweep's thread; it must call
// `finish(k, row)` on that same thread for each point it completes (k indexes `points`, any order, at most once
// per point), and return when it is done. A point never finished counts as not evaluated (a re-run picks it up).
// The runner stores each finished row (re-scored against the spec) at once.
using FinishFn      = std::function<void(size_t k, store::ResultRow row)>;
using BatchExecutor = std::function<void(const std::vector<SweepPoint>& points, int prompts, const FinishFn& finish)>;

struct SweepOptions {
    bool recompute = false;  // evaluate stored configurations again (replacing their rows) instead of cache hits
    BatchExecutor executor;  // empty: evaluate in this process (in parallel when the evaluator allows it)
};

// Throws Cancelled once the token is set (after in-flight configurations have returned; finished ones stay
// stored). `progress` gets (fraction, "config i/N label").
SweepSummary run_sweep(const SweepSpec& spec, Evaluator& evaluator, store::ResultStore& store, const CancelToken& token,
                       const ProgressFn& progress = {}, const SweepEventFn& on_event = {},
                       const SweepOptions& options = {});

}  // namespace speculum::sweep
