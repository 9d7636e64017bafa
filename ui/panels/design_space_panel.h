// Design-space panel: a sweep over two of the editor's axes (ui/model/app_sweep: modeled cells, or measured ones on
// the open model) run by core/sweep into a result store, and that store (or one opened from a file) drawn by
// StoreDesignView: one heatmap (a click loads the cell's configuration) and one Pareto front, streamed as cells
// finish.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"
#include "ui/panels/design_space_store.h"

#include <string>

namespace speculum::ui {

class DesignSpacePanel {
public:
    static constexpr const char* title = "Design space";
    // Draws from `snap` and pushes intents into `actions`; `fill` covers the whole display (screenshots).
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = true;

    StoreDesignView& store_view() { return m_store; }

private:
    void draw_sweep_controls(const UiSnapshot& snap, UiActions& actions);
    StoreDesignView m_store;
    std::string m_x = "gamma", m_y = "alpha";  // the axes the next sweep uses (app_sweep_axes keys)
    bool m_measure = false;                    // measure every cell (forced by pruning and truncation)
};

}  // namespace speculum::ui
