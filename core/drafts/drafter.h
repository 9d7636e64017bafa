// The interface every drafter implements — self-drafts derived from the target, separate small models, Max-Gram,
// and (in cascades) a drafter that is itself accelerated by the level below. The engine only talks to this.
#pragma once

#include "core/cancel.h"
#include "core/model/kv_cache.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace speculum::drafts {

// What one drafter call cost. Bytes are what the kernels actually read, unless `bytes_modeled` says the transform
// has no compact kernel and the figure is the modeled one (e.g. a pruned draft stored dense).
struct DraftCost {
    uint64_t bytes_weights = 0;      // bytes of weights read
    uint64_t bytes_kv      = 0;      // bytes of KV cache read
    double flops           = 0;      // floating-point operations (2 per multiply-add)
    double seconds         = 0;      // wall time, measured
    int32_t n_forward      = 0;      // forward passes run
    bool bytes_modeled     = false;  // bytes_weights is modeled
    bool bytes_kv_modeled  = false;  // bytes_kv is modeled (a compressed draft KV kept in the f32 cache)

    DraftCost& operator+=(const DraftCost& o) {
        bytes_weights += o.bytes_weights;
        bytes_kv += o.bytes_kv;
        flops += o.flops;
        seconds += o.seconds;
        n_forward += o.n_forward;
        bytes_modeled    = bytes_modeled || o.bytes_modeled;
        bytes_kv_modeled = bytes_kv_modeled || o.bytes_kv_modeled;
        return *this;
    }
};

struct ProposeParams {
    float temperature       = 0.0f;  // 0 = greedy drafting (argmax); > 0 samples from softmax(logits / T)
    float p_min             = 0.0f;  // stop when the chosen token's draft probability < p_min (llama.cpp --draft-p-min)
    bool want_distributions = false;  // fill q_dist (stochastic verification needs the draft distributions)
    uint64_t seed           = 0;      // RNG seed for this call when temperature > 0
};

// A chain of proposed tokens following the synced context.
struct DraftChain {
    std::vector<int32_t> tokens;
    std::vector<float> q;                    // q(token_i | context, tokens_<i): 1 for one-hot drafters
    std::vector<std::vector<float>> q_dist;  // (tokens.size(), n_vocab) when asked for; else empty
    std::vector<uint8_t> source;             // per token, drafter-defined provenance (e.g. Max-Gram copy/bigram)
    std::vector<float> confidence;           // per token, the draft's softmax probability of it (what p_min tests;
                                             // equals q for sampled and one-hot drafters, not for greedy models)
    bool predicts_acceptance = false;        // confidence is instead the draft's own prediction that each token is
                                             // accepted (DSpark's confidence head)
    DraftCost cost;
};

// The shape of a token tree to expand below the last committed token (the root).
// Uniform branching per depth, an explicit tree (e.g. Sequoia's optimal tree for a node budget), or a dynamic tree.
struct TreeShape {
    std::vector<int32_t> branching;  // branching[d]: children of every node at depth d (d = 0: the root)
    std::vector<int32_t> parent;     // explicit form: node i's parent (-1 = root), parents before children
    std::vector<int32_t> rank;       // explicit form: node i is its parent's rank[i]-th most likely child
    // > 0: an EAGLE-2 dynamic tree of this many nodes (with `branching`: per depth, how many of the most probable
    // nodes are expanded and how many children each takes; model_drafter.h expand_dynamic_tree). Drafters without
    // path probabilities expand its stand-in, the first dynamic_nodes nodes of `branching` breadth-first.
    int32_t dynamic_nodes = 0;

    bool explicit_form() const { return !parent.empty(); }
    bool operator==(const TreeShape&) const = default;
};

// A proposed token tree. Nodes are in topological order (parents before children).
struct DraftTree {
    std::vector<int32_t> tokens;
    std::vector<int32_t> parent;             // -1 = child of the root (the last committed token)
    std::vector<int32_t> depth;              // 1 for the root's children
    std::vector<int32_t> rank;               // rank among siblings by draft probability, 0 = most likely
    std::vector<float> q;                    // draft probability of each node given its path
    std::vector<std::vector<float>> q_dist;  // per node, the draft distribution its children were drawn from
                                             // (when asked for; empty for leaves, which are never evaluated)
    std::vector<float> root_q_dist;          // the distribution the root's children were drawn from (when asked)
    DraftCost cost;

    int32_t size() const { return int32_t(tokens.size()); }
};

class Drafter {
public:
    virtual ~Drafter()               = default;
    virtual std::string name() const = 0;
    virtual int32_t n_vocab() const  = 0;

    // Makes the drafter's context equal to `committed` (prompt + every committed token). Stateful drafters keep
    // the longest common prefix of their KV state and roll back the rest; they evaluate what is new lazily.
    virtual void sync(std::span<const int32_t> committed) = 0;

    // Evaluates the prompt while the target does: the engine calls it once per sequence, after the target's prefill
    // and inside the prompt time, with `committed` = the prompt. A drafter with a model of its own caches all of it
    // but the last token (as the target does), so its first propose makes one short pass like every later one: the
    // prompt's passes are prompt time, as llama.cpp's speculative example times both models' prompts, and stay out
    // of the level's per-pass cost c. Leaves the drafter synced to `committed`; returns what it read and computed
    // (cost.seconds: its wall time). Default: sync only (nothing to evaluate ahead).
    virtual DraftCost prefill(std::span<const int32_t> committed, const CancelToken& cancel) {
        (void)cancel;
        sync(committed);
        return {};
    }

    // Proposes up to k tokens after the synced context; fewer when p_min stops it or the drafter knows no more.
    virtual DraftChain propose(int32_t k, const ProposeParams& params, const CancelToken& cancel) = 0;

    // Expands a token tree of the given shape; each node's children are its top-ranked draft tokens.
    virtual DraftTree propose_tree(const TreeShape& shape, const ProposeParams& params, const CancelToken& cancel) = 0;

    // The target's KV cache, for drafters that read it instead of computing their own (Cassandra's self-drafts):
    // between verification passes, slots [0, tokens->size()) of `kv` hold the K/V of `tokens` (a prefix of the
    // committed tokens). Both stay valid until the next call; nullptr detaches. Others ignore it.
    virtual void attach_target_kv(const model::KvCache* kv, const std::vector<int32_t>* tokens) {
        (void)kv, (void)tokens;
    }

    // Forgets what earlier sequences taught it (the statistical drafters' state across prompts: n-gram pools and
    // counts, suffix trees of earlier responses), back to how it was built. A repeated measurement calls it before
    // each pass over the same prompts, so a later pass does not draft from the responses of an earlier one.
    virtual void reset_learned() {}

    // The target layers whose residual stream a drafter reads through attach_target_kv (KvCache::keep_hidden's
    // convention: L < n_layer enters layer L, n_layer is after the last): a multi-token-prediction layer reads
    // {n_layer}, an EAGLE-3 head its three extract layers. The engine has the target's cache keep them; empty =
    // none.
    virtual std::vector<int32_t> target_hidden_layers() const { return {}; }
};

}  // namespace speculum::drafts
