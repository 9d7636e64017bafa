// Live decode panel: streamed tokens coloured by provenance (draft level; accepted, corrected or bonus) and a step
// timeline.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"

namespace speculum::ui {

class LiveDecodePanel {
public:
    static constexpr const char* title = "Live decode";
    // Draws from `snap` and pushes intents into `actions`; `fill` covers the whole display (screenshots).
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = true;
};

}  // namespace speculum::ui
