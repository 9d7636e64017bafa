// Intents that panels emit. The app drains them after ImGui::Render(): the controller (ui/model/app_controller) handles
// the Qt-free ones and the main window the rest (file dialogs, quit). Panels never mutate core or app state.
#pragma once

#include "ui/model/app_config.h"
#include "ui/model/store_view.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace speculum::ui {

struct ActionShowMessage {
    std::string text;  // goes to the status bar
};
struct ActionQuit {};
struct ActionOpenModelDialog {};    // the app shows a file dialog, then sends ActionOpenModel
struct ActionOpenDatasetDialog {};  // the app shows a file dialog, then sends ActionOpenDataset
struct ActionOpenModel {
    std::string path;  // GGUF file
};
// A random-weight model of a 2026 shape (a mixture of experts: "qwen3moe" or "gpt-oss"), built, written beside the
// other temporary files with the bundled target's tokenizer, and opened: MoE costs explored with no model file.
struct ActionOpenSyntheticModel {
    std::string arch;
};
struct ActionOpenDataset {
    std::string path;  // JSONL prompt suite
};
struct ActionSelectTask {
    std::string task;  // "" = every task
};
struct ActionSetConfig {
    AppConfig config;  // the whole new configuration (panels edit a copy of the snapshot's)
};
struct ActionCancelJob {
    uint64_t id = 0;
};
struct ActionRunSweep {  // a design-space sweep over two axes (ui/model/app_sweep: keys or pointers)
    std::string x = "gamma", y = "alpha";
    bool measure = false;  // measured cells (forced by an axis that needs measurement)
};
struct ActionShowPanel {  // the app shows (and raises) the panel with this title (View menu's entry)
    std::string title;
};
struct ActionRunTune {        // the tune search (core/sweep/tune) on the open model and dataset
    double budget_s  = 300;   // wall time of the search
    bool self_drafts = true;  // also drafts derived from the target's weights
    int max_prompts  = 8;     // prompts at the last rung and for the confirmation
};
// The file fields a Browse button fills. The app shows an open-file dialog for the field (its own title and
// filter), then sends ActionFilePicked with the chosen path; nothing happens when the dialog is cancelled.
enum class FileField { draft_model, eagle3_head, mtp_module, block_draft, acceptance_profile, head_corpus };
struct ActionBrowseFile {
    FileField field = FileField::draft_model;
    int level       = 0;  // the draft level whose file it is (model files)
    std::string current;  // where the dialog starts (the field's file), "" = the last folder
};
struct ActionFilePicked {
    FileField field = FileField::draft_model;
    int level       = 0;
    std::string path;
};
struct ActionSelectDesignGrid {  // the Design space panel shows this grid (the Export panel writes it)
    DesignSelection selection;
};
struct ActionRunMeasured {};        // re-run the measured decode now (no debounce)
struct ActionOpenResultsDialog {};  // the app shows a file dialog, then sends ActionOpenResults
struct ActionOpenResults {
    std::string path;  // a sweep result store (speculum-cli sweep --db), opened read-only
};
struct ActionLoadResultConfig {
    nlohmann::json config;  // a stored row's configuration; mapped onto the editor (ui/result_config)
    std::string label;      // which row, for the message ("gamma/0 = 4, /dataset = ...")
};
struct ActionClearMessages {};
struct ActionPinRun {  // keep a run in the history (and compare it with the other pinned ones), or release it
    int id      = 0;
    bool pinned = true;
};
struct ActionClearHistory {};     // drops the runs that are not pinned
struct ActionMeasureMachine {};   // microbenchmarks -> the "This machine" profile, cached and chosen
struct ActionSaveDraftDialog {};  // the app asks where, then calls AppController::export_draft
struct ActionSaveExportDialog {   // the app asks where (starting from `suggested`), then sends ActionSaveExport with
                                  // the Export panel's document
    std::string suggested;
};

// The Export panel needs the open model's SHA-256 (its manifest records it): the controller hashes the file on a job
// (progress and cancel in the Jobs panel) and puts the digest in the snapshot (UiSnapshot::model_digest).
struct ActionHashModel {
    std::string path;
};
// Writes an export document to `path` on a job (a temporary file, then a rename); the outcome goes to the status bar
// and UiSnapshot::export_status.
struct ActionSaveExport {
    std::string path;
    std::string text;            // text formats
    std::vector<uint8_t> bytes;  // PNG: written instead of `text` when not empty
};
using Action =
    std::variant<ActionShowMessage, ActionQuit, ActionOpenModelDialog, ActionOpenDatasetDialog, ActionOpenModel,
                 ActionOpenDataset, ActionSelectTask, ActionSetConfig, ActionCancelJob, ActionRunSweep,
                 ActionSelectDesignGrid, ActionRunMeasured, ActionClearMessages, ActionOpenResultsDialog,
                 ActionOpenResults, ActionLoadResultConfig, ActionPinRun, ActionClearHistory, ActionMeasureMachine,
                 ActionSaveDraftDialog, ActionSaveExportDialog, ActionOpenSyntheticModel, ActionHashModel,
                 ActionSaveExport, ActionRunTune, ActionShowPanel, ActionBrowseFile, ActionFilePicked>;

// The per-frame outbox. Panels push; the app pops everything once per frame.
struct UiActions {
    std::vector<Action> queue;
    void push(Action a) { queue.push_back(std::move(a)); }
};

}  // namespace speculum::ui
