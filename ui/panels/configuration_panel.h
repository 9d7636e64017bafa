// Configuration panel: the draft recipe, decoding knobs, analytic assumptions, the verification-tree and cascade
// editors. Edits a copy of the snapshot's AppConfig and emits ActionSetConfig.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"

namespace speculum::ui {

class ConfigurationPanel {
public:
    static constexpr const char* title = "Configuration";
    // Draws from `snap` and pushes intents into `actions`; `fill` covers the whole display (screenshots).
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = true;
};

}  // namespace speculum::ui
