// AppConfig: what the user edits in the Configuration panel, in three parts:
//   spec      the engine's own SpecConfig: draft levels, γ, verification tree, sampling, p_min, what a measured
//             run generates. Its JSON pointers (/levels/0/prune/ratio) are the field names everywhere: `--set`,
//             sweep axes, stored rows. A stored configuration loads into it whole.
//   modeled   the analytic assumptions the live "modeled" panels use until a measured run replaces them: each
//             level's acceptance α and cost ratio c, the horizontal split, the hardware profile and the context.
//             The engine never reads them.
//   prefs     editor preferences (where a Sequoia tree takes its prior from).
// A plain value type; no Qt, no ImGui.
#pragma once

#include "core/analytic/csdrafting.h"
#include "core/analytic/trees.h"
#include "core/drafts/draft_spec.h"
#include "core/engine/acceptance_profile.h"
#include "core/engine/spec_config.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace speculum::ui {

// The assumed figures of one draft level (modeled).
struct LevelAssumption {
    double alpha = 0.8;   // acceptance of this level's tokens by the level above, in (0, 1)
    double c     = 0.05;  // one call of this level ÷ one target call, >= 0
    bool operator==(const LevelAssumption&) const = default;
};

// A speculation_profile.json loaded as level 1's acceptance per position (its conditional rates; modeled).
struct LoadedAcceptanceProfile {
    std::string path;  // where it was read from (shown, and read again by nothing: the rates are kept here)
    engine::AcceptanceProfile profile;
    bool operator==(const LoadedAcceptanceProfile&) const = default;
};

struct ModeledAssumptions {
    std::vector<LevelAssumption> levels = std::vector<LevelAssumption>(1);  // parallel to spec.levels ([0] = level 1)
    // Level 1's acceptance per position from a profile: replaces the assumed α and a measured run's (the user chose
    // it to see what that acceptance gives here).
    std::optional<LoadedAcceptanceProfile> acceptance_profile;
    std::vector<analytic::HorizontalSegment> horizontal;     // horizontal split of the draft positions (modeled only)
    std::string hardware_profile;                            // id of the chosen profile (empty = none: speedup is EWIF)
    int context                                      = 512;  // tokens in the KV cache for the hardware model
    bool operator==(const ModeledAssumptions&) const = default;
};

struct Preferences {
    bool tree_prior_measured = false;  // a Sequoia tree uses the last run's measured acceptance by rank ("optimal")
    // Every edit queues a measured run after 300 ms of quiet; off = only Run now measures (a multi-GB model, where
    // each run takes minutes). The modeled panels follow every edit either way.
    bool auto_measure                         = true;
    bool operator==(const Preferences&) const = default;
};

// The app's starting SpecConfig: level 1 = the bundled draft model (a separate GGUF whose empty path means "the
// bundled speculum-draft-f16.gguf", which shares the bundled target's vocabulary), γ = 5 (the best measured with
// the distilled small draft), 48 new tokens for 2 prompts (results within seconds), A/B passes until the speedup's
// interval is 10 % wide (at most 10 passes or 6 s), a Sequoia prior of {0.6, 0.2, 0.1}.
engine::SpecConfig default_spec();
drafts::DraftSpec default_draft();

struct AppConfig {
    engine::SpecConfig spec = default_spec();
    ModeledAssumptions modeled;
    Preferences prefs;
    bool operator==(const AppConfig&) const = default;

    // Level 1 (spec.levels[0]; the app always keeps one) and its assumptions.
    drafts::DraftSpec& draft() { return spec.levels.at(0); }
    const drafts::DraftSpec& draft() const { return spec.levels.at(0); }
    LevelAssumption& level1() { return modeled.levels.at(0); }
    const LevelAssumption& level1() const { return modeled.levels.at(0); }
    int gamma() const { return spec.draft_length(0); }  // tokens level 1 drafts per step

    // Every problem, one message each naming the field by its JSON pointer ("/gamma/0: must be in [1, 64], got 0",
    // "modeled/levels/0/alpha: ..."); empty when valid.
    std::vector<std::string> problems() const;
    // Throws std::invalid_argument listing every problem ("ui config: ...; ...").
    void validate() const;
};

// spec.validate() as the app sees it: a model level with an empty path stands for a bundled draft model, which a
// measured run resolves (spec_mapping.h). Throws std::invalid_argument naming the field.
void validate_app_spec(const engine::SpecConfig& spec);

