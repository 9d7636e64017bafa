// The Qt main window: menus, file dialogs, the status bar with job progress and a cancel button, persisted
// settings (geometry, visible panels, ImGui layout, the configuration, last model and dataset paths), the session
// kept between launches (run history, pinned runs, sweep store: session.json beside the settings), and the ImGui
// host as the central widget. It wires the real speculative engine into the controller as its measurer.
#pragma once

#include "ui/model/app_controller.h"

#include <QMainWindow>

#include <memory>
#include <optional>

class QLabel;
class QSettings;
class QProgressBar;
class QTimer;
class QToolButton;

namespace speculum::app {

class ImGuiHostWidget;

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    // `use_settings` = false for scripted runs (screenshots): neither read nor write the user's QSettings.
    // `settings_file` non-empty: keep the settings in this INI file instead of the user's.
    explicit MainWindow(bool use_settings = true, const QString& settings_file = {});
    ImGuiHostWidget* host() const { return m_host; }
    ui::AppController& controller() { return m_controller; }
    // Opens a session file whole (File > Open session, --session) and returns what it held; nullopt, with a
    // message, when it does not read.
    std::optional<ui::SessionState> open_session(const QString& path);
    // The files the last session had open (from the settings; empty without them or when none was open).
    const QString& last_model() const { return m_last_model; }
    const QString& last_dataset() const { return m_last_dataset; }

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void build_menus();
    void build_status_bar();
    void show_status(const QString& text, int timeout_ms);  // elided to the bar's free room, whole in the tooltip
    void show_about();
    void open_model_dialog();
    void show_first_steps();    // Help: the guide in resources/help/first_steps.md
    void open_documentation();  // Help: docs/app.md of the source tree, in the desktop's viewer
    // After a frame: schedules save_settings when the configuration, the open files or the session changed.
    void save_when_changed();
    // The configuration, open files, run history (ids and pins) and sweep store as text: what a change is compared on.
    std::string saved_state() const;
    QString session_file() const;  // the session kept between launches: session.json beside the settings
    void restore_session();        // at launch: the last session's history and sweep store
    void save_session_dialog();    // File > Save session...
    void open_session_dialog();    // File > Open session...
    void browse_file_dialog(const ui::ActionBrowseFile& b);  // a Browse button's open-file dialog
    void open_dataset_dialog();
    void open_results_dialog();
    void save_export_dialog(const std::string& suggested);  // then the Export panel saves there
    void save_draft_dialog();                               // then the controller writes the draft GGUF
    void on_shell_actions(const std::vector<ui::Action>& actions);
    void after_frame();  // status bar and the progress timer follow the controller's jobs
    void restore_settings();
    void save_settings();
    std::unique_ptr<QSettings> open_settings() const;
    QSize first_size() const;  // the first window size: 1400 x 860, bounded by the screen

    ui::AppController m_controller;
    ImGuiHostWidget* m_host      = nullptr;
    QLabel* m_job_label          = nullptr;
    QProgressBar* m_job_progress = nullptr;
    QToolButton* m_job_cancel    = nullptr;
    QTimer* m_progress_timer     = nullptr;  // ~30 Hz redraws while a job runs; stopped when idle
    QTimer* m_save_timer         = nullptr;  // writes the settings a second after the configuration changed
    uint64_t m_seen_revision     = 0;        // the controller's revision save_when_changed last looked at
    std::string m_saved_state;               // the configuration and files the settings last got (as text)
    uint64_t m_shown_job = 0;
    QString m_status_text;  // the status line shown (unelided)
    QString m_last_model;
    QString m_last_dataset;
    QString m_last_results;
    QString m_last_browsed;      // the last file a Browse button chose (the next dialog starts in its folder)
    QString m_last_session;      // the last session file saved or opened
    bool m_session_ok   = true;  // the kept session was read (or absent): only then is it written over
    bool m_use_settings = true;
    QString m_settings_file;
};

}  // namespace speculum::app
