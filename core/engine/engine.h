// SpecEngine: real speculative decoding of a target model with a draft stack (one drafter, a vertical/horizontal
// cascade) — chains or token trees, greedy or stochastic verification — measured: every statistic the explorer
// plots, a plain autoregressive baseline of the same target in the same process, and a token event stream.
#pragma once

#include "core/cancel.h"
#include "core/engine/cascade.h"
#include "core/engine/reviewer.h"
#include "core/engine/run_stats.h"
#include "core/engine/spec_config.h"
#include "core/engine/tree_shapes.h"

#include <memory>
#include <vector>

namespace speculum::engine {

class SpecEngine {
public:
    // `drafter` drafts for the target (level 1; a plain drafter is wrapped as level 1, a CompositeDrafter from
    // build_draft_stack reports every level). The config is expected to be validated by the caller.
    // `verifier`, when given, runs the verification passes instead of `target`: the same weights in another
    // in-memory layout (Model::with_large_pages(target, ..., /*repack_q8=*/true): Q8_0_X8 is faster for batches,
    // slower for single tokens), while the autoregressive baseline keeps decoding `target`, so the speedup is
    // measured against the faster plain decode. Its shape must match the target's (std::invalid_argument). It must
    // outlive the engine, like `target`.
    SpecEngine(const model::Model& target, SpecConfig cfg, std::shared_ptr<drafts::Drafter> drafter,
               const model::Model* verifier = nullptr);

    // Generates up to cfg.max_new_tokens after `prompt`. A cancelled run returns what it committed with partial
    // statistics (cancelled = true); cancellation is checked before drafting, before verification and inside the
    // models' layer loops. Progress is reported per committed token; events in commit order.
    RunResult run(const std::vector<int32_t>& prompt, const CancelToken& cancel = {}, const ProgressFn& progress = {},
                  EventSink* sink = nullptr);

    const SpecConfig& config() const { return m_cfg; }

private:
    // One step's outcome: committed tokens in order with their provenance.
    struct Step {
        std::vector<int32_t> tokens;
        std::vector<TokenKind> kinds;
        std::vector<int32_t> levels;
        int32_t n_drafted  = 0;
        int32_t n_accepted = 0;
    };
    struct RunState;  // per-run working state (engine.cpp)

    Step chain_step(RunState& st, int32_t remaining, const CancelToken& cancel);
    Step tree_step(RunState& st, int32_t remaining, const CancelToken& cancel);
    Step cats_step(RunState& st, int32_t remaining, const CancelToken& cancel);
    void commit(RunState& st, const Step& step, EventSink* sink);
    void finish_stats(RunState& st, RunResult& res);
    void run_baseline(RunResult& res, const CancelToken& cancel);
    drafts::ProposeParams propose_params(RunState& st) const;

    const model::Model& m_target;
    const model::Model& m_verifier;  // m_target unless a verifier was given
    SpecConfig m_cfg;
    std::shared_ptr<CompositeDrafter> m_drafter;
};

// Sums the counts and times of `s` into `into` (several prompts of one dataset); derived rates are recomputed.
void accumulate(RunStats& into, const RunStats& s);

}  // namespace speculum::engine
