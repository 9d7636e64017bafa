// Scripted runs of the app (tests, documentation pictures): optionally wait for the first measured run, apply
// --then-set changes as one ActionSetConfig (as a panel would), wait for the measured re-run of the final
// configuration, print what was measured, optionally run the Tune panel's search (--tune), then save a screenshot
// and/or finish. A timeout ends a stuck run.
#pragma once

#include <QObject>
#include <QStringList>

class QTimer;

namespace speculum::ui {
struct UiSnapshot;
}

namespace speculum::app {

class MainWindow;

class ScriptedRun : public QObject {
    Q_OBJECT
public:
    struct Options {
        QStringList then_set;        // KEY=VALUE changes applied once the first measured run has completed
        bool wait_measured = false;  // finish only after the measured run of the final configuration
        QString screenshot;          // save the window here (PNG) at the end; empty = none
        int frames    = 3;           // idle frames before the screenshot
        int timeout_s = 120;         // give up (exit code 3) after this long
        double tune_s = 0;           // > 0: after the final measured run, Tune with this budget, then the screenshot
        bool pin_runs = false;       // pin every run in the history before the screenshot or the end (--pin-runs)
    };
    ScriptedRun(MainWindow& window, Options options);
    void start();

signals:
    void finished(int exit_code);

private:
    void take_screenshot_or_finish(const ui::UiSnapshot& snap);
    enum class Stage { first_measure, final_measure, tuning, screenshot, done };
    void after_frame();
    void finish(int code);

    MainWindow& m_window;
    Options m_options;
    Stage m_stage     = Stage::done;
    int m_base_runs   = 0;  // measured runs completed when the current stage began
    bool m_finished   = false;
    QTimer* m_timeout = nullptr;
};

}  // namespace speculum::app
