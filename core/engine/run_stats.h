// What a speculative run measured: per-position acceptance α_i with counts, acceptance by rank (trees), the
// accepted-length histogram, per-level calls / time / bytes and cost ratio c, tokens/s and the speedup over a
// plain autoregressive run of the same target in the same process, and bytes read per generated token (BPT).
#pragma once

#include "core/engine/tree_shapes.h"
#include "core/engine/verify.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace speculum::engine {

// α_i = accepted[i] / reached[i], 0 where position i + 1 was never reached: the conditional per-position acceptance
// of every report (RunStats here, a manifest's measured figures).
std::vector<double> conditional_alpha(const std::vector<int64_t>& reached, const std::vector<int64_t>& accepted);

// One level of the cascade. Level 0 is the target; level i drafts for level i − 1.
struct LevelStats {
    int32_t level = 0;
    std::string name;
    int64_t n_calls        = 0;      // propose calls (drafters) or verification passes (target)
    int64_t n_forward      = 0;      // forward passes of this level's model (0 for Max-Gram)
    double t_s             = 0.0;    // wall time spent in this level's own work (children excluded)
    double t_prefill_s     = 0.0;    // its prompt passes (Drafter::prefill), in the run's prompt time, not in t_s
    uint64_t bytes_weights = 0;      // bytes of weights read (counted from the tensors each pass reads)
    uint64_t bytes_kv      = 0;      // bytes of KV cache read
    bool bytes_modeled     = false;  // bytes_weights is modeled (a pruned or truncated draft stored dense)
    bool bytes_kv_modeled  = false;  // bytes_kv is modeled (a compressed draft KV kept in the f32 cache)
    double flops           = 0.0;    // floating-point operations (2 per multiply-add) the kernels executed: a
                                     // pruned draft's zeros are expanded and multiplied too, so pruning keeps them
    int64_t n_reviewed        = 0;   // draft tokens this level reviewed (target and intermediate levels)
    int64_t n_review_accepted = 0;
    double cost_ratio         = 0.0;  // c: time per forward pass (per call without passes) / one plain target
                                      // decoding step (the baseline's; the verification pass without a baseline)
    bool operator==(const LevelStats&) const = default;
};

// Mixture-of-experts targets (Hparams::moe()): the routing of the target's verification passes (the prompt's
// evaluation left out), so a run says which experts its verified tokens used and how much the tokens of one pass
// shared them: a pass of w tokens reads the union of their experts (analytic::expected_distinct_experts models it).
struct ExpertUsage {
    int32_t n_expert = 0, n_expert_used = 0, n_layer = 0;  // 0 experts: a dense target, nothing recorded
    std::vector<int64_t> hist;                             // (n_layer, n_expert): token slots routed to each expert
    std::vector<int64_t> width_passes;                     // [w]: verification passes of w tokens
    std::vector<int64_t> width_distinct;  // [w]: distinct experts those passes read, summed over passes and layers
    bool empty() const { return n_expert == 0; }
    // Mean distinct experts one layer of a w-token pass read (0 where no such pass).
    double mean_distinct(size_t w) const;
    // Each expert's share of the routed slots, pooled over layers, times n_expert_used (sums to n_expert_used): the
    // usage analytic::expected_distinct_experts takes.
    std::vector<double> usage() const;
    // Accumulates `o`'s counts (the same shape, or this one empty).
    void add(const ExpertUsage& o);
    bool operator==(const ExpertUsage&) const = default;
};
void to_json(nlohmann::json& j, const ExpertUsage& u);

// A hybrid target's recurrent state (model/recurrent_state.h): what keeping and rolling it back cost the run's
// verification (the prompt's evaluation left out). Times are measured; bytes are what the strategy held.
struct RecurrentReport {
    std::string strategy;      // "snapshot" or "rerun"; empty = the target has no recurrent layers
    int64_t passes       = 0;  // verification passes
    int64_t rollbacks    = 0;  // of which rolled the state back (rejected drafts)
    int64_t tokens_kept  = 0;  // snapshot: states stored; rerun: token inputs stored
    int64_t tokens_rerun = 0;  // rerun: tokens whose recurrence ran again
    double keep_s        = 0;  // seconds storing what a rollback needs (inside the passes)
    double restore_s     = 0;  // seconds rolling back
    uint64_t peak_bytes  = 0;  // most bytes held for rollback at once
    uint64_t state_bytes = 0;  // the live state (all DeltaNet layers)
    bool empty() const { return strategy.empty(); }
    void add(const RecurrentReport& o);
    bool operator==(const RecurrentReport&) const = default;
};
void to_json(nlohmann::json& j, const RecurrentReport& r);

