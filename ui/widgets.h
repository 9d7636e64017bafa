// Small drawing helpers shared by the panels: empty states, "modeled"/"measured" tags, colours for draft levels
// and token origins, default window placement, and a value-to-colour map for heatmaps.
#pragma once

#include "ui/model/measured.h"
#include "ui/model/snapshot.h"

#include <imgui.h>

namespace speculum::ui {

// Places the next window at a fraction of the display the first time it appears (the user's layout wins later),
// or over the whole display when `fill` is set (single-panel screenshots).
void place_window(ImVec2 frac_pos, ImVec2 frac_size, bool fill);
// Begins a panel window: the Begin/End pairing every panel starts with. Returns false when collapsed/hidden.
bool begin_panel(const char* title, bool* visible, ImVec2 frac_pos, ImVec2 frac_size, bool fill);

void empty_state(const char* text);  // greyed, wrapped explanation of why a panel has nothing to show
void modeled_tag();                  // small "modeled" badge on the current line
void measured_tag();                 // small "measured" badge on the current line
void help_marker(const char* text);  // "(?)" with a tooltip
// One dim line about the measured run: which prompt streams, or that it ran an earlier configuration.
void measured_status(const UiSnapshot& snap);

ImU32 level_color(int level, float alpha = 1.0f);  // 0 = target, 1.. = draft levels
ImU32 origin_color(TokenOrigin origin);
ImU32 heat_color(double t);  // t in [0, 1] → dark blue … yellow

}  // namespace speculum::ui
