// The dashboard owns every panel and draws the visible ones, in a flat list, once per frame.
#pragma once

#include "ui/actions.h"
#include "ui/panels/overview_panel.h"
#include "ui/snapshot.h"

namespace speculum::ui {

class Dashboard {
public:
    // Draws all visible panels for one frame. Must be called between ImGui::NewFrame() and ImGui::Render().
    void draw(const UiSnapshot& snap, UiActions& actions);

    OverviewPanel overview;
};

}  // namespace speculum::ui
