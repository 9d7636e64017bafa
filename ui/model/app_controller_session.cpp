// AppController: sessions (the run history, pinned runs and the Design space store across launches; File > Save
// and Open session). The file format is ui/model/session_file.
#include "ui/model/app_controller.h"

#include <algorithm>
#include <filesystem>

namespace speculum::ui {

SessionState AppController::session() const {
    SessionState s;
    s.config       = m_snap.config;
    s.model_path   = m_snap.model && m_model ? m_snap.model->path : std::string();
    s.dataset_path = m_snap.dataset ? m_snap.dataset->path : std::string();
    s.task         = m_snap.task;
    if (m_snap.store && m_snap.store->error.empty()) s.results_path = m_snap.store->path;
    s.history = m_snap.history;
    return s;
}

void AppController::restore_session(const SessionState& s, bool whole) {
    std::vector<std::string> missing;
    auto there = [&](const std::string& path) {
        std::error_code ec;
        if (path.empty()) return false;
        if (std::filesystem::is_regular_file(path, ec)) return true;
        missing.push_back(path);
        return false;
    };
    // The restored runs come first; runs measured since keep their place after them, numbered on.
    std::vector<RunRecord> history = s.history;
    int next_id                    = history.empty() ? 0 : history.back().id;
    for (RunRecord r : m_snap.history) {
        r.id = ++next_id;
        history.push_back(std::move(r));
    }
    m_snap.history = std::move(history);
    trim_history();
    const bool results = there(s.results_path);
    if (results) open_results(s.results_path);
    if (whole) {
        set_config(s.config);
        if (there(s.model_path) && !(m_snap.model && m_snap.model->path == s.model_path)) open_model(s.model_path);
        if (there(s.dataset_path)) open_dataset(s.dataset_path, s.task);
    }
    const size_t pinned = size_t(std::count_if(s.history.begin(), s.history.end(), [](auto& r) { return r.pinned; }));
    std::string text    = "Session restored: " + std::to_string(s.history.size()) + " runs in the history (" +
                       std::to_string(pinned) + " pinned)";
    if (results) text += ", and the sweep results " + std::filesystem::path(s.results_path).filename().string();
    if (!missing.empty()) {
        text += "; not found, so not opened: ";
        for (size_t i = 0; i < missing.size(); ++i) text += (i ? ", " : "") + missing[i];
    }
    message(missing.empty() ? MessageLevel::info : MessageLevel::error, text);
    changed();
}

}  // namespace speculum::ui