// The assumption a level of this kind starts with: a model α 0.8, c 0.05; Max-Gram and the n-gram drafters α 0.5,
// c 0 (no forward pass); an MTP layer or an EAGLE-3 head α 0.6, c 0.12 (a one-layer head over the target).
LevelAssumption default_assumption(drafts::DraftKind k);

// Gives every spec level its assumptions (new levels: a Max-Gram leaf α 0.5, c 0; a model α 0.8, c 0.05), drops
// those of removed levels, and keeps one level 1 and one γ per level.
void normalize(AppConfig& cfg);

// What a measured run of `cfg` will take, from the decode speeds the last run measured (its speculative and plain
// tokens/s; prefill left out): prompts x new tokens, decoded once speculatively and once plainly per pass, for the
// passes the repeat rules allow (up to their time budget). nullopt when no run has measured a speed yet.
struct RunEstimate {
    double seconds_min = 0, seconds_max = 0;  // with the fewest passes the rules run, and with the most
    int passes_min = 1, passes_max = 1;
    double tokens_per_s = 0;  // the plain decoding speed the estimate assumes
};
std::optional<RunEstimate> estimate_run(const engine::SpecConfig& spec, double spec_tokens_per_s,
                                        double plain_tokens_per_s);
// "a run of these settings: about 40 s to 3 min (1 to 10 passes of 2 prompts x 48 tokens, ...)"
std::string describe_estimate(const RunEstimate& e, const engine::SpecConfig& spec);
// "45 s", "6 min", "1.5 h".
std::string duration_text(double seconds);
// "about 6 min left" for long work `fraction` done after `elapsed_s` (straight-line: the rest at the pace so far);
// "" before 2 % or 2 s, when there is nothing to go on yet, and once done.
std::string time_left_text(double fraction, double elapsed_s);

// How the editor shows spec.verification and spec.tree, and the change of shape from the editor's combo.
enum class TreeMode { chain, branching, top_k, budget, optimal_measured, chain_second, dynamic, cats };
TreeMode tree_mode(const AppConfig& cfg);
void set_tree_mode(AppConfig& cfg, TreeMode m);  // cats is not offered (it replaces level 1); ignored

// JSON for the persisted settings: {"spec": SpecConfig, "modeled": {...}, "preferences": {...}}. The flat layout
// written before SpecConfig was the app's state ({"draft", "gamma", "alpha", "tree": {"mode", ...}, ...}) still
// loads. Missing keys keep their defaults; unknown keys and wrong types throw std::invalid_argument naming the key.
void to_json(nlohmann::json& j, const AppConfig& c);
void from_json(const nlohmann::json& j, AppConfig& c);

// Sets one field from text, for scripted runs (`speculum --set gamma=6`). A key starting with '/' is a SpecConfig
// JSON pointer, the same name a sweep axis `path` uses (`--set /levels/0/prune/ratio=0.3`; spec_mapping.h). Short
// keys: gamma, p_min, temperature, drafter (self|model|maxgram), draft_model (path), prune, prune_method,
// trunc_bits, kv_trunc_bits, kv_drop, exit_layer, measure_tokens, measure_prompts (aliases of SpecConfig pointers,
// config_key_pointer), mxfp4 (0|1), tree (chain|branching|top_k|budget|optimal|chain_second), budget (tree nodes
// counting the root), branching (e.g. 3x2x1), cascade (levels below level 1: a Max-Gram leaf under any number of
// target-first-layer self-drafts), and the modeled
// assumptions alpha, c, context, profile, horizontal (number of segments). Returns an error naming the key, or "".
std::string set_config_value(AppConfig& cfg, const std::string& key, const std::string& value);

// The control that fixes a configuration problem (a problems() or validation message, which names its field), as
// the user finds it: "Configuration > Draft > prune ratio"; "" when the field is not one the editor shows.
std::string fixing_control(const std::string& problem);
// The problem with " (fix: CONTROL)" appended when its control is known.
std::string with_fix(const std::string& problem);

const char* tree_mode_name(TreeMode m);
const char* draft_kind_name(drafts::DraftKind k);

// Short description of the draft recipe for labels.
std::string describe_draft(const drafts::DraftSpec& d);

}  // namespace speculum::ui
