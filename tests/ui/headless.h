// Headless Dear ImGui for panel tests: a context with a built font atlas and a display size, no GL.
// Draw a panel between begin_frame() and end_frame(); inspect the draw data or the emitted actions.
#pragma once

#include <imgui.h>
#include <imgui_internal.h>

namespace speculum::test {

class HeadlessImGui {
public:
    HeadlessImGui() {
        m_ctx = ImGui::CreateContext();
        ImGui::SetCurrentContext(m_ctx);
        ImGuiIO& io           = ImGui::GetIO();
        io.IniFilename        = nullptr;
        io.DisplaySize        = ImVec2(1280, 800);
        io.DeltaTime          = 1.0f / 60.0f;
        unsigned char* pixels = nullptr;
        int w = 0, h = 0;
        io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);  // builds the atlas; no texture upload without GL
    }
    ~HeadlessImGui() { ImGui::DestroyContext(m_ctx); }
    HeadlessImGui(const HeadlessImGui&)            = delete;
    HeadlessImGui& operator=(const HeadlessImGui&) = delete;

    void begin_frame() { ImGui::NewFrame(); }
    ImDrawData* end_frame() {
        ImGui::Render();
        return ImGui::GetDrawData();
    }
    // Moves the mouse to (x, y) with the left button in `down`, for scripted clicks over several frames.
    void mouse(float x, float y, bool down) {
        ImGuiIO& io     = ImGui::GetIO();
        io.MousePos     = ImVec2(x, y);
        io.MouseDown[0] = down;
    }

    // Finds a point over the item `id` by sweeping the mouse over `area` (one probe per frame, drawing with
    // `draw_frame`), the way a user would hover. Returns false when the item is never hovered.
    template <class DrawFn>
    bool find_item(ImGuiID id, ImRect area, DrawFn draw_frame, ImVec2* at, float step = 4.0f) {
        for (float y = area.Min.y + 1; y < area.Max.y; y += step) {
            for (float x = area.Min.x + 8; x < area.Max.x; x += 40.0f) {
                mouse(x, y, false);
                begin_frame();
                draw_frame();
                end_frame();
                if (ImGui::GetCurrentContext()->HoveredId == id) {
                    *at = ImVec2(x, y);
                    return true;
                }
            }
        }
        return false;
    }

    // Presses and releases the left button at `at` over two frames (ImGui buttons fire on release).
    template <class DrawFn>
    void click(ImVec2 at, DrawFn draw_frame) {
        for (bool down : {true, false}) {
            mouse(at.x, at.y, down);
            begin_frame();
            draw_frame();
            end_frame();
        }
    }

private:
    ImGuiContext* m_ctx = nullptr;
};

}  // namespace speculum::test
