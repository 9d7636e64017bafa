// Design-space panel: a heatmap of one metric over two configuration axes, filled by a sweep (streamed row by row);
// clicking a cell loads its configuration; a Pareto scatter of the metric against the draft work per pass.
#pragma once

#include "ui/actions.h"
#include "ui/snapshot.h"

namespace speculum::ui {

class DesignSpacePanel {
public:
    static constexpr const char* title = "Design space";
    // Draws from `snap` and pushes intents into `actions`; `fill` covers the whole display (screenshots).
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = true;

private:
    SweepAxis m_x = SweepAxis::gamma, m_y = SweepAxis::alpha;  // the axes the next sweep uses
    SweepMetric m_metric = SweepMetric::speedup;
};

}  // namespace speculum::ui