// One width of the measured verification cost curve (RunStats::verify_cost_curve).
struct VerifyCost {
    int32_t width           = 0;    // tokens in the pass
    int64_t passes          = 0;    // passes of this width
    double seconds          = 0.0;  // mean seconds of one
    double steps            = 0.0;  // the same in plain decoding steps of the target (0 = no baseline)
    double distinct_experts = 0.0;  // mixture of experts: mean distinct experts one layer read (0 = dense)
};

// One context bucket of the measured verification cost (RunStats::verify_context_curve).
constexpr int32_t kVerifyContextBucket = 256;  // tokens of context per bucket
struct VerifyContextCost {
    int32_t context_from = 0, context_to = 0;  // the bucket: contexts in [from, to)
    int64_t passes    = 0;
    double seconds    = 0.0;  // mean seconds of one pass
    double steps      = 0.0;  // the same in plain decoding steps of the target (0 = no baseline)
    double mean_width = 0.0;  // mean tokens in those passes
    bool operator==(const VerifyContextCost&) const = default;
};

struct RunStats {
    int32_t n_prompt    = 0;  // prompt tokens
    int32_t n_generated = 0;  // tokens committed
    int32_t n_steps     = 0;  // target verification passes
    int64_t n_drafted   = 0;  // draft tokens the target reviewed
    int64_t n_accepted  = 0;  // of which accepted
    double t_prefill_s  = 0.0;
    double t_draft_s    = 0.0;  // level-1 propose calls (everything below included)
    double t_verify_s   = 0.0;  // target passes and the acceptance rule
    double t_decode_s   = 0.0;  // wall time after prefill until the last token was committed

    std::vector<int64_t> pos_reached;        // [i]: steps where position i + 1 was reviewed with 1..i accepted
    std::vector<int64_t> pos_accepted;       // [i]: of those, steps where it was accepted
    std::vector<int64_t> accepted_len_hist;  // [n]: steps that accepted n draft tokens
    // [i]: over the steps pos_reached[i] counts, the sum of the draft's own predicted acceptance of position i + 1
    // (DSpark's confidence head; DraftChain::predicts_acceptance); empty when the draft predicts none.
    std::vector<double> pos_predicted;
    // The target's verification passes by width (tokens in the pass: drafted + 1, trees: nodes + 1): [w] = passes and
    // their seconds, so the verification cost is known as a function of width (what the calibration fits).
    std::vector<int64_t> verify_width_passes;
    std::vector<double> verify_width_s;
    // The same passes by the context they ran at (tokens already in the cache, in buckets of kVerifyContextBucket):
    // [b] = passes, their seconds and their summed widths, so the cost is known as a function of context length too.
    std::vector<int64_t> verify_ctx_passes;
    std::vector<double> verify_ctx_s;
    std::vector<int64_t> verify_ctx_tokens;
    RankCounts rank_counts;          // trees only
    ExpertUsage experts;             // mixture-of-experts targets only
    RecurrentReport recurrent;       // hybrid targets only
    std::vector<LevelStats> levels;  // [0] = target, [i] = draft level i

