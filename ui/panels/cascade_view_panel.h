// Cascade view panel: the draft levels with their cost ratios and acceptance, and the horizontal split of draft
// positions.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"

namespace speculum::ui {

class CascadeViewPanel {
public:
    static constexpr const char* title = "Cascade view";
    // Draws from `snap` and pushes intents into `actions`; `fill` covers the whole display (screenshots).
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = true;
};

// Whether level i + 1's box shows the last run's measured figures: the run measured this very drafter at that
// level (same levels), else the assumed figures are shown (a kind change must not keep the old drafter's figures).
bool cascade_level_measured(const UiSnapshot& snap, size_t i);

}  // namespace speculum::ui
