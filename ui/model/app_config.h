// AppConfig: the configuration the user edits in the Configuration panel — the draft recipe (DraftSpec), the
// decoding knobs (γ, p_min, temperature), the verification tree and the cascade, plus the analytic assumptions
// (α, c) the live "modeled" panels use until a measured run replaces them. A plain value type; no Qt.
#pragma once

#include "core/analytic/csdrafting.h"
#include "core/analytic/trees.h"
#include "core/drafts/draft_spec.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace speculum::ui {

enum class TreeMode { chain, branching, budget, optimal_measured };  // how the verification tree is chosen

struct TreeConfig {
    TreeMode mode = TreeMode::chain;
    std::vector<int> branching{3, 2, 1, 1};              // children per node at each depth (mode branching)
    int budget    = 16;                                  // nodes counting the root (modes budget / optimal_measured)
    int max_depth = 6;                                   // draft levels below the root for the Sequoia search
    std::vector<double> rank_acceptance{0.6, 0.2, 0.1};  // assumed P(rank r accepted | parent accepted), modeled
    bool operator==(const TreeConfig&) const = default;
};

// One level of a vertical cascade as the editor shows it: who drafts, and the assumed acceptance and cost.
struct CascadeLevelConfig {
    drafts::DraftKind drafter = drafts::DraftKind::self;  // self-draft, separate model or Max-Gram
    double alpha              = 0.8;                      // assumed acceptance by the level above (modeled)
    double c                  = 0.05;                     // cost per call / target cost per call (modeled)
    int steps                 = 4;                        // reviewer: SD steps per parent call; bottom: tokens
    bool operator==(const CascadeLevelConfig&) const = default;
};

// The default level-1 draft: the bundled draft model (a separate GGUF whose empty path means "the bundled
// speculum-draft-f16.gguf"; it shares the bundled target's vocabulary, the target the app opens by default).
drafts::DraftSpec default_draft();

struct AppConfig {
    drafts::DraftSpec draft = default_draft();  // how the level-1 draft is made
    int gamma         = 3;  // γ: draft tokens per step (chain length); 3 = the best measured with the bundled family
    float p_min       = 0.0f;  // stop drafting when the draft's top probability falls below this, in [0, 1]
    float temperature = 0.0f;  // sampling temperature, 0 = greedy (lossless against greedy decoding)
    double alpha      = 0.8;   // assumed per-token acceptance for the modeled panels, in (0, 1)
    double cost_ratio = 0.05;  // assumed c = draft call time / target call time, >= 0
    TreeConfig tree;
    std::vector<CascadeLevelConfig> cascade;              // extra levels below level 1 (empty = plain chain)
    std::vector<analytic::HorizontalSegment> horizontal;  // horizontal split of the draft positions (empty = none)
    std::string hardware_profile;                         // id of the chosen profile (empty = none: speedup is EWIF)
    int context         = 512;                            // tokens in the KV cache for the hardware model
    int measure_tokens  = 48;  // new tokens per prompt in a measured run (small: results within seconds)
    int measure_prompts = 2;   // prompts of the dataset (task) a measured run decodes
    bool operator==(const AppConfig&) const = default;

    // Every problem, one message each naming the field ("gamma must be in [1, 32], got 0"); empty when valid.
    std::vector<std::string> problems() const;
    // Throws std::invalid_argument listing every problem ("ui config: gamma must be ...; ...").
    void validate() const;
};

// JSON for the persisted settings: missing keys keep their defaults; unknown keys and wrong types throw
// std::invalid_argument naming the key (values are checked by validate(), not here).
void to_json(nlohmann::json& j, const AppConfig& c);
void from_json(const nlohmann::json& j, AppConfig& c);

// Sets one field from text, for scripted runs (`speculum --set gamma=6`). A key starting with '/' is a SpecConfig
// JSON pointer, the same name a sweep axis `path` uses (`--set /levels/0/prune/ratio=0.3`; spec_mapping.h). Short
// keys: gamma, p_min, temperature, drafter (self|model|maxgram), draft_model (path), prune, prune_method,
// trunc_bits, kv_trunc_bits, kv_drop, exit_layer, measure_tokens, measure_prompts (aliases of SpecConfig pointers,
// config_key_pointer), and the editor's own: alpha, c, context, profile, mxfp4, tree
// (chain|branching|budget|optimal), budget, branching (e.g. 3x2x1), cascade (number of Max-Gram levels below level
// 1), horizontal (number of segments). Returns an error message naming the key, or "" on success.
std::string set_config_value(AppConfig& cfg, const std::string& key, const std::string& value);

const char* tree_mode_name(TreeMode m);
const char* draft_kind_name(drafts::DraftKind k);

// A tree with `branching[d]` children under every node of depth d (root = depth 0), in parent-array form.
// Capped at `max_nodes` nodes (breadth-first) so a careless editor cannot build millions of nodes.
analytic::TokenTree tree_from_branching(const std::vector<int>& branching, int max_nodes = 512);

// Short description of the draft recipe for labels (the DraftSpec's own describe() lives with its JSON on the
// drafts branch; this covers the fields the UI edits).
std::string describe_draft(const drafts::DraftSpec& d);

}  // namespace speculum::ui
