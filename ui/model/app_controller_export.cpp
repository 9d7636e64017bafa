// What the controller exports: the Export panel's documents and the model digest its manifest records, and the
// draft GGUF. Each writes or reads files on a job, never on the GUI thread.
#include "ui/model/app_controller.h"

#include "core/export/draft_export.h"
#include "core/export/plot_raster.h"
#include "core/export/sha256.h"
#include "ui/model/spec_mapping.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace speculum::ui {

namespace fs = std::filesystem;

void AppController::hash_model(const std::string& path) {
    // Once per file: a digest (or its error) already there, or a hash of it already running, is kept.
    const bool running =
        std::any_of(m_job_info.begin(), m_job_info.end(), [](const auto& j) { return j.second.slot == "hash"; });
    if (path.empty() || m_snap.model_digest.path == path || (running && m_hashing == path)) return;
    m_hashing = path;
    submit("hash", "Hashing " + fs::path(path).filename().string(), [this, path](jobs::JobContext& ctx) -> Apply {
        ModelDigest d{path, "", ""};
        try {
            d.sha256 = exporting::sha256_file(path, ctx.token(), ctx.progress_fn());
        } catch (const std::exception& e) {
            if (ctx.token().cancelled()) throw;  // superseded or cancelled: nothing to record
            d.error = e.what();
        }
        return [this, d] {
            m_hashing.clear();
            m_snap.model_digest = d;
            if (!d.error.empty()) message(MessageLevel::error, "Hashing the model failed: " + d.error);
            changed();
        };
    });
}

void AppController::save_export(const ActionSaveExport& a) {
    submit("export_save", "Saving " + fs::path(a.path).filename().string(), [this, a](jobs::JobContext&) -> Apply {
        std::string error;
        try {
            if (a.path.empty()) throw std::invalid_argument("no file name");
            if (!a.bytes.empty())
                exporting::write_file(a.path, a.bytes);
            else
                exporting::write_file(a.path, a.text);
        } catch (const std::exception& e) {
            error = e.what();
        }
        return [this, path = a.path, error] {
            m_snap.export_status = error.empty() ? "saved to " + path : "not saved: " + error;
            message(error.empty() ? MessageLevel::info : MessageLevel::error,
                    error.empty() ? "Exported to " + path : "Export not saved: " + error);
            changed();
        };
    });
}

void AppController::export_draft(const std::string& path) {
    if (!m_model) {
        message(MessageLevel::error, "Export draft: open a model first (Model and data)");
        return;
    }
    drafts::DraftSpec spec;
    try {
        spec = spec_config_from_app(m_snap.config, {m_snap.dataset ? m_snap.dataset->path : "", m_snap.task, {}})
                   .levels.at(0);
    } catch (const std::exception& e) {
        message(MessageLevel::error, std::string("Export draft: ") + e.what());
        return;
    }
    submit("export", "Writing the draft GGUF " + fs::path(path).filename().string(),
           [this, path, spec, model = m_model](jobs::JobContext& ctx) -> Apply {
               exporting::DraftExportOptions eo;
               eo.drafter.progress                  = ctx.progress_fn();
               eo.drafter.cancel                    = ctx.token();
               const exporting::DraftExportResult r = exporting::export_draft_gguf(*model, spec, path, eo);
               return [this, r,
                       built = UiSnapshot::BuiltDraft{path, m_snap.config.draft(), 0,
                                                      m_snap.model ? m_snap.model->file_bytes : 0,
                                                      exporting::stored_dense(spec)}]() mutable {
                   built.path = r.path, built.file_bytes = r.file_bytes;
                   m_snap.built_draft = built;
                   char text[512];
                   std::snprintf(
                       text, sizeof text, "Wrote the draft (%s) to %s: %d layers, %.1f MiB%s%s", r.description.c_str(),
                       r.path.c_str(), r.n_layer, double(r.file_bytes) / (1 << 20),
                       r.dropped.empty() ? "" : "; not carried: ", r.dropped.empty() ? "" : r.dropped.front().c_str());
                   message(MessageLevel::info, text);
                   if (built.dense && built.target_bytes > 0)
                       message(MessageLevel::info,
                               exporting::dense_draft_warning(built.file_bytes, built.target_bytes));
               };
           });
}

}  // namespace speculum::ui
