// The dashboard owns every panel and draws the visible ones, in a flat list, once per frame.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"
#include "ui/panels/acceptance_panel.h"
#include "ui/panels/cascade_view_panel.h"
#include "ui/panels/configuration_panel.h"
#include "ui/panels/design_space_panel.h"
#include "ui/panels/export_panel.h"
#include "ui/panels/hardware_panel.h"
#include "ui/panels/live_decode_panel.h"
#include "ui/panels/model_data_panel.h"
#include "ui/panels/overview_panel.h"
#include "ui/panels/run_history_panel.h"
#include "ui/panels/speedup_panel.h"
#include "ui/panels/tree_view_panel.h"
#include "ui/panels/tune_panel.h"

#include <string>
#include <vector>

namespace speculum::ui {

class Dashboard {
public:
    // Draws all visible panels for one frame. Must be called between ImGui::NewFrame() and ImGui::Render().
    void draw(const UiSnapshot& snap, UiActions& actions);

    struct PanelEntry {
        const char* title;
        bool* visible;
    };
    // Every panel in menu order, for the View menu and the persisted visibility.
    std::vector<PanelEntry> panels();
    // Every panel shown or hidden as in a fresh start (View > Reset layout).
    void reset_visibility();
    // Shows only the panel with this title, over the whole display (per-panel screenshots); false if unknown.
    bool set_solo(const std::string& title);

    ConfigurationPanel configuration;
    ModelDataPanel model_data;
    SpeedupPanel speedup;
    AcceptancePanel acceptance;
    LiveDecodePanel live_decode;
    TreeViewPanel tree_view;
    CascadeViewPanel cascade_view;
    HardwarePanel hardware;
    DesignSpacePanel design_space;
    TunePanel tune;
    OverviewPanel overview;
    ExportPanel export_panel;
    RunHistoryPanel run_history;

private:
    std::string m_solo;
};

}  // namespace speculum::ui
