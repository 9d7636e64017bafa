// The Configuration panel's two structured editors: the verification tree (mode, branching per depth, node
// budget, assumed rank acceptance) and the cascade (vertical levels with their drafters, horizontal split).
// Each edits `cfg` in place and returns true when something changed.
#pragma once

#include "ui/model/app_config.h"

namespace speculum::ui {

bool edit_tree(TreeConfig& tree);
bool edit_cascade(AppConfig& cfg);

}  // namespace speculum::ui
