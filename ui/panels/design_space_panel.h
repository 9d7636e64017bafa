// Design-space panel: a heatmap of one metric over two configuration axes, filled by a sweep (streamed row by row);
// clicking a cell loads its configuration; a Pareto scatter of the metric against the draft work per pass. A source
// selector switches to an opened result store (design_space_store.h): measured/modeled rows of a CLI sweep.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"
#include "ui/panels/design_space_store.h"

namespace speculum::ui {

class DesignSpacePanel {
public:
    static constexpr const char* title = "Design space";
    // Draws from `snap` and pushes intents into `actions`; `fill` covers the whole display (screenshots).
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = true;

    enum class Source { modeled, store };  // the app's modeled sweep, or the opened result store
    Source source() const { return m_source; }
    void set_source(Source s) { m_source = s; }
    StoreDesignView& store_view() { return m_store; }

private:
    void draw_modeled(const UiSnapshot& snap, UiActions& actions);
    Source m_source = Source::modeled;
    std::weak_ptr<const StoreView> m_store_seen;  // a newly opened store switches the source to it once
    StoreDesignView m_store;
    SweepAxis m_x = SweepAxis::gamma, m_y = SweepAxis::alpha;  // the axes the next sweep uses
    SweepMetric m_metric = SweepMetric::speedup;
};

}  // namespace speculum::ui
