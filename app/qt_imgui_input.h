// The Qt -> Dear ImGui platform layer: every write to ImGuiIO from Qt input lives in this one file pair.
// Dear ImGui 1.86 predates the 1.87 event API, so input goes through io.KeyMap/KeysDown/MouseDown; moving to
// io.AddKeyEvent later is a change to this file only.
#pragma once

#include <imgui.h>

#include <Qt>

class QEvent;
class QWidget;

namespace speculum::app {

// Fills io.KeyMap with the KeysDown[] slots that qt_key_slot() assigns. Call once per ImGui context.
void imgui_input_init(ImGuiIO& io);

// Index into io.KeysDown[512] for a Qt::Key, or -1 for keys ImGui does not use.
int qt_key_slot(int qt_key);

// Feeds one Qt event into ImGui. Returns true when the event was input ImGui should see (the caller then
// schedules a redraw). `widget` gives coordinates and the device pixel ratio.
bool feed_qt_event(QEvent* event, ImGuiIO& io, QWidget* widget);

// Per frame: display size in logical pixels, framebuffer scale for HiDPI, and the frame's delta time.
void feed_frame(ImGuiIO& io, QWidget* widget, double delta_seconds);

// The Qt cursor for ImGui's requested cursor (resize arrows, text beam, hand).
Qt::CursorShape qt_cursor_for(ImGuiMouseCursor cursor);

}  // namespace speculum::app