    double tokens_per_s          = 0.0;  // n_generated / t_decode_s
    double baseline_tokens_per_s = 0.0;  // plain autoregressive decoding of the same target (0 = not run)
    double speedup               = 0.0;  // tokens_per_s / baseline_tokens_per_s (0 = no baseline)
    double bytes_per_token       = 0.0;  // BPT: bytes read by every level / n_generated
    // CATS runs (verification cats): the paper's BPT, Eq. 4, counting decoder-layer weights only (no embeddings,
    // head or KV): (γ̄ B_draft + B_SV + B_target) / (β̄ + 1); 0 otherwise. And the stages' layer split
    // {L_DM, L_SV, n_layer}.
    double bpt_cats_eq4 = 0.0;
    std::vector<int32_t> cats_layers;
    bool lossless_checked     = false;  // greedy run compared with the verifying model's own greedy tokens
    int32_t lossless_mismatch = -1;     // first differing index, -1 = identical
    // With a separate verifier (SpecEngine's `verifier`, e.g. a repacked copy), greedy: the first index where the
    // verifier's own greedy output differs from the target's (its int8 activations round differently), -1 =
    // identical or no verifier. The lossless check compares against the verifier's output.
    int32_t verifier_mismatch = -1;

    // The derived figures every reader uses (CLI, app panels, manifests, sweeps): one definition each.
    std::vector<double> alpha() const;            // α_i = pos_accepted / pos_reached (0 where never reached)
    std::vector<double> predicted_alpha() const;  // pos_predicted / pos_reached (empty when nothing predicted)
    double mean_accepted_length() const;          // tokens committed per target pass (n_generated / n_steps)
    // Trees: offered and accepted counts by sibling rank, pooled over depths (as Sequoia's p[r]).
    std::vector<int64_t> rank_offered_pooled() const;
    std::vector<int64_t> rank_accepted_pooled() const;
    std::vector<double> rank_alpha() const;  // accepted / offered per pooled rank (0 where never offered)
    // Level 1 (the draft the target verifies): its measured c, and the weight bytes one of its forward passes reads
    // (modeled when draft_bytes_modeled(): a pruned or truncated draft stored dense); 0 = no such level or passes.
    double draft_cost_ratio() const;
    double draft_bytes_per_pass() const;
    bool draft_bytes_modeled() const;
    // Level 1's floating-point operations per forward pass; 0 = no such level or passes.
    double draft_flops_per_pass() const;
    // True when any level's bytes (weights or KV) are modeled: BPT and the levels' reads are then modeled too.
    bool any_bytes_modeled() const;
    // The target's verification passes by width, measured: every width that ran, narrowest first.
    std::vector<VerifyCost> verify_cost_curve() const;
    // The target's verification passes by context length, measured: every bucket that ran, shortest first.
    std::vector<VerifyContextCost> verify_context_curve() const;
    bool operator==(const RunStats&) const = default;
};
void to_json(nlohmann::json& j, const RunStats& s);
// The counts and times of a stored RunStats (a sweep row's statistics, a report's total, a session's run): what the
// waterfall, the acceptance profile, tune and the app's restored run history read back, the levels and rank counts
// included. Experts, the recurrent report and the CATS figures are not read; keys this reader does not use are
// passed over. Throws std::invalid_argument naming the field ("stats.n_steps: ...").
RunStats run_figures_from_json(const nlohmann::json& j);

// One committed token with its provenance, delivered in commit order (for the live UI).
struct TokenEvent {
    int32_t token    = -1;
    int32_t level    = 0;  // who proposed it: 0 = the target (corrections, bonus), i = draft level i
    TokenKind kind   = TokenKind::accepted;
    int32_t step     = 0;  // target pass that committed it (0-based)
    int32_t position = 0;  // index among the generated tokens (0-based)
};

class EventSink {
public:
    virtual ~EventSink()                       = default;
    virtual void on_token(const TokenEvent& e) = 0;
};

// Adapts a callable to an EventSink.
class FunctionSink : public EventSink {
public:
    explicit FunctionSink(std::function<void(const TokenEvent&)> fn) : m_fn(std::move(fn)) {}
    void on_token(const TokenEvent& e) override { m_fn(e); }

private:
    std::function<void(const TokenEvent&)> m_fn;
};

struct RunResult {
    std::vector<int32_t> prompt;
    std::vector<int32_t> tokens;           // generated tokens
    std::vector<int32_t> baseline_tokens;  // the autoregressive run's tokens (empty when not run)
    RunStats stats;
    bool cancelled = false;  // stats are partial
};
void to_json(nlohmann::json& j, const RunResult& r);

}  // namespace speculum::engine
