// Run history panel: every finished measured run with its configuration and figures (median speedup and its
// interval, tokens/s, c, accepted length), newest first. Pin runs to keep them and compare them side by side: the
// pinned runs come first, with what their configurations differ in, their acceptance per position and speedup
// overlaid (two or more pinned), and each run's prompts (ui/model/run_compare: also the CSV the Export panel writes).
#pragma once

#include "ui/model/actions.h"
#include "ui/model/snapshot.h"

namespace speculum::ui {

class RunHistoryPanel {
public:
    static constexpr const char* title = "Run history";
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = false;  // View > Run history, or the Speedup panel's button
};

// What the configurations of the pinned runs differ in, as JSON pointers with each run's value ("/gamma/0: 3 | 5");
// empty with fewer than two pinned runs.
std::vector<std::string> pinned_differences(const std::vector<RunRecord>& history);

}  // namespace speculum::ui
