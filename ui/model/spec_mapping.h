// The app's SpecConfig (AppConfig::spec) on its way to the engine and back:
//   spec_config_from_app  AppConfig::spec resolved for a measured run (model paths, Wanda calibration, prompts);
//   app_config_from_spec  a stored or scripted SpecConfig loaded into the editor, keeping the modeled assumptions
//                         (stored sweep rows, `--set /json/pointer=value`); the prompts it names are listed, since
//                         the app measures on the dataset it has open.
// The fields the app edits are SpecConfig's: their one name is the SpecConfig JSON pointer that sweep specs use as
// an axis `path` (config_key_pointer lists the short `--set` aliases).
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

// cfg.spec with every model level's file named: a level without a path uses the bundled draft (below the bundled
// mid model, the bundled small one; else level 1's model). Throws std::invalid_argument naming the level when the
// file is missing.
engine::SpecConfig spec_with_model_paths(const AppConfig& cfg);

// cfg.spec resolved for a measured run: a model level without a path uses the bundled draft (a level below the
// bundled mid model, the bundled small one; else level 1's model); Wanda calibrates on the opened dataset; the
// prompts are the dataset's or the built-in one; the baseline runs; "optimal" trees take the measured acceptance
// by rank as their prior. The horizontal split is modeled only (not measured). Throws std::invalid_argument naming
// the field for what cannot be measured.
engine::SpecConfig spec_config_from_app(const AppConfig& cfg, const MeasureSource& source);

// A target without a tokenizer cannot encode text: the run's prompt becomes the token ids 1..8 (fewer for a tiny
// vocabulary), the dataset and text prompt are dropped. Returns what the run then decodes, for the user.
std::string use_token_id_prompt(engine::SpecConfig& s, int32_t n_vocab);

// `s` becomes cfg.spec; cfg keeps its modeled assumptions (new levels get defaults). The spec's own prompts
// (dataset, task, prompt, prompt_ids) are not kept: each is one line in `not_loaded`, naming it and why.
void app_config_from_spec(const engine::SpecConfig& s, AppConfig& cfg, std::vector<std::string>& not_loaded);

// `--set /levels/0/prune/ratio=0.3`: sets the SpecConfig field at a JSON pointer (the value parsed as JSON, else
// taken as a string). Returns an error naming the pointer: no such field, or a value of the wrong type or range
// for SpecConfig. "" on success.
std::string set_config_pointer(AppConfig& cfg, const std::string& pointer, const std::string& value);

// The SpecConfig JSON pointer a short `--set` key stands for ("prune" -> "/levels/0/prune/ratio"); nullptr for
// keys that are modeled assumptions or preferences (alpha, c, profile, context, tree shape, cascade, horizontal).
const char* config_key_pointer(const std::string& key);

}  // namespace speculum::ui
