// The editor's AppConfig and the engine's SpecConfig, both ways, in one place:
//   spec_config_of        AppConfig -> SpecConfig, field by field (what every front end runs; no files resolved);
//   spec_config_from_app  the same, resolved for a measured run (model paths, Wanda calibration, prompts);
//   app_config_from_spec  SpecConfig -> AppConfig, keeping the modeled assumptions and listing what the editor
//                         cannot hold (stored sweep rows, `--set /json/pointer=value`).
// The fields the app edits are SpecConfig's: their one name is the SpecConfig JSON pointer that sweep specs use as
// an axis `path` (config_key_pointer lists the short `--set` aliases). The rest of AppConfig is modeled
// assumptions (α, c, the horizontal split, hardware) and preferences, which the engine does not take.
#pragma once

#include "core/engine/spec_config.h"
#include "ui/model/app_config.h"

#include <string>
#include <vector>

namespace speculum::ui {

// Where a measured run takes its prompts and tree prior from (besides the AppConfig itself).
struct MeasureSource {
    std::string dataset;                  // JSONL prompt suite; "" = the built-in prompt
    std::string task;                     // "" = every task of the dataset
    std::vector<double> rank_acceptance;  // measured acceptance by sibling rank (tree mode "optimal"); may be empty
};

// The built-in prompt used when no dataset is open (the bundled models know Python and the King James Bible).
extern const char* const kBuiltinPrompt;

// Level 1 is cfg.draft; each cascade level adds a level below it (self = the target's first layer, model = a
// separate GGUF, resolved when measuring; Max-Gram); γ of lower levels = their `steps`. Trees map to static
// branching or Sequoia (node budget without the root, the assumed rank acceptance as prior). Never throws.
engine::SpecConfig spec_config_of(const AppConfig& cfg);

// spec_config_of, resolved for a measured run: a model level without a path uses the bundled draft (a cascade
// level under the bundled mid model, the bundled small one); Wanda calibrates on the opened dataset; the prompts
// are the dataset's or the built-in one; the baseline runs. The horizontal split is modeled only (not measured).
// Throws std::invalid_argument naming the field for what cannot be measured.
engine::SpecConfig spec_config_from_app(const AppConfig& cfg, const MeasureSource& source);

// SpecConfig -> AppConfig over `cfg` (which keeps its modeled assumptions and whatever the spec does not set).
// Each field the editor cannot express is one line in `not_loaded`, naming it and why; nothing is guessed.
void app_config_from_spec(const engine::SpecConfig& s, AppConfig& cfg, std::vector<std::string>& not_loaded);

// `--set /levels/0/prune/ratio=0.3`: sets the SpecConfig field at a JSON pointer (the value parsed as JSON, else
// taken as a string) through spec_config_of and app_config_from_spec. Returns an error naming the pointer: no such
// field, a value the SpecConfig refuses, or a field the editor cannot hold. "" on success.
std::string set_config_pointer(AppConfig& cfg, const std::string& pointer, const std::string& value);

// The SpecConfig JSON pointer a short `--set` key stands for ("prune" -> "/levels/0/prune/ratio"); nullptr for
// keys that are modeled assumptions or preferences (alpha, c, profile, context, tree shape, cascade, horizontal).
const char* config_key_pointer(const std::string& key);

}  // namespace speculum::ui
