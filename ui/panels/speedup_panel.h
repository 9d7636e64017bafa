// Speedup panel: modeled speedup (EWIF, cascade, tree, hardware projection) and BPT next to the measured speedup.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"

namespace speculum::ui {

class SpeedupPanel {
public:
    static constexpr const char* title = "Speedup";
    // Draws from `snap` and pushes intents into `actions`; `fill` covers the whole display (screenshots).
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = true;
};

}  // namespace speculum::ui
