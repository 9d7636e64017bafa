// Small drawing helpers shared by the panels: empty states, "modeled"/"measured" tags, colours for draft levels
// and token origins, default window placement, and a value-to-colour map for heatmaps.
#pragma once

#include "ui/model/measured.h"
#include "ui/model/snapshot.h"

#include <imgui.h>

#include <map>
#include <string>

namespace speculum::ui {

// The layout is proportional to the display: each panel's place is remembered as a fraction of the display, and
// when the display (the main window) changes size every panel is put back at the same fractions, so shrinking and
// re-growing the window never leaves panels overlapping. Call once per frame before the panels.
void layout_new_frame();
// The next frames place every panel at its default fractions again (View > Reset layout).
void reset_layout();
// Places the next window at a fraction of the display: its default the first time it appears (the user's layout
// wins later), its remembered fractions after a resize, or over the whole display when `fill` is set (single-panel
// screenshots).
void place_window(const char* title, ImVec2 frac_pos, ImVec2 frac_size, bool fill);
// Begins a panel window: the Begin/End pairing every panel starts with. Returns false when collapsed/hidden.
bool begin_panel(const char* title, bool* visible, ImVec2 frac_pos, ImVec2 frac_size, bool fill);

void empty_state(const char* text);  // greyed, wrapped explanation of why a panel has nothing to show
void modeled_tag();                  // small "modeled" badge on the current line
void measured_tag();                 // small "measured" badge on the current line
void help_marker(const char* text);  // "(?)" with a tooltip
// Wrapped text, broken only at spaces: ImGui's own wrap also breaks after a period, which splits a number ("3." on
// one line, "75" on the next). A word wider than the line keeps ImGui's break. Every panel wraps with these.
void text_wrapped(const char* fmt, ...) IM_FMTARGS(1);
void text_wrapped_v(const char* fmt, va_list args) IM_FMTLIST(1);
// `text` with a line break in place of the space before each word that would end past `width` pixels.
std::string wrap_at_spaces(const std::string& text, float width);
void warning_wrapped(const char* fmt, ...) IM_FMTARGS(1);        // amber, wrapped: a figure to distrust, and why
void text_disabled_wrapped(const char* fmt, ...) IM_FMTARGS(1);  // greyed and wrapped: a secondary note
void text_colored_wrapped(ImVec4 color, const char* fmt, ...) IM_FMTARGS(2);  // coloured and wrapped (errors)
// SameLine() when an item `width` pixels wide still fits on the current line, else stays on a new line: for rows of
// buttons and legends that would otherwise run past the panel's edge. `width` of a button: button_width(label).
void same_line_if_fits(float width);
float button_width(const char* label);
float text_width(const char* text);
// One line that never runs past the panel's edge: when it is wider than the space left, it is cut with "..." and
// the whole text is shown in a tooltip on hover (captions, headers, labels that must stay on one line).
void text_fit(const char* fmt, ...) IM_FMTARGS(1);
void text_fit_disabled(const char* fmt, ...) IM_FMTARGS(1);  // the same, greyed
// The longest prefix of `text` (cut at a UTF-8 character boundary) that, followed by "...", is at most `width`
// pixels wide in the current font; the whole text when it fits.
std::string fit_text(const std::string& text, float width);
// One dim line about the measured run: which prompt streams, or that it ran an earlier configuration.
void measured_status(const UiSnapshot& snap);

// Where chosen widgets were last drawn (display pixels), for GUI tests that drive the real window with real mouse
// input (tests/gui/run_gui_input.sh, through the app's --log-events). Recording is off unless enabled; a panel
// calls probe_item right after the widget.
struct ProbedItem {
    float x = 0, y = 0, w = 0, h = 0;
    bool operator==(const ProbedItem&) const = default;
};
void probe_enable(bool on);
void probe_item(const char* name);
void probe_slider(const char* name);  // the slider's frame only (its label, drawn right of it, left out)
void probe_window(const char* name);  // the current window (between Begin and End)
const std::map<std::string, ProbedItem>& probed_items();

ImU32 level_color(int level, float alpha = 1.0f);  // 0 = target, 1.. = draft levels
ImU32 origin_color(TokenOrigin origin);
ImU32 heat_color(double t);  // t in [0, 1] → dark blue … yellow

}  // namespace speculum::ui
