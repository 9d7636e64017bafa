// Tune panel: the tune search (core/sweep/tune, what `speculum-cli tune` runs) on the open model and dataset. The
// budget and whether to try drafts derived from the target; while it runs, the Pareto front of measured speedup
// against draft bytes fills; then the winner with its confirmed interval, where its speedup went, the headroom, and
// every configuration with "apply" to load it into the editor.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"

namespace speculum::ui {

class TunePanel {
public:
    static constexpr const char* title = "Tune";
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = false;  // View > Tune, or the Tune button of the Speedup and Design space panels

private:
    int m_minutes     = 5;
    int m_max_prompts = 8;
    bool m_self       = true;
};

}  // namespace speculum::ui
