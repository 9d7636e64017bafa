// The immutable, value-type view of the application state that every panel draws from. The controller
// (ui/model/app_controller) builds a new one when something changes; panels never reach into core objects.
#pragma once

#include "core/hw/profile.h"
#include "core/sweep/tune.h"
#include "core/version.h"
#include "ui/model/app_config.h"
#include "ui/model/measured.h"
#include "ui/model/model_summary.h"
#include "ui/model/modeled.h"
#include "ui/model/store_view.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace speculum::ui {

struct JobView {
    uint64_t id = 0;
    std::string name;     // "Loading model tiny.gguf"
    double progress = 0;  // [0, 1]
    std::string what;     // current item, "layer 3/8"
};

enum class MessageLevel { info, error };
struct Message {
    MessageLevel level = MessageLevel::info;
    std::string text;
};

enum class ModelState { none, reading, loaded, failed };

// One finished measured run in the history (Run history panel): its configuration and figures, the token stream
// dropped. Pinned runs stay; of the others the latest kHistoryKept are kept.
struct RunRecord {
    int id = 0;        // 1, 2, ... in the order the runs finished
    std::string when;  // local time it finished, "HH:MM:SS"
    AppConfig config;
    MeasuredView view;
    bool pinned = false;
};
inline constexpr size_t kHistoryKept = 30;

// Level 1's cost per call when it is a draft head (an MTP layer, an EAGLE-3 head), modeled from its file: the
// head's weight bytes per pass over the target's (drafts::draft_bits; memory-bound), read on a worker after the
// head or the model changes. Level 1's assumed c follows it until the user moves c.
struct HeadCost {
    std::string key;    // the head and model it is for (AppController's head key)
    std::string what;   // "EAGLE-3 head x.gguf: 9.4 MB per pass, the target 73.4 MB"
    double c = 0;       // modeled
    std::string error;  // why the head could not be read ("" = c is set)
};

// The open model file's SHA-256, computed on a job when the Export panel asks (ActionHashModel).
struct ModelDigest {
    std::string path;    // the file it is for ("" = none yet)
    std::string sha256;  // lower-case hex; empty while hashing or after an error
    std::string error;   // why hashing failed
};

// The Tune panel's search: candidates as they are measured (the Pareto front fills while it runs), then the result.
struct TuneView {
    bool running = false;
    std::string phase;                             // the last measurement's phase ("probe", "rung 2 (4 prompts)")
    std::vector<sweep::TuneCandidate> candidates;  // measured so far, in order (running); the result's (done)
    std::optional<sweep::TuneResult> result;       // when the search finished
    std::string store_path;                        // where its measurements are kept (a re-run resumes)
    std::string error;                             // why it stopped
};

struct UiSnapshot {
    BuildInfo build;              // shown in the Overview panel and the About box
    std::string status_line;      // last message for the user (errors included)
    uint64_t frame_index = 0;     // frames rendered so far (debug overlay; idle checks)
    float dpi_scale      = 1.0f;  // device pixel ratio of the window

    AppConfig config;  // what the Configuration panel edits
    std::vector<std::string> config_problems;
    ModeledView modeled;  // predict() of `config`: updated in the same frame as an edit

    ModelState model_state = ModelState::none;
    std::optional<ModelSummary> model;          // as soon as the GGUF header is read
    std::optional<HeadCost> head_cost;          // level 1's modeled cost, when it is a draft head and a model is open
    std::vector<std::string> bundled_models;    // resources/models/*.gguf (full paths)
    std::vector<std::string> bundled_datasets;  // datasets/*.jsonl (full paths)
    std::optional<DatasetSummary> dataset;
    std::string task;  // chosen task of the dataset ("" = all)

    std::vector<hw::HardwareProfile> profiles;  // bundled hardware profiles, sorted by id
    int profile_index = -1;                     // index of config.hardware_profile in profiles, -1 = none

    std::vector<JobView> jobs;      // running background jobs
    std::vector<Message> messages;  // recent messages, newest last

    bool measuring_available = false;  // a measuring engine is wired into this build
    // The draft GGUF the app last wrote (Build draft GGUF): the export snippets point at it while level 1 is still the
    // draft it was built from.
    struct BuiltDraft {
        std::string path;
        drafts::DraftSpec spec;         // level 1 as the editor had it when it was built
        uint64_t file_bytes   = 0;      // the file written
        uint64_t target_bytes = 0;      // the target's file, for the c an engine reading it dense would see
        bool dense            = false;  // pruned or truncated weights stored at full size (GGUF has no compact form)
    };
    std::optional<BuiltDraft> built_draft;
    int64_t resident_bytes = -1;               // the process's resident memory after the last job landed (-1: unknown)
    std::optional<uint64_t> llc_bytes;         // this CPU's last-level cache (hw::last_level_cache_bytes)
    std::optional<MeasuredView> measured;      // the latest measured run (streaming while !complete)
    std::optional<AppConfig> measured_config;  // the configuration `measured` ran (may lag `config` after an edit)
    int measured_runs = 0;                     // measured runs completed since start
    std::vector<RunRecord> history;            // finished measured runs, oldest first (pinned ones kept)
    std::string measured_note;                 // why there is no measured run, or its state

    // The Design space panel's store: the app's latest sweep (streaming while it runs) or a store opened from a file
    // (read-only snapshot; error set if unreadable).
    std::shared_ptr<const StoreView> store;
    DesignSelection design_selection;      // the grid the panel shows (axes, metric, aggregate)
    std::shared_ptr<const TuneView> tune;  // the last tune search (streaming while it runs)

    ModelDigest model_digest;   // the open model's SHA-256, once asked for
    std::string export_status;  // after the last export save: "saved to PATH" or "not saved: why"
};

}  // namespace speculum::ui
