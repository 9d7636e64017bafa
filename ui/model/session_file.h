// A session: what the app keeps between launches and what File > Save session writes. The configuration, the
// files that were open, the Design space panel's result store (the sweep's rows stay in that store; the session
// names it), and the run history with its pinned runs: each run's configuration and figures (RunStats, the A/B
// pairs, its run report), never its token stream. One JSON document, written whole or not at all (write_file_atomic)
// and read back strictly: a file that is not a session, is too large, or has a malformed field is refused with its
// path and the field, and nothing of the app's state changes.
#pragma once

#include "ui/model/snapshot.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace speculum::ui {

inline constexpr int kSessionVersion              = 1;
inline constexpr uint64_t kMaxSessionFileBytes    = 256ull << 20;  // 30 runs with their reports fit many times over
inline constexpr size_t kMaxSessionRuns           = 1000;
inline constexpr const char* kSessionFormatMarker = "speculum_session";

struct SessionState {
    AppConfig config;
    std::string model_path;    // the target that was open ("" = none)
    std::string dataset_path;  // the prompt suite ("" = none)
    std::string task;          // its chosen task ("" = every task)
    std::string results_path;  // the Design space panel's store: the last sweep's, or one opened ("" = none)
    std::vector<RunRecord> history;
    std::string saved_at;  // UTC ISO-8601 when written (informative)
};

// A finished run's figures as JSON and back (the session's "history" entries; run_figures_from_json for the stats).
nlohmann::json measured_view_json(const MeasuredView& v);
MeasuredView measured_view_from_json(const nlohmann::json& j, const std::string& where);

nlohmann::json session_json(const SessionState& s);
// Throws std::invalid_argument "SOURCE: PATH: why" for a document that is not a session of this version or a field
// that does not read; the configuration is validated.
SessionState session_from_json(const nlohmann::json& j, const std::string& source);

// Writes `s` to `path` whole or not at all (the old file stays on failure); throws std::runtime_error "PATH: why".
void save_session_file(const std::string& path, const SessionState& s);
// Reads a session file (at most kMaxSessionFileBytes); throws with the path and the reason.
SessionState load_session_file(const std::string& path);

}  // namespace speculum::ui
