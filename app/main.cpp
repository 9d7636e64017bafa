// speculum: the Qt 6 desktop app. Qt owns the window and events; Dear ImGui draws the panels.
#include "event_log.h"
#include "imgui_host_widget.h"
#include "main_window.h"
#include "scripted_run.h"

#include "core/resources.h"
#include "ui/model/app_sweep.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QSurfaceFormat>

#include <cstdio>
#include <filesystem>
#include <optional>

namespace {

// Applies KEY=VALUE items to `cfg`; prints the first error and returns false.
bool set_values(speculum::ui::AppConfig& cfg, const char* option, const QStringList& items) {
    for (const QString& item : items) {
        int eq = item.indexOf('=');
        std::string error =
            eq <= 0 ? "expected KEY=VALUE"
                    : speculum::ui::set_config_value(cfg, item.left(eq).toStdString(), item.mid(eq + 1).toStdString());
        if (!error.empty()) {
            std::fprintf(stderr, "speculum: %s %s: %s\n", option, qPrintable(item), error.c_str());
            return false;
        }
    }
    return true;
}

// --set KEY=VALUE options become one scripted ActionSetConfig, as if a panel had emitted it.
bool apply_settings(speculum::ui::AppController& controller, const QStringList& items) {
    speculum::ui::AppConfig cfg = controller.snapshot().config;
    if (!set_values(cfg, "--set", items)) return false;
    controller.handle(speculum::ui::ActionSetConfig{cfg});
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    // The ImGui renderer needs an OpenGL 3.3 core context; it must be requested before QApplication exists.
    QSurfaceFormat format;
    format.setVersion(3, 3);
    format.setProfile(QSurfaceFormat::CoreProfile);
    format.setDepthBufferSize(0);
    format.setStencilBufferSize(0);
    QSurfaceFormat::setDefaultFormat(format);

    QApplication app(argc, argv);
    QApplication::setOrganizationName("Speculum");
    QApplication::setApplicationName("speculum");
    QApplication::setApplicationVersion(SPECULUM_VERSION);

    QCommandLineParser parser;
    parser.setApplicationDescription("Speculum: explore the design space of speculative decoding.");
    parser.addHelpOption();
    parser.addVersionOption();
    QCommandLineOption screenshot("screenshot",
                                  "Render, wait until no job runs (measured runs included), save a screenshot to "
                                  "<file> (PNG) and exit. Saved settings are neither read nor written unless "
                                  "--settings-file is given.",
                                  "file");
    QCommandLineOption then_set("then-set",
                                "Scripted edit: once the first measured run has completed, change this setting "
                                "(repeatable; one ActionSetConfig) and wait for the measured re-run.",
                                "key=value");
    QCommandLineOption wait_measured("exit-when-measured",
                                     "Wait for the measured run of the final configuration, print it "
                                     "('speculum: measured: speedup ...') and exit (after --screenshot, if given).");
    QCommandLineOption timeout("timeout", "Scripted runs give up after this many seconds (exit code 3; default 120).",
                               "s", "120");
    QCommandLineOption settings_file("settings-file", "Read and write the saved settings in this INI file.", "path");
    QCommandLineOption frames("frames", "Idle frames to render before the screenshot (default 3).", "n", "3");
    QCommandLineOption size("size", "Window size WxH (default: last session's, else 1400x860).", "WxH");
    QCommandLineOption model("model", "Open this GGUF model at start.", "path");
    QCommandLineOption dataset("dataset", "Open this JSONL dataset at start.", "path");
    QCommandLineOption results("results",
                               "Open this sweep result store (speculum-cli sweep --db) read-only at start; the Design "
                               "space panel shows it.",
                               "file.sqlite");
    QCommandLineOption panel("panel", "Show only the panel with this title, over the whole window.", "title");
    QCommandLineOption set(
        "set",
        "Change a setting at start, e.g. gamma=6, alpha=0.7, profile=rtx4090, /levels/0/prune/ratio=0.3 (repeatable).",
        "key=value");
    QCommandLineOption sweep("sweep", "Run a modeled design-space sweep at start over two axes, e.g. gamma,alpha.",
                             "x,y");
    QCommandLineOption tune("tune",
                            "Scripted: after the measured run, run the Tune panel's search with this budget in "
                            "seconds (then the screenshot, if asked).",
                            "s");
    QCommandLineOption pin_runs("pin-runs",
                                "Scripted: pin every run in the history before the screenshot or the end (the Run "
                                "history panel then overlays them).");
    QCommandLineOption session("session",
                               "Open this session file at start (File > Save session writes one): its configuration, "
                               "model, dataset, run history and sweep results.",
                               "file.json");
    QCommandLineOption log_events("log-events",
                                  "Print what happens to stdout as it happens: measured runs, messages, and where the "
                                  "main sliders are on the screen ('speculum: widget: gamma X Y W H'), for tests "
                                  "that drive the window with real input.");
    for (const auto& o : {screenshot, frames, size, model, dataset, results, panel, set, sweep, then_set, wait_measured,
                          timeout, settings_file, log_events, tune, pin_runs, session})
        parser.addOption(o);
    parser.process(app);

    const bool use_settings = !parser.isSet(screenshot) || parser.isSet(settings_file);
    speculum::app::MainWindow window(use_settings, parser.value(settings_file));
    auto& controller = window.controller();
    if (parser.isSet(size)) {
        const QStringList wh = parser.value(size).split('x');
        bool ok_w = false, ok_h = false;
        int w = wh.size() == 2 ? wh[0].toInt(&ok_w) : 0, h = wh.size() == 2 ? wh[1].toInt(&ok_h) : 0;
        if (!ok_w || !ok_h || w < 320 || h < 200 || w > 16384 || h > 16384) {
            std::fprintf(stderr, "speculum: --size expects WxH with W >= 320 and H >= 200, got '%s'\n",
                         qPrintable(parser.value(size)));
            return 2;
        }
        window.resize(w, h);
    }
    if (parser.isSet(panel) && !window.host()->dashboard().set_solo(parser.value(panel).toStdString())) {
        std::fprintf(stderr, "speculum: --panel: no panel titled '%s'\n", qPrintable(parser.value(panel)));
        return 2;
    }
    if (parser.isSet(set) && !apply_settings(controller, parser.values(set))) return 2;
    if (parser.isSet(sweep)) {
        const QStringList xy = parser.value(sweep).split(',');
        auto modeled_axis    = [](const QString& name) {
            const speculum::ui::AppSweepAxis* a = speculum::ui::find_app_sweep_axis(name.toStdString());
            return a && a->needs != speculum::ui::AppSweepAxis::Needs::measurement;
        };
        if (xy.size() != 2 || !modeled_axis(xy[0]) || !modeled_axis(xy[1])) {
            std::fprintf(stderr, "speculum: --sweep expects two of gamma, alpha, c, budget (e.g. gamma,alpha)\n");
            return 2;
        }
        controller.handle(speculum::ui::ActionRunSweep{xy[0].toStdString(), xy[1].toStdString(), false});
    }
    // The files of the last session come back with it (when they still exist), unless others are named.
    std::error_code ec;
    const auto still_there = [&ec](const QString& p) {
        return !p.isEmpty() && std::filesystem::is_regular_file(p.toStdString(), ec);
    };
    // A session names its own model (opened by open_session), unless --model names another.
    std::optional<speculum::ui::SessionState> opened;
    if (parser.isSet(session)) opened = window.open_session(parser.value(session));
    const bool session_model = opened && still_there(QString::fromStdString(opened->model_path));
    if (parser.isSet(model)) {
        controller.open_model(parser.value(model).toStdString());
    } else if (session_model) {
        // opened with the session
    } else if (still_there(window.last_model())) {
        controller.open_model(window.last_model().toStdString());
    } else {
        // No model named: open the bundled target, so a fresh checkout shows a real model at once.
        if (auto res = speculum::resources_dir();
            res && std::filesystem::exists(*res / speculum::kBundledTargetModel, ec))
            controller.open_model((*res / speculum::kBundledTargetModel).string());
    }
    if (parser.isSet(dataset))
        controller.open_dataset(parser.value(dataset).toStdString());
    else if (still_there(window.last_dataset()))
        controller.open_dataset(window.last_dataset().toStdString());
    if (parser.isSet(results)) controller.open_results(parser.value(results).toStdString());
    if (parser.isSet(log_events)) new speculum::app::EventLog(window);  // owned by the window
    window.show();

    const bool scripted = parser.isSet(screenshot) || parser.isSet(then_set) || parser.isSet(wait_measured) ||
                          parser.isSet(tune) || parser.isSet(pin_runs);
    if (scripted) {
        speculum::app::ScriptedRun::Options o;
        bool ok_n = false, ok_t = false;
        o.frames    = parser.value(frames).toInt(&ok_n);
        o.timeout_s = parser.value(timeout).toInt(&ok_t);
        if (!ok_n || o.frames < 1 || o.frames > 100000 || !ok_t || o.timeout_s < 1 || o.timeout_s > 86400) {
            std::fprintf(stderr, "speculum: --frames and --timeout expect positive integers\n");
            return 2;
        }
        speculum::ui::AppConfig check = controller.snapshot().config;  // bad --then-set values fail now, not later
        if (!set_values(check, "--then-set", parser.values(then_set))) return 2;
        o.then_set      = parser.values(then_set);
        o.wait_measured = parser.isSet(wait_measured);
        o.screenshot    = parser.value(screenshot);
        o.pin_runs      = parser.isSet(pin_runs);
        if (parser.isSet(tune)) {
            bool ok_s = false;
            o.tune_s  = parser.value(tune).toDouble(&ok_s);
            if (!ok_s || !(o.tune_s > 0) || o.tune_s > 86400) {
                std::fprintf(stderr, "speculum: --tune expects a budget in seconds, got '%s'\n",
                             qPrintable(parser.value(tune)));
                return 2;
            }
            o.wait_measured = true;  // the tune starts after the measured run
        }
        auto* run = new speculum::app::ScriptedRun(window, o);
        QObject::connect(run, &speculum::app::ScriptedRun::finished, &app, [&app, &window](int code) {
            window.close();  // saves the settings when they are in use
            app.exit(code);
        });
        run->start();
    }
    return app.exec();
}
