// Drafters built from other drafters: a level tag around a plain drafter, CS Drafting's / ML-SpecQD's vertical
// cascade (level i drafts for level i − 1 by running speculative decoding of its own model with level i + 1's
// drafter, recursively down to Max-Gram, with lenience at these intermediate reviews), and CS Drafting's
// horizontal cascade (which drafter fills which positions of one draft: a row of the k-matrix).
#pragma once

#include "core/engine/reviewer.h"
#include "core/engine/run_stats.h"
#include "core/engine/spec_config.h"

#include <memory>
#include <string>
#include <vector>

namespace speculum::engine {

// A drafter that knows which level each of its tokens came from (DraftChain::source = the absolute level) and
// reports the statistics of every level it contains.
class CompositeDrafter : public drafts::Drafter {
public:
    // Adds the statistics of its levels into levels[level] (levels is sized by the caller).
    virtual void collect(std::vector<LevelStats>& levels) const = 0;
    virtual void reset_stats()                                  = 0;
};

// A plain drafter as draft level `level`: forwards every call and records calls, time and bytes.
class LevelDrafter : public CompositeDrafter {
public:
    LevelDrafter(std::shared_ptr<drafts::Drafter> inner, int32_t level, std::string name = {});
    // Threshold lengths (LengthMode::threshold): a request for k tokens calls the drafter for `block` tokens at a
    // time until at least k exist, continuing after its own tokens (CS Drafting's Max-Gram block of 10); the last
    // call may overshoot. 0 or 1 (the default): one call for k tokens, as a neural leaf drafts.
    void set_threshold_block(int32_t block) { m_block = block; }
    std::string name() const override { return m_stats.name; }
    int32_t n_vocab() const override { return m_inner->n_vocab(); }
    void sync(std::span<const int32_t> committed) override {
        m_committed.assign(committed.begin(), committed.end());
        m_inner->sync(committed);
    }
    // The inner drafter's prompt passes, recorded as this level's t_prefill_s.
    drafts::DraftCost prefill(std::span<const int32_t> committed, const CancelToken& cancel) override;
    // Only a level-1 drafter drafts for the target, so only it may read the target's cache.
    void attach_target_kv(const model::KvCache* kv, const std::vector<int32_t>* tokens) override {
        if (m_level == 1) m_inner->attach_target_kv(kv, tokens);
    }
    drafts::DraftChain propose(int32_t k, const drafts::ProposeParams& params, const CancelToken& cancel) override;
    drafts::DraftTree propose_tree(const drafts::TreeShape& shape, const drafts::ProposeParams& params,
                                   const CancelToken& cancel) override;
    void collect(std::vector<LevelStats>& levels) const override;
    void reset_stats() override;
    void reset_learned() override { m_inner->reset_learned(); }
    std::vector<int32_t> target_hidden_layers() const override {
        return m_level == 1 ? m_inner->target_hidden_layers() : std::vector<int32_t>{};
    }

private:
    void add(const drafts::DraftCost& c);
    drafts::DraftChain propose_once(int32_t k, const drafts::ProposeParams& params, const CancelToken& cancel);
    std::shared_ptr<drafts::Drafter> m_inner;
    int32_t m_level;
    int32_t m_block = 0;
    std::vector<int32_t> m_committed;
    LevelStats m_stats;
};

// Level `level` drafting for the level above it: greedy speculative decoding of `model` (the reviewer) with
// `lower` drafting `inner_gamma` tokens per step, until the requested number of tokens exists. Each returned
// token's q is the reviewer's probability of it (what the level above compares against under lenience).
// Deterministic given the context, so a stochastic target may treat it as a one-hot drafter.
class CascadeDrafter : public CompositeDrafter {
public:
    CascadeDrafter(const model::Model& model, model::ContextConfig ctx, model::ForwardOptions opts,
                   std::shared_ptr<CompositeDrafter> lower, int32_t level, int32_t inner_gamma, float lenience,
                   std::string name, std::optional<drafts::ForwardCostModel> cost = std::nullopt);
    // Threshold lengths: every step drafts the full inner length (the lower level may overshoot it) and every
    // step's tokens are kept, so a request for k tokens may yield more (CS Drafting's sub-calls).
    void set_threshold(bool on) { m_threshold = on; }
    std::string name() const override { return m_name + " <- " + m_lower->name(); }
    int32_t n_vocab() const override { return m_reviewer.n_vocab(); }
    void sync(std::span<const int32_t> committed) override { m_committed.assign(committed.begin(), committed.end()); }
    // The levels below first, then this level's model caches the prompt but its last token; its passes are kept out
    // of the per-pass counters (recorded as t_prefill_s).
    drafts::DraftCost prefill(std::span<const int32_t> committed, const CancelToken& cancel) override;
    drafts::DraftChain propose(int32_t k, const drafts::ProposeParams& params, const CancelToken& cancel) override;
    // Trees are expanded by leaf drafters only; a tree config with a cascade is rejected by SpecConfig::validate.
    drafts::DraftTree propose_tree(const drafts::TreeShape& shape, const drafts::ProposeParams& params,
                                   const CancelToken& cancel) override;
    void collect(std::vector<LevelStats>& levels) const override;
    void reset_stats() override;
    void reset_learned() override { m_lower->reset_learned(); }

private:
    Reviewer m_reviewer;
    std::shared_ptr<CompositeDrafter> m_lower;
    int32_t m_level, m_inner_gamma;
    float m_lenience;
    bool m_threshold = false;
    std::string m_name;
    std::vector<int32_t> m_committed;
    LevelStats m_stats;
    drafts::DraftCost m_cost_at_reset;
};

// One draft filled by several drafters in turn: segment s proposes counts[s] tokens after everything before it.
class HorizontalDrafter : public CompositeDrafter {
public:
    HorizontalDrafter(std::vector<std::shared_ptr<CompositeDrafter>> segments, std::vector<int32_t> counts);
    // Threshold lengths: segment s calls its drafter while the draft is shorter than counts[0] + ... + counts[s]
    // and keeps all it returns; in truncate mode (the default) it gets min(counts[s], what is left of k).
    void set_threshold(bool on) { m_threshold = on; }
    std::string name() const override;
    int32_t n_vocab() const override { return m_segments.front()->n_vocab(); }
    void sync(std::span<const int32_t> committed) override { m_committed.assign(committed.begin(), committed.end()); }
    drafts::DraftCost prefill(std::span<const int32_t> committed, const CancelToken& cancel) override;  // each segment
    drafts::DraftChain propose(int32_t k, const drafts::ProposeParams& params, const CancelToken& cancel) override;
    drafts::DraftTree propose_tree(const drafts::TreeShape& shape, const drafts::ProposeParams& params,
                                   const CancelToken& cancel) override;
    void collect(std::vector<LevelStats>& levels) const override;
    void reset_stats() override;
    void reset_learned() override {
        for (auto& s : m_segments) s->reset_learned();
    }

private:
    std::vector<std::shared_ptr<CompositeDrafter>> m_segments;
    std::vector<int32_t> m_counts;
    std::vector<int32_t> m_committed;
    bool m_threshold = false;
};

// What draft level i (1-based, levels[i − 1]) is made of.
struct LevelMaterial {
    std::shared_ptr<drafts::Drafter> drafter;  // proposes autoregressively when the level is a leaf
    const model::Model* model = nullptr;       // reviews drafts when the level is inside a cascade (null: Max-Gram)
    model::ForwardOptions options;             // the level's structural options (layer skip) for reviewing
    std::string name;
    std::optional<drafts::ForwardCostModel> cost;  // what its passes read (default: the model's weight views)
};

// Tokens per call of leaf level `level` under cfg's length mode (LevelDrafter::set_threshold_block): the Max-Gram
// block in threshold mode, else 0.
int32_t threshold_block(const SpecConfig& cfg, int32_t level);

// The level-1 drafter for a config: a single level, a vertical cascade from gamma, or the k-matrix's
// horizontal + vertical cascade (CS Drafting's Algorithm 1). `materials` has one entry per level.
std::shared_ptr<CompositeDrafter> build_draft_stack(const SpecConfig& cfg, const std::vector<LevelMaterial>& materials);

}  // namespace speculum::engine
