// Overview panel: build identity and a short orientation for a first-time user.
#include "ui/panels/overview_panel.h"

#include "ui/widgets.h"

#include <imgui.h>

namespace speculum::ui {

void OverviewPanel::draw(const UiSnapshot& snap, UiActions& actions, bool fill) {
    if (!begin_panel(title, &visible, ImVec2(0.3f, 0.25f), ImVec2(0.4f, 0.4f), fill)) return;
    ImGui::Text("Speculum %s", snap.build.version.c_str());
    ImGui::TextDisabled("Explore how to draft and verify for this model on that device.");
    ImGui::Separator();
    if (ImGui::BeginTable("build", 2, ImGuiTableFlags_SizingFixedFit)) {
        auto row = [](const char* key, const std::string& value) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(key);
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(value.c_str());
        };
        row("Build", snap.build.build_type + (snap.build.sanitized ? " (ASan+UBSan)" : ""));
        row("Compiler", snap.build.compiler);
        row("CPU", snap.build.cpu_features);
        for (const auto& [name, version] : snap.build.libraries) row(name.c_str(), version);
        ImGui::EndTable();
    }
    ImGui::Separator();
    if (!snap.status_line.empty()) text_wrapped("%s", snap.status_line.c_str());
    ImGui::End();
}

}  // namespace speculum::ui
