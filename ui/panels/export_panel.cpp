// Export panel: format picker, notes, preview, copy and save (see export_panel.h).
#include "ui/panels/export_panel.h"

#include "ui/plot_font.h"
#include "ui/widgets.h"

#include <imgui.h>

#include <algorithm>
#include <cstring>

namespace speculum::ui {

ExportPanel::ExportPanel() {
    std::strncpy(m_path, export_default_file(m_format), sizeof m_path - 1);
}

ActionSaveExport ExportPanel::save_action(const std::string& path) {
    std::strncpy(m_path, path.c_str(), sizeof m_path - 1);  // suggested next time
    m_path[sizeof m_path - 1] = 0;
    return {path, m_doc.text, export_format_binary(m_format) ? m_doc.bytes : std::vector<uint8_t>{}};
}

void ExportPanel::follow_digest(const UiSnapshot& snap, UiActions& actions) {
    const std::string path = snap.model ? snap.model->path : "";
    const bool ours        = !path.empty() && snap.model_digest.path == path;
    m_sha                  = ours ? snap.model_digest.sha256 : "";
    m_hash_error           = ours ? snap.model_digest.error : "";
    if (!path.empty() && !ours && m_requested != path) {  // ask the controller once per file
        actions.push(ActionHashModel{path});
        m_requested = path;
    }
}

void ExportPanel::refresh(const UiSnapshot& snap) {
    Inputs in;
    in.format            = m_format;
    in.config            = snap.config;
    in.model_path        = snap.model ? snap.model->path : "";
    in.sha               = m_sha;
    in.measured_tokens   = snap.measured ? snap.measured->n_generated : -1;
    in.measured_complete = snap.measured && snap.measured->complete;
    in.modeled_error     = snap.modeled.error;
    in.modeled_ewif      = snap.modeled.output.ewif;
    in.store             = snap.store.get();
    in.selection         = snap.design_selection;
    in.profile_index     = snap.profile_index;
    if (m_built && *m_built == in) return;
    m_doc   = make_export(m_format, snap, m_sha, &plot_glyphs());
    m_built = in;
}

void ExportPanel::draw(const UiSnapshot& snap, UiActions& actions, bool fill) {
    ImGui::SetNextWindowBgAlpha(1.0f);  // it floats over the other panels: opaque, so its text stays readable
    if (!begin_panel(title, &visible, ImVec2(0.5f, 0.2f), ImVec2(0.3f, 0.6f), fill)) return;
    probe_window("export_window");
    follow_digest(snap, actions);

    float widest = 0;  // the combo as wide as its longest choice, so the button beside it fits
    for (ExportFormat f : kExportFormats) widest = std::max(widest, text_width(export_format_name(f)));
    ImGui::SetNextItemWidth(std::min(widest + ImGui::GetFrameHeight() + 2 * ImGui::GetStyle().FramePadding.x,
                                     0.6f * ImGui::GetContentRegionAvail().x));
    const bool open = ImGui::BeginCombo("format", export_format_name(m_format));
    if (!open) probe_item("export_format");
    if (open) {
        for (ExportFormat f : kExportFormats) {
            if (ImGui::Selectable(export_format_name(f), f == m_format)) m_format = f;
            std::string probe = "format_";  // format_speculum-llama-cpp.sh, ... (the GUI test picks one)
            probe += export_default_file(f);
            probe_item(probe.c_str());
        }
        ImGui::EndCombo();
    }
    same_line_if_fits(button_width("Build draft GGUF..."));
    if (!snap.model) ImGui::BeginDisabled();
    if (ImGui::Button("Build draft GGUF...")) actions.push(ActionSaveDraftDialog{});
    probe_item("build_draft");
    if (!snap.model) ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
        ImGui::SetTooltip(
            "Level 1 of the configuration as a standalone GGUF llama.cpp loads with -md, built from the open model\n"
            "on a worker (progress in the status bar). Same as speculum-cli export --format draft-gguf.");
    if (m_path_format != m_format) {  // a new format suggests its own file name
        std::strncpy(m_path, export_default_file(m_format), sizeof m_path - 1);
        m_path_format = m_format;
    }
    refresh(snap);

    if (snap.model) {
        text_wrapped("target: %s", snap.model->path.c_str());
        if (!m_sha.empty())
            text_disabled_wrapped("sha256 %s", m_sha.c_str());
        else if (!m_hash_error.empty())
            text_colored_wrapped(ImVec4(1, 0.4f, 0.4f, 1), "sha256 not computed: %s", m_hash_error.c_str());
        else {
            double progress = 0;  // the controller's hashing job, as the Jobs panel shows it
            for (const JobView& j : snap.jobs)
                if (j.name.rfind("Hashing ", 0) == 0) progress = j.progress;
            text_disabled_wrapped("sha256: hashing %.0f%% (the manifest records it when done)", progress * 100);
        }
    }

    const bool ok     = m_doc.error.empty();
    const bool binary = export_format_binary(m_format);
    if (!ok || binary) ImGui::BeginDisabled();
    if (ImGui::Button("Copy")) {
        ImGui::SetClipboardText(m_doc.text.c_str());
        actions.push(ActionShowMessage{std::string(export_format_name(m_format)) + " copied to the clipboard"});
        m_copied_at = ImGui::GetTime();
    }
    if (!ok || binary) ImGui::EndDisabled();
    if (m_copied_at >= 0 && ImGui::GetTime() - m_copied_at < 2.0) {  // feedback where the user looks
        same_line_if_fits(text_width("copied"));
        ImGui::TextColored(ImVec4(0.45f, 0.9f, 0.5f, 1.0f), "copied");
    }
    same_line_if_fits(button_width("Save..."));
    if (!ok) ImGui::BeginDisabled();
    if (ImGui::Button("Save...")) actions.push(ActionSaveExportDialog{m_path});  // the app asks where
    probe_item("export_save");
    if (!ok) ImGui::EndDisabled();
    if (!snap.export_status.empty()) {
        ImGui::SameLine();
        text_disabled_wrapped("%s", snap.export_status.c_str());
    }

    if (!ok) {
        empty_state(m_doc.error.c_str());
        ImGui::End();
        return;
    }
    for (const auto& n : m_doc.notes) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(0.95f, 0.75f, 0.35f, 1));
        text_wrapped("%s", n.c_str());
        ImGui::PopStyleColor();
    }
    // Read-only multiline text: selectable, scrollable; ImGui needs a mutable buffer, but ReadOnly never writes.
    ImGui::InputTextMultiline("##preview", const_cast<char*>(m_doc.text.c_str()), m_doc.text.size() + 1, ImVec2(-1, -1),
                              ImGuiInputTextFlags_ReadOnly);
    ImGui::End();
}

}  // namespace speculum::ui
