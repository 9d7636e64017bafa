// Export panel: pick a format (manifest, llama.cpp / vLLM / SGLang snippets, JSON report, sweep CSV, SVG / PNG
// plots), preview it, copy it to the clipboard or save it. The panel only emits actions: the controller hashes the
// target (ActionHashModel, once per file) and writes the files (ActionSaveExport), both on jobs.
#pragma once

#include "ui/model/actions.h"
#include "ui/model/export_content.h"
#include "ui/model/snapshot.h"

#include <optional>
#include <string>

namespace speculum::ui {

class ExportPanel {
public:
    static constexpr const char* title = "Export";
    ExportPanel();

    // Draws from `snap` and pushes intents into `actions`; `fill` covers the whole display (screenshots).
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = false;

    // What the buttons do, callable without drawing (tests, scripts).
    void set_format(ExportFormat f) { m_format = f; }
    ExportFormat format() const { return m_format; }
    const ExportDocument& document() const { return m_doc; }   // as of the last draw()
    const std::string& model_sha256() const { return m_sha; }  // the snapshot's digest of the open model, if any
    // The action that saves the document as shown to `path` (the app sends it after its file dialog); the panel
    // suggests that path next time.
    ActionSaveExport save_action(const std::string& path);
    const char* suggested_path() const { return m_path; }

private:
    // What a document was built from: rebuilt only when one of these changes.
    struct Inputs {
        ExportFormat format = ExportFormat::manifest;
        AppConfig config;
        std::string model_path, sha;
        int64_t measured_tokens = -1;
        bool measured_complete  = false;
        std::string modeled_error;
        double modeled_ewif = 0;
        const void* store   = nullptr;  // the snapshot's store view (a new one per streamed update)
        DesignSelection selection;
        int profile_index                    = -1;
        bool operator==(const Inputs&) const = default;
    };
    void refresh(const UiSnapshot& snap);
    // The digest of the open model from the snapshot; asks the controller for it once per file.
    void follow_digest(const UiSnapshot& snap, UiActions& actions);

    ExportFormat m_format = ExportFormat::manifest;
    ExportDocument m_doc;
    std::optional<Inputs> m_built;
    char m_path[1024]          = {};
    ExportFormat m_path_format = ExportFormat::manifest;  // the format m_path's default name was chosen for
    double m_copied_at         = -1;                      // ImGui time of the last Copy (the "copied" feedback)

    std::string m_sha, m_hash_error;  // the open model's digest, or why hashing failed (from the snapshot)
    std::string m_requested;          // the file whose digest was asked for
};

}  // namespace speculum::ui
