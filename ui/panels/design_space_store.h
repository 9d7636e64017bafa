// The Design space panel's view of a result store (the app's own sweep, streaming, or one opened from a file): axis
// pickers among the configuration fields that vary across the rows, a metric picker, a heatmap of the best (or
// mean) value per cell labelled measured/modeled (a click loads the cell's best row into the editor), and a Pareto
// scatter of speedup against the draft's cost (draft_bytes, else the draft work gamma x c). The selection is sent
// to the controller (ActionSelectDesignGrid) so the Export panel writes the heatmap shown.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/store_view.h"

#include <memory>
#include <optional>
#include <string>

namespace speculum::ui {

class StoreDesignView {
public:
    // Draws inside the already-begun panel window.
    void draw(const std::shared_ptr<const StoreView>& view, const AppConfig& current, UiActions& actions);
    // The grid currently shown (recomputed when the store or a picker changes); for tests and the screenshot.
    const StoreGrid& grid() const { return m_grid; }
    // The editor's cell in the grid shown (outlined), as of the last frame; for tests.
    std::optional<std::pair<size_t, size_t>> current_cell() const { return m_current_cell; }
    // Picks axes by pointer (false when the store has no such varying field); y = "" means a single row.
    bool set_axes(const std::shared_ptr<const StoreView>& view, const std::string& x, const std::string& y);
    void set_metric(const std::string& metric) { m_metric = metric, m_grid_valid = false; }
    void set_aggregate(CellAggregate a) { m_aggregate = a, m_grid_valid = false; }
    // The axes (by pointer), metric and aggregate shown.
    DesignSelection selection() const;

private:
    void sync(const std::shared_ptr<const StoreView>& view);  // defaults for a newly opened store; grid refresh
    void heatmap(const StoreView& view, const AppConfig& current, UiActions& actions, float height);
    void pareto(const StoreView& view, float height);

    std::weak_ptr<const StoreView> m_seen;  // the snapshot the grid was computed for
    std::string m_seen_path;                // the file the pickers were set up for (a streaming sweep keeps them)
    std::vector<std::string> m_axes_seen;   // the pointers of that snapshot's axes (m_x, m_y index them)
    int m_x = -1, m_y = -1;                 // indices into view.axes; m_y = -1: a single row
    std::string m_metric;
    CellAggregate m_aggregate = CellAggregate::best;
    StoreGrid m_grid;
    bool m_grid_valid = false;
    std::string m_speed_metric;          // Pareto y: measured "speedup" when any row has it, else "predicted_speedup"
    std::string m_cost_metric;           // Pareto x: "draft_bytes" when any row has it, else "draft_work"
    DesignSelection m_sent;              // the selection last sent to the controller
    std::optional<AppConfig> m_current;  // the editor's configuration m_current_cell is of
    std::optional<std::pair<size_t, size_t>> m_current_cell;       // its cell in m_grid (outlined)
    uint64_t m_grid_revision = 0, m_cell_revision = ~uint64_t(0);  // m_grid recomputed / m_current_cell computed for

    std::vector<size_t> m_front;  // Pareto-optimal rows (speedup up, draft_bytes down), by draft_bytes
};

}  // namespace speculum::ui
