// The Configuration panel's two structured editors: the verification tree (shape, branching per depth, top-k,
// node budget, the rank acceptance Sequoia assumes) and the cascade (draft levels below level 1 with their drafters
// and assumed figures, the modeled horizontal split).
// Each edits `cfg` in place and returns true when something changed.
#pragma once

#include "ui/model/app_config.h"

namespace speculum::ui {

bool edit_tree(AppConfig& cfg);
bool edit_cascade(AppConfig& cfg);
// The n-gram drafters' method and the parameters that method reads.
bool edit_ngram(drafts::NgramSpec& s);

}  // namespace speculum::ui
