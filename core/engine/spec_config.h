// SpecConfig: everything one speculative decoding run is made of — the draft levels (level 1 drafts for the
// target, level 2 for level 1, ...), draft lengths, chain or tree verification, sampling, early stop, adaptive γ,
// lenience at intermediate reviewers, CS Drafting's horizontal k-matrix, and what to generate. A value type with
// defaults, validate() naming the field, and a strict JSON round-trip (unknown keys are errors).
#pragma once

#include "core/drafts/draft_spec.h"
#include "core/model/forward.h"
#include "core/model/sampler.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::engine {

// chain | tree (one draft level, SpecInfer-style) | cats: CATS's three stages on the target itself (CatsConfig).
enum class Verification { chain, tree, cats };
// How long a cascade's drafts are (CS Drafting; docs/engine.md, "Cascades"):
//   truncate (Speculum's default): a request for K tokens yields at most K. A reviewer level's inner drafts are cut
//     so that its last step never overshoots; a horizontal segment gets min(its count, what is left).
//   threshold (CS Drafting's code, _csd_iteration): a segment repeats calls of its level while the draft is shorter
//     than the cumulative threshold (the row's counts so far); a reviewer's call is one speculative step (accepted
//     tokens + 1), a Max-Gram call proposes maxgram_block tokens, a neural leaf drafts what is missing. The last
//     call may overshoot, so drafts are longer and of random length.
enum class LengthMode { truncate, threshold };  // JSON: "truncate", "threshold"
const char* to_string(LengthMode m);
// JSON: "static", "top_k", "sequoia", "chain_second" (called "cats" until issue #24; that name now means CATS's
// three-stage process, Verification::cats), "dynamic" (EAGLE-2)
enum class TreeKind { static_shape, top_k, sequoia, chain_second, dynamic };

struct TreeConfig {
    TreeKind kind = TreeKind::static_shape;
    std::vector<int32_t> branching{2, 2, 1};           // static: children of every node at depth d (d = 0: the root)
    int32_t top_k       = 2;                           // top_k, dynamic: children per node at every depth
    int32_t depth       = 3;                           // top_k, dynamic: draft depth (levels below the root)
    int32_t node_budget = 16;                          // sequoia, dynamic: draft nodes, the root not counted
    int32_t max_depth   = 8;                           // sequoia: deepest draft level
    std::vector<double> prior{0.6, 0.12, 0.05, 0.03};  // sequoia: acceptance by rank before anything is measured
    int32_t refit_every = 8;  // sequoia: steps between re-fits from the measured acceptance by rank
    // chain_second: the chain length is gamma[0]; each chain position gets one extra rank-1 leaf, the draft's own
    // second choice (a correction guess from the same draft; CATS's correction comes from a deeper verifier).
    // dynamic: EAGLE-2's tree, grown from the draft's own probabilities each step: at every depth the top_k most
    // probable nodes are expanded with top_k children each, then the node_budget most probable nodes are verified
    // (drafts::expand_dynamic_tree). Drafters without probabilities (n-gram, Max-Gram) expand the first
    // node_budget nodes of the top_k tree breadth-first instead.
    bool operator==(const TreeConfig&) const = default;
};

// CATS (paper 001) as the paper runs it, without its trained adapters (both early stages read the target's own
// head): the target's first draft_layers layers draft a chain of gamma[0] tokens; a
// shallow verifier, layers [draft_layers, sv_layers), continues from the draft's hidden states (it does not
// recompute from layer 0) and adds its own argmax as a leaf wherever it disagrees with the draft (the correction
// tree); the target's remaining layers continue from the verifier's hidden states and verify the tree.
struct CatsConfig {
    int32_t draft_layers = 0;     // L_DM; 0 = n_layer / 4 (at least 1)
    int32_t sv_layers    = 0;     // L_SV, the layers the shallow verifier reaches (> draft_layers, < n_layer);
                                  // 0 = the deepest that fits dram_budget_gb, or halfway from L_DM to n_layer
    double dram_budget_gb = 0.0;  // memory for the resident layers [0, L_SV) with embeddings, head and their KV
                                  // (the rest is streamed, as on the paper's devices); 0 = not constrained
    // The paper's relaxed mode (Medusa's typical acceptance), LOSSY: the target also accepts a node whose
    // probability exceeds min(typical_epsilon, typical_delta * exp(-entropy)).
    bool typical                             = false;
    float typical_epsilon                    = 0.09f;
    float typical_delta                      = 0.3f;
    bool operator==(const CatsConfig&) const = default;
};

