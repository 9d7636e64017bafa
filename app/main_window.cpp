// Main window wiring: menus and dialogs on the Qt side, everything else through the ui::AppController.
#include "main_window.h"

#include "imgui_host_widget.h"

#include "core/file_io.h"
#include "core/json_input.h"
#include "core/resources.h"
#include "core/version.h"
#include "ui/model/engine_measurer.h"
#include "ui/widgets.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDesktopServices>
#include <QDialog>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QGuiApplication>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QScreen>
#include <QSettings>
#include <QStandardPaths>
#include <QStatusBar>
#include <QTextBrowser>
#include <QTimer>
#include <QToolButton>
#include <QUrl>
#include <QVBoxLayout>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <optional>

namespace speculum::app {

MainWindow::MainWindow(bool use_settings, const QString& settings_file)
    : m_use_settings(use_settings), m_settings_file(settings_file) {
    setWindowTitle("Speculum");
    m_controller.set_build(build_info());
    m_controller.set_measurer(ui::measure_with_engine);  // the real engine, on the controller's job arena
    // The app's sweeps are stored beside the settings (so a run again resumes), or in the temporary directory when
    // no settings are kept (screenshots).
    if (!settings_file.isEmpty())
        m_controller.set_sweep_dir((QFileInfo(settings_file).absolutePath() + "/sweeps").toStdString());
    else if (use_settings)
        m_controller.set_sweep_dir(
            (QStandardPaths::writableLocation(QStandardPaths::AppDataLocation) + "/sweeps").toStdString());
    m_host = new ImGuiHostWidget(m_controller, this);
    setCentralWidget(m_host);
    m_save_timer = new QTimer(this);
    m_save_timer->setSingleShot(true);
    m_save_timer->setInterval(1000);
    connect(m_save_timer, &QTimer::timeout, this, &MainWindow::save_settings);
    m_progress_timer = new QTimer(this);
    m_progress_timer->setInterval(33);
    connect(m_progress_timer, &QTimer::timeout, m_host, [this] { m_host->update(); });
    build_menus();
    build_status_bar();
    restore_settings();
    restore_session();
    m_saved_state = saved_state();  // what the settings hold: only a change is written
    connect(m_host, &ImGuiHostWidget::actionsEmitted, this, &MainWindow::on_shell_actions);
    connect(m_host, &ImGuiHostWidget::frameRendered, this, &MainWindow::after_frame);
}

void MainWindow::build_menus() {
    QMenu* file         = menuBar()->addMenu("&File");
    QAction* open_model = file->addAction("Open &model...", this, &MainWindow::open_model_dialog);
    open_model->setShortcut(QKeySequence::Open);
    file->addAction("Open &dataset...", this, &MainWindow::open_dataset_dialog);
    file->addAction("Open &results...", this, &MainWindow::open_results_dialog);
    file->addSeparator();
    file->addAction("Open &session...", this, &MainWindow::open_session_dialog);
    QAction* save_session = file->addAction("&Save session...", this, &MainWindow::save_session_dialog);
    save_session->setShortcut(QKeySequence::Save);
    file->addSeparator();
    QAction* reopen = file->addAction("Reopen &last model");
    connect(reopen, &QAction::triggered, this, [this] {
        if (!m_last_model.isEmpty()) m_controller.open_model(m_last_model.toStdString()), m_host->schedule_frames(2);
    });
    connect(file, &QMenu::aboutToShow, this, [this, reopen] {
        // The last model that loaded: a file that failed is never offered again.
        if (const auto& m = m_controller.snapshot().model; m && m_controller.model())
            m_last_model = QString::fromStdString(m->path);
        reopen->setEnabled(!m_last_model.isEmpty());
        reopen->setText(m_last_model.isEmpty() ? "Reopen last model" : "Reopen " + QFileInfo(m_last_model).fileName());
    });
    file->addSeparator();
    QAction* quit = file->addAction("&Quit", this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    QMenu* view = menuBar()->addMenu("&View");
    for (const auto& panel : m_host->dashboard().panels()) {
        QAction* a  = view->addAction(panel.title);
        bool* shown = panel.visible;
        a->setCheckable(true);
        connect(view, &QMenu::aboutToShow, a, [a, shown] { a->setChecked(*shown); });  // panels close themselves too
        connect(a, &QAction::toggled, this, [this, shown](bool on) {
            *shown = on;
            m_host->schedule_frames(2);
        });
    }

    view->addSeparator();
    view->addAction("&Reset layout", this, [this] {
        // The panels of a fresh start, at their default places in the current window size.
        m_host->dashboard().reset_visibility();
        ui::reset_layout();
        m_host->schedule_frames(3);
    });

    QMenu* help    = menuBar()->addMenu("&Help");
    QAction* guide = help->addAction("&First steps with your own model", this, &MainWindow::show_first_steps);
    guide->setShortcut(QKeySequence::HelpContents);
    help->addAction("&Documentation (docs/app.md)", this, &MainWindow::open_documentation);
    help->addSeparator();
    help->addAction("&About Speculum", this, &MainWindow::show_about);
}

void MainWindow::build_status_bar() {
    m_job_label    = new QLabel(this);
    m_job_progress = new QProgressBar(this);
    m_job_progress->setRange(0, 1000);
    m_job_progress->setMaximumWidth(220);
    m_job_cancel = new QToolButton(this);
    m_job_cancel->setText("Cancel");
    m_job_cancel->setMinimumWidth(m_job_cancel->sizeHint().width());  // never squeezed to "Cance" by a long message
    connect(m_job_cancel, &QToolButton::clicked, this, [this] {
        if (m_shown_job) m_controller.handle(ui::ActionCancelJob{m_shown_job});
        m_host->schedule_frames(2);
    });
    statusBar()->addPermanentWidget(m_job_label);
    statusBar()->addPermanentWidget(m_job_progress);
    statusBar()->addPermanentWidget(m_job_cancel);
    m_job_label->setFixedWidth(360);
    m_job_label->hide(), m_job_progress->hide(), m_job_cancel->hide();
    show_status("Ready", 0);
}

void MainWindow::show_status(const QString& text, int timeout_ms) {
    // Elided to the room left of the job widgets, the whole text in the bar's tooltip: a long message is never
    // drawn under the job label and progress bar.
    if (timeout_ms == 0) m_status_text = text;
    int room = statusBar()->width() - 24;
    for (const QWidget* w : {static_cast<QWidget*>(m_job_label), static_cast<QWidget*>(m_job_progress),
                             static_cast<QWidget*>(m_job_cancel)})
        if (w->isVisible()) room -= w->width() + 8;
    statusBar()->setToolTip(text);
    statusBar()->showMessage(statusBar()->fontMetrics().elidedText(text, Qt::ElideRight, std::max(room, 80)),
                             timeout_ms);
}

std::string MainWindow::saved_state() const {
    const ui::UiSnapshot& snap = m_controller.snapshot();
    std::string state = nlohmann::json(snap.config).dump() + "\n" + (snap.model ? snap.model->path : std::string()) +
                        "\n" + (snap.dataset ? snap.dataset->path : std::string()) + "\n" +
                        (snap.store ? snap.store->path : std::string()) + "\n";
    for (const ui::RunRecord& r : snap.history) state += std::to_string(r.id) + (r.pinned ? "p " : " ");
    return state;
}

QString MainWindow::session_file() const {
    const QString dir = !m_settings_file.isEmpty() ? QFileInfo(m_settings_file).absolutePath()
                                                   : QStandardPaths::writableLocation(QStandardPaths::AppDataLocation);
    return dir + "/session.json";
}

void MainWindow::restore_session() {
    // The last session's run history and sweep store. A file that does not read is set aside under another name
    // (never written over) and named in a message.
    const QString file = session_file();
    if (!m_use_settings || !QFileInfo::exists(file)) return;
    try {
        m_controller.restore_session(ui::load_session_file(file.toStdString()), false);
    } catch (const std::exception& e) {
        const QString kept = file + ".unreadable";
        QFile::remove(kept);
        m_session_ok = QFile::rename(file, kept);
        m_controller.message(ui::MessageLevel::error,
                             std::string("The last session was not restored: ") + e.what() +
                                 (m_session_ok ? " (kept as " + kept.toStdString() + ")" : ""));
    }
}

void MainWindow::save_session_dialog() {
    QString dir  = m_last_session.isEmpty() ? QDir::homePath() : QFileInfo(m_last_session).absolutePath();
    QString path = QFileDialog::getSaveFileName(this, "Save session", dir + "/speculum-session.json",
                                                "Speculum sessions (*.json);;All files (*)");
    if (path.isEmpty()) return;
    try {
        ui::save_session_file(path.toStdString(), m_controller.session());
        m_last_session = path;
        m_controller.message(ui::MessageLevel::info, "Session saved to " + path.toStdString());
    } catch (const std::exception& e) {
        m_controller.message(ui::MessageLevel::error, std::string("Session not saved: ") + e.what());
    }
    m_host->schedule_frames(2);
}

void MainWindow::open_session_dialog() {
    QString dir  = m_last_session.isEmpty() ? QDir::homePath() : QFileInfo(m_last_session).absolutePath();
    QString path = QFileDialog::getOpenFileName(this, "Open session", dir, "Speculum sessions (*.json);;All files (*)");
    if (path.isEmpty()) return;
    open_session(path);
    m_host->schedule_frames(2);
}

std::optional<ui::SessionState> MainWindow::open_session(const QString& path) {
    m_last_session = path;
    try {
        // Read whole first: a file that does not read changes nothing.
        ui::SessionState s = ui::load_session_file(path.toStdString());
        m_controller.restore_session(s, true);
        return s;
    } catch (const std::exception& e) {
        m_controller.message(ui::MessageLevel::error, std::string("Session not opened: ") + e.what());
        return std::nullopt;
    }
}

void MainWindow::save_when_changed() {
    // The configuration, the open files and the session are written a second after they change (QSettings and
    // save_session_file write a temporary file and rename it), so a crash or a kill loses at most that second.
    if (!m_use_settings || m_controller.revision() == m_seen_revision) return;
    m_seen_revision   = m_controller.revision();
    std::string state = saved_state();
    if (state == m_saved_state) return;
    m_saved_state = std::move(state);
    m_save_timer->start();
}

void MainWindow::after_frame() {
    save_when_changed();
    const ui::UiSnapshot& snap = m_controller.snapshot();
    bool running               = !snap.jobs.empty();
    if (running) {
        const ui::JobView& job = snap.jobs.front();
        m_shown_job            = job.id;
        QString text           = QString::fromStdString(job.name);
        if (!job.what.empty()) text += " - " + QString::fromStdString(job.what);
        if (snap.jobs.size() > 1) text += QString(" (+%1 more)").arg(snap.jobs.size() - 1);
        // Elided to the label's fixed width, the whole text in its tooltip: a long job description never pushes
        // into the message on its left.
        m_job_label->setToolTip(text);
        m_job_label->setText(m_job_label->fontMetrics().elidedText(text, Qt::ElideRight, m_job_label->width()));
        m_job_progress->setValue(int(job.progress * 1000));
    }
    m_job_label->setVisible(running), m_job_progress->setVisible(running), m_job_cancel->setVisible(running);
    if (!snap.status_line.empty() &&
        (m_status_text != QString::fromStdString(snap.status_line) || statusBar()->currentMessage().isEmpty()))
        show_status(QString::fromStdString(snap.status_line), 0);
    // Redraw on demand: a capped timer only while work is in flight (progress, streaming, debounce).
    if (m_controller.busy() && !m_progress_timer->isActive())
        m_progress_timer->start();
    else if (!m_controller.busy() && m_progress_timer->isActive())
        m_progress_timer->stop();
}

void MainWindow::on_shell_actions(const std::vector<ui::Action>& actions) {
    for (const auto& a : actions) {
        if (auto* msg = std::get_if<ui::ActionShowMessage>(&a))
            show_status(QString::fromStdString(msg->text), 5000);
        else if (std::holds_alternative<ui::ActionQuit>(a))
            close();
        else if (std::holds_alternative<ui::ActionOpenModelDialog>(a))
            QTimer::singleShot(0, this, &MainWindow::open_model_dialog);
        else if (std::holds_alternative<ui::ActionOpenDatasetDialog>(a))
            QTimer::singleShot(0, this, &MainWindow::open_dataset_dialog);
        else if (std::holds_alternative<ui::ActionOpenResultsDialog>(a))
            QTimer::singleShot(0, this, &MainWindow::open_results_dialog);
        else if (std::holds_alternative<ui::ActionSaveDraftDialog>(a))
            QTimer::singleShot(0, this, &MainWindow::save_draft_dialog);
        else if (auto* show = std::get_if<ui::ActionShowPanel>(&a)) {
            for (const auto& panel : m_host->dashboard().panels())
                if (show->title == panel.title) *panel.visible = true;
            m_host->schedule_frames(2);
        } else if (auto* browse = std::get_if<ui::ActionBrowseFile>(&a)) {
            QTimer::singleShot(0, this, [this, b = *browse] { browse_file_dialog(b); });
        } else if (auto* save = std::get_if<ui::ActionSaveExportDialog>(&a))
            QTimer::singleShot(0, this, [this, suggested = save->suggested] { save_export_dialog(suggested); });
    }
}

void MainWindow::save_export_dialog(const std::string& suggested) {
    const QString path = QFileDialog::getSaveFileName(this, "Save export", QString::fromStdString(suggested));
    if (path.isEmpty()) return;
    m_controller.handle(m_host->dashboard().export_panel.save_action(path.toStdString()));  // written on a job
    m_host->schedule_frames(2);
}

void MainWindow::save_draft_dialog() {
    const QString path =
        QFileDialog::getSaveFileName(this, "Save the draft GGUF", "speculum-draft.gguf", "GGUF models (*.gguf)");
    if (path.isEmpty()) return;
    m_controller.export_draft(path.toStdString());
    m_host->schedule_frames(2);
}

namespace {
// Where a file dialog starts: the last file's folder, else the bundled one (resources/models, datasets).
QString start_dir(const QString& last, const std::optional<std::filesystem::path>& bundled) {
    if (!last.isEmpty()) return QFileInfo(last).absolutePath();
    return bundled ? QString::fromStdString(bundled->string()) : QString();
}
}  // namespace

void MainWindow::browse_file_dialog(const ui::ActionBrowseFile& b) {
    struct Kind {
        const char* title;
        const char* filter;
    };
    Kind kind{"Choose a draft model", "GGUF models (*.gguf);;All files (*)"};
    if (b.field == ui::FileField::eagle3_head) kind = {"Choose an EAGLE-3 head", "GGUF files (*.gguf);;All files (*)"};
    if (b.field == ui::FileField::mtp_module) kind = {"Choose an MTP module", "GGUF files (*.gguf);;All files (*)"};
    if (b.field == ui::FileField::block_draft)
        kind = {"Choose a DFlash or DSpark block draft", "GGUF files (*.gguf);;All files (*)"};
    if (b.field == ui::FileField::acceptance_profile)
        kind = {"Load an acceptance profile", "Acceptance profiles (*.json);;All files (*)"};
    if (b.field == ui::FileField::head_corpus)
        kind = {"Choose the prompt suite that picks the reduced head", "JSONL prompt suites (*.jsonl);;All files (*)"};
    const std::optional<std::filesystem::path> res = resources_dir();
    const QString last = b.current.empty() ? m_last_browsed : QString::fromStdString(b.current);
    const QString dir  = b.field == ui::FileField::head_corpus
                             ? start_dir(last, datasets_dir())
                             : start_dir(last, res ? std::optional(*res / "models") : std::nullopt);
    const QString path = QFileDialog::getOpenFileName(this, kind.title, dir, kind.filter);
    if (path.isEmpty()) return;
    m_last_browsed = path;
    m_controller.handle(ui::ActionFilePicked{b.field, b.level, path.toStdString()});
    m_host->schedule_frames(2);
}

void MainWindow::open_model_dialog() {
    const std::optional<std::filesystem::path> res = resources_dir();
    QString dir  = start_dir(m_last_model, res ? std::optional(*res / "models") : std::nullopt);
    QString path = QFileDialog::getOpenFileName(this, "Open model", dir, "GGUF models (*.gguf);;All files (*)");
    if (path.isEmpty()) return;
    m_controller.open_model(path.toStdString());  // m_last_model follows once it has loaded
    m_host->schedule_frames(2);
}

void MainWindow::open_dataset_dialog() {
    QString dir = start_dir(m_last_dataset, datasets_dir());
    QString path =
        QFileDialog::getOpenFileName(this, "Open dataset", dir, "JSONL prompt suites (*.jsonl);;All files (*)");
    if (path.isEmpty()) return;
    m_last_dataset = path;
    m_controller.open_dataset(path.toStdString());
    m_host->schedule_frames(2);
}

void MainWindow::open_results_dialog() {
    QString dir  = m_last_results.isEmpty() ? QString() : QFileInfo(m_last_results).absolutePath();
    QString path = QFileDialog::getOpenFileName(this, "Open sweep results", dir,
                                                "Sweep result stores (*.sqlite *.db);;All files (*)");
    if (path.isEmpty()) return;
    m_last_results = path;
    m_controller.open_results(path.toStdString());  // read-only, on the worker pool
    m_host->schedule_frames(2);
}

void MainWindow::show_first_steps() {
    // The guide ships with the resources (resources/help/first_steps.md); Qt renders its Markdown.
    std::string text;
    try {
        text = read_input_file(resource_path("help/first_steps.md").string(), 1 << 20, "the first-steps guide");
    } catch (const std::exception& e) {
        QMessageBox::warning(this, "First steps", QString::fromStdString(e.what()));
        return;
    }
    auto* dialog = new QDialog(this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle("First steps with your own model");
    auto* browser = new QTextBrowser(dialog);
    browser->setMarkdown(QString::fromStdString(text));
    auto* layout = new QVBoxLayout(dialog);
    layout->addWidget(browser);
    dialog->resize(720, 640);
    dialog->show();
}

void MainWindow::open_documentation() {
    // The docs of the source tree this build runs from (beside resources/); none in an installed copy without them.
    const std::optional<std::filesystem::path> res = resources_dir();
    const std::filesystem::path app_md             = res ? res->parent_path() / "docs" / "app.md" : "";
    std::error_code ec;
    if (!res || !std::filesystem::is_regular_file(app_md, ec)) {
        QMessageBox::information(this, "Documentation",
                                 "The documentation is docs/app.md (and docs/*.md) in Speculum's source tree; this "
                                 "copy has no docs folder beside its resources.");
        return;
    }
    if (!QDesktopServices::openUrl(QUrl::fromLocalFile(QString::fromStdString(app_md.string()))))
        show_status("Could not open " + QString::fromStdString(app_md.string()) + ": no viewer for Markdown files",
                    8000);
}

void MainWindow::show_about() {
    QString text = QString::fromStdString(build_info_text(build_info()));
    text += QString("  Qt           %1\n").arg(qVersion());
    QMessageBox::about(this, "About Speculum", "<pre>" + text.toHtmlEscaped() + "</pre>");
}

QSize MainWindow::first_size() const {
    // 1400 x 860, or less: never larger than 92 % of the screen it opens on (a 1366 x 768 laptop included).
    QSize size(1400, 860);
    if (const QScreen* s = screen() ? screen() : QGuiApplication::primaryScreen()) {
        const QRect avail = s->availableGeometry();
        size              = size.boundedTo(QSize(int(avail.width() * 0.92), int(avail.height() * 0.92)));
    }
    return size;
}

std::unique_ptr<QSettings> MainWindow::open_settings() const {
    if (!m_settings_file.isEmpty()) return std::make_unique<QSettings>(m_settings_file, QSettings::IniFormat);
    return std::make_unique<QSettings>();
}

void MainWindow::restore_settings() {
    if (!m_use_settings) {
        resize(first_size());
        return;
    }
    std::unique_ptr<QSettings> stored = open_settings();
    QSettings& settings               = *stored;
    if (!restoreGeometry(settings.value("main_window/geometry").toByteArray())) resize(first_size());
    QVariant shown = settings.value("panels/visible");
    if (shown.isValid()) {
        QStringList titles = shown.toStringList();
        for (const auto& p : m_host->dashboard().panels()) *p.visible = titles.contains(p.title);
    }
    m_host->load_layout(settings.value("panels/imgui_layout").toByteArray().toStdString());
    m_last_model   = settings.value("files/last_model").toString();
    m_last_dataset = settings.value("files/last_dataset").toString();
    m_last_results = settings.value("files/last_results").toString();
    // The configuration as JSON (ui::AppConfig's round-trip): a file from another version or edited by hand that
    // does not parse or validate is reported and the defaults stay.
    const QString config = settings.value("config/json").toString();
    if (!config.isEmpty()) {
        try {
            ui::AppConfig cfg = parse_json(config.toStdString(), "settings config/json").get<ui::AppConfig>();
            cfg.validate();
            m_controller.set_config(cfg);
        } catch (const std::exception& e) {
            m_controller.message(ui::MessageLevel::error,
                                 std::string("Saved configuration ignored (defaults used): ") + e.what());
        }
    }
}

void MainWindow::save_settings() {
    if (!m_use_settings) return;
    std::unique_ptr<QSettings> stored = open_settings();
    QSettings& settings               = *stored;
    settings.setValue("main_window/geometry", saveGeometry());
    QStringList titles;
    for (const auto& p : m_host->dashboard().panels())
        if (*p.visible) titles << p.title;
    settings.setValue("panels/visible", titles);
    settings.setValue("panels/imgui_layout", QByteArray::fromStdString(m_host->save_layout()));
    // The model actually opened (a dialog, a bundled button or --model) is the one to offer next time.
    if (const auto& m = m_controller.snapshot().model) m_last_model = QString::fromStdString(m->path);
    if (const auto& d = m_controller.snapshot().dataset) m_last_dataset = QString::fromStdString(d->path);
    settings.setValue("files/last_model", m_last_model);
    settings.setValue("files/last_dataset", m_last_dataset);
    settings.setValue("files/last_results", m_last_results);
    settings.setValue("config/json", QString::fromStdString(nlohmann::json(m_controller.snapshot().config).dump()));
    // QSettings writes a temporary file and renames it; a failure (a full disk) keeps the old settings whole and is
    // reported, as the window is closing and no panel can show it.
    settings.sync();
    if (settings.status() != QSettings::NoError)
        std::fprintf(stderr, "speculum: could not save the settings to %s (the previous settings are kept)\n",
                     settings.fileName().toLocal8Bit().constData());
    if (!m_session_ok) return;  // an unreadable session that could not be set aside is never written over
    try {
        QDir().mkpath(QFileInfo(session_file()).absolutePath());
        ui::save_session_file(session_file().toStdString(), m_controller.session());
    } catch (const std::exception& e) {
        std::fprintf(stderr, "speculum: could not save the session (the previous one is kept): %s\n", e.what());
    }
}

void MainWindow::closeEvent(QCloseEvent* event) {
    save_settings();
    event->accept();
}

}  // namespace speculum::app
