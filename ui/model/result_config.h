// A stored sweep row's configuration mapped back onto the editor's AppConfig, as far as the editor can express
// it: an engine SpecConfig (levels[0] -> the draft recipe, gamma, tree, lower levels -> cascade drafters, sampling),
// the same with a "modeled" block (a spec-predict sweep's row: its alpha and c become the editor's assumptions)
// or a `predict` input (alpha, k, c, cascade, horizontal, tree budget, hardware). What cannot be expressed is
// listed, so the UI can say what was not loaded; nothing is guessed.
#pragma once

#include "ui/model/app_config.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace speculum::ui {

struct ResultConfigLoad {
    AppConfig config;  // `base` with every field that could be mapped set from the row
    std::string kind;  // "engine" (SpecConfig), "modeled" (SpecConfig + assumed figures) or "predict" (analytic input)
    std::vector<std::string> not_loaded;  // one line per field left out, naming it and why
};

// Never throws: a configuration that parses as neither gives `base` back with the reason in not_loaded.
ResultConfigLoad app_config_from_result(const nlohmann::json& config, const AppConfig& base);

}  // namespace speculum::ui