struct AdaptiveGamma {
    bool enabled = false;  // after a fully accepted step γ += 2, after a rejection γ −= 1 (HF's heuristic)
    int32_t min  = 1;      // tokens
    int32_t max  = 16;     // tokens
    bool operator==(const AdaptiveGamma&) const = default;
};

// How often a run is measured (session::run): whole passes over the prompts, each prompt decoded speculatively and
// then by the plain baseline right after it (A B A B ...), so every pass gives one speedup pair per prompt, timed
// seconds apart. Passes go on while fewer than `min` have run or less than `min_time_s` has passed; after that they
// stop as soon as the 95 % interval of the median speedup is narrower than `rel_width` of it (at once when
// rel_width is 0), at `max` passes, or once `max_time_s` has passed. The acceptance counts are the first pass's (greedy
// passes repeat them exactly).
struct Repeats {
    int32_t min       = 1;     // passes always run, in [1, 1000]
    int32_t max       = 1;     // passes never exceeded, in [min, 1000]
    double min_time_s = 0.0;   // keep repeating (up to max) until this much wall time has passed
    double max_time_s = 0.0;   // start no pass after this much wall time, once min passes ran (0 = no budget)
    double rel_width  = 0.05;  // stop once (hi − lo) / median of the speedup's 95 % interval is below this
    bool operator==(const Repeats&) const = default;
};

struct SpecConfig {
    std::vector<drafts::DraftSpec> levels;  // levels[i] = draft level i + 1; level 1 drafts for the target
    std::vector<int32_t> gamma{4};          // gamma[i]: tokens level i + 1 drafts per step for level i (0 = target)
    Verification verification = Verification::chain;
    TreeConfig tree;
    CatsConfig cats;                // verification cats only
    model::SamplerConfig sampling;  // the target's sampling; temperature 0 = greedy (lossless check applies)
    float p_min = 0.0f;             // level-1 drafting stops below this draft probability (0 = off)
    AdaptiveGamma adaptive_gamma;   // level-1 γ only
    std::vector<float> lenience;    // per reviewer: [0] = target (must be 1), [i] = level i; empty = all 1
    std::vector<std::vector<int32_t>> k_matrix;     // CS Drafting: k_matrix[i][j] = positions of reviewer i's draft
                                                    // filled by level j (j > i, upper-triangular, (n+1) x (n+1));
                                                    // empty = vertical cascade with gamma
    LengthMode length_mode = LengthMode::truncate;  // how long cascade drafts are (see LengthMode)
    int32_t maxgram_block  = 10;      // threshold mode: tokens per Max-Gram call (CS Drafting's _MAG_GENERATION)
    int32_t max_new_tokens = 64;      // tokens generated per prompt
    std::vector<int32_t> prompt_ids;  // the prompt as token ids (used when no text prompt is given)
    std::string prompt;               // the prompt as text (needs the target's tokenizer)
    std::string dataset;              // JSONL prompt suite; overrides prompt/prompt_ids
    std::string task;                 // only the dataset's prompts of this task; empty = all
    int32_t max_prompts = 4;          // prompts taken from the dataset
    model::ContextConfig context{.n_ctx = 0, .n_batch = 64, .path = model::ForwardPath::fast};  // every model
    bool baseline = true;  // also run plain autoregressive decoding of the target for the speedup
    Repeats repeats;       // passes over the prompts, for the speedup's interval (needs the baseline when > 1)
    int32_t eos = -1;      // stop after this token (-1 = never)

    bool operator==(const SpecConfig&) const = default;

    // Throws std::invalid_argument naming the field, e.g. "spec.lenience[0]: the target always reviews with
    // lenience 1 (got 2)". n_layer >= 0 also checks self-draft layer indices.
    void validate(int32_t n_layer = -1) const;
    bool greedy() const { return sampling.greedy(); }
    // Draft tokens reviewer i gets per step: row i of the k-matrix summed, or gamma[i]. In threshold mode the
    // threshold, which the draft may overshoot.
    int32_t draft_length(int32_t reviewer) const;
    // The longest draft reviewer i can get: draft_length in truncate mode; in threshold mode the threshold plus the
    // largest overshoot of the last call of each segment (what the target's context must hold).
    int32_t max_draft_length(int32_t reviewer) const;
};

void to_json(nlohmann::json& j, const SpecConfig& c);
void from_json(const nlohmann::json& j, SpecConfig& c);  // strict: unknown keys and wrong types name the key

// Reads and validates a config file; errors name the file and the field.
SpecConfig load_spec_config(const std::string& path);

}  // namespace speculum::engine
