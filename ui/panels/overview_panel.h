// Overview panel: what this build is and what is loaded. The first panel a user sees.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"

namespace speculum::ui {

class OverviewPanel {
public:
    static constexpr const char* title = "Overview";
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = false;  // in the View menu; the other panels carry the work
};

}  // namespace speculum::ui
