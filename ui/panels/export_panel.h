// Export panel: pick a format (manifest, llama.cpp / vLLM / SGLang snippets, JSON report, sweep CSV, SVG / PNG
// plots), preview it, copy it to the clipboard or save it. The target's SHA-256 is computed off the GUI thread.
#pragma once

#include "core/cancel.h"
#include "ui/model/actions.h"
#include "ui/model/export_content.h"
#include "ui/model/snapshot.h"

#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <string>

namespace speculum::ui {

class ExportPanel {
public:
    static constexpr const char* title = "Export";
    ExportPanel();
    ~ExportPanel();  // cancels a running hash and waits for it
    ExportPanel(const ExportPanel&)            = delete;
    ExportPanel& operator=(const ExportPanel&) = delete;

    // Draws from `snap` and pushes intents into `actions`; `fill` covers the whole display (screenshots).
    void draw(const UiSnapshot& snap, UiActions& actions, bool fill = false);
    bool visible = false;

    // What the buttons do, callable without drawing (tests, scripts).
    void set_format(ExportFormat f) { m_format = f; }
    ExportFormat format() const { return m_format; }
    const ExportDocument& document() const { return m_doc; }  // as of the last draw()
    const std::string& model_sha256() const { return m_sha; }
    std::string save(const std::string& path) const;  // "" on success, else why not
    // save(), and the panel then shows where it went (or why not) and suggests that path next time.
    std::string save_as(const std::string& path);
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
        double modeled_ewif                  = 0;
        int sweep_rows                       = -1;
        int profile_index                    = -1;
        bool operator==(const Inputs&) const = default;
    };
    void refresh(const UiSnapshot& snap);
    void hash_model(const UiSnapshot& snap);

    ExportFormat m_format = ExportFormat::manifest;
    ExportDocument m_doc;
    std::optional<Inputs> m_built;
    char m_path[1024]          = {};
    ExportFormat m_path_format = ExportFormat::manifest;  // the format m_path's default name was chosen for
    double m_copied_at         = -1;                      // ImGui time of the last Copy (the "copied" feedback)
    std::string m_saved;                                  // "saved to PATH" / "not saved: why", after a Save

    std::string m_sha_path, m_sha, m_hash_error;  // the file hashed, its digest, or why hashing failed
    std::future<std::string> m_hash;
    CancelToken m_hash_cancel;
    std::shared_ptr<std::atomic<double>> m_hash_progress = std::make_shared<std::atomic<double>>(0.0);
};

}  // namespace speculum::ui
