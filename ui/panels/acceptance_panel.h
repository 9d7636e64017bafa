// Acceptance panel: measured acceptance per position with Wilson intervals over the modeled expectation, the
// accepted-length histogram and acceptance by rank for trees.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"

namespace speculum::ui {

class AcceptancePanel {
public:
    static constexpr const char* title = "Acceptance";
    // Draws from `snap` and pushes intents into `actions`; `fill` covers the whole display (screenshots).
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = true;
};

}  // namespace speculum::ui
