// Flat per-frame dispatch over the panels (Tracy's View::Draw pattern).
#include "ui/dashboard.h"

#include "ui/widgets.h"

namespace speculum::ui {

void Dashboard::draw(const UiSnapshot& snap, UiActions& actions) {
    layout_new_frame();
    bool fill = !m_solo.empty();
    if (configuration.visible) configuration.draw(snap, actions, fill);
    if (model_data.visible) model_data.draw(snap, actions, fill);
    if (speedup.visible) speedup.draw(snap, actions, fill);
    if (acceptance.visible) acceptance.draw(snap, actions, fill);
    if (live_decode.visible) live_decode.draw(snap, actions, fill);
    if (tree_view.visible) tree_view.draw(snap, actions, fill);
    if (cascade_view.visible) cascade_view.draw(snap, actions, fill);
    if (hardware.visible) hardware.draw(snap, actions, fill);
    if (design_space.visible) design_space.draw(snap, actions, fill);
    if (tune.visible) tune.draw(snap, actions, fill);
    if (overview.visible) overview.draw(snap, actions, fill);
    if (export_panel.visible) export_panel.draw(snap, actions, fill);
    if (run_history.visible) run_history.draw(snap, actions, fill);
}

std::vector<Dashboard::PanelEntry> Dashboard::panels() {
    return {{ConfigurationPanel::title, &configuration.visible},
            {ModelDataPanel::title, &model_data.visible},
            {SpeedupPanel::title, &speedup.visible},
            {AcceptancePanel::title, &acceptance.visible},
            {LiveDecodePanel::title, &live_decode.visible},
            {TreeViewPanel::title, &tree_view.visible},
            {CascadeViewPanel::title, &cascade_view.visible},
            {HardwarePanel::title, &hardware.visible},
            {DesignSpacePanel::title, &design_space.visible},
            {TunePanel::title, &tune.visible},
            {OverviewPanel::title, &overview.visible},
            {RunHistoryPanel::title, &run_history.visible},
            {ExportPanel::title, &export_panel.visible}};
}

void Dashboard::reset_visibility() {
    Dashboard fresh;
    std::vector<PanelEntry> mine = panels(), defaults = fresh.panels();
    for (size_t i = 0; i < mine.size() && i < defaults.size(); ++i) *mine[i].visible = *defaults[i].visible;
}

bool Dashboard::set_solo(const std::string& title) {
    bool found = false;
    for (auto& p : panels()) {
        *p.visible = title == p.title;
        found |= *p.visible;
    }
    m_solo = found ? title : "";
    return found;
}

}  // namespace speculum::ui
