// The controller's design-space work: the app's sweeps (core/sweep's run_sweep into a result store, rows streamed
// into the snapshot), opening a store from a file, and loading a stored row into the editor.
#include "ui/model/app_controller.h"

#include "core/session/target.h"
#include "core/store/hash.h"
#include "core/store/result_store.h"
#include "core/sweep/engine_evaluator.h"
#include "core/sweep/spec_predict_evaluator.h"
#include "core/sweep/sweep_runner.h"
#include "ui/model/app_sweep.h"
#include "ui/model/result_config.h"
#include "ui/model/spec_mapping.h"
#include "ui/model/store_view.h"

#include <filesystem>
#include <mutex>

namespace speculum::ui {

namespace fs = std::filesystem;

namespace {

constexpr size_t kModeledPosts = 12;  // a modeled sweep streams about this many views (its cells take microseconds)

std::string count_text(size_t n, const char* what) {
    return std::to_string(n) + " " + what;
}

}  // namespace

void AppController::start_sweep(const ActionRunSweep& a) {
    AppSweepRequest r;
    r.config = m_snap.config;
    std::optional<MeasuredView> measured;  // modeled cells take the last finished run's alpha and c, as the panels do
    if (m_snap.measured && m_snap.measured->complete) measured = m_snap.measured;
    r.measured   = measured ? &*measured : nullptr;
    r.source     = {m_snap.dataset ? m_snap.dataset->path : "", m_snap.task,
                m_snap.measured ? m_snap.measured->stats.rank_alpha() : std::vector<double>{}};
    r.model_path = m_snap.model ? m_snap.model->path : "";
    r.x = find_app_sweep_axis(a.x), r.y = find_app_sweep_axis(a.y), r.measure = a.measure;
    if (!r.x || !r.y) {
        message(MessageLevel::error, "Unknown sweep axis: " + (r.x ? a.y : a.x));
        return;
    }
    const bool measure = app_sweep_measured(r);
    if (measure && (!m_model || r.model_path.empty())) {
        message(MessageLevel::error, std::string("A sweep over ") + r.x->label + " and " + r.y->label +
                                         " is measured: open a model first (Model and data).");
        return;
    }
    sweep::SweepSpec spec;
    try {
        spec = app_sweep_spec(r);
    } catch (const std::exception& e) {
        message(MessageLevel::error, e.what());
        return;
    }
    const fs::path dir = m_sweep_dir.empty() ? fs::temp_directory_path() / "speculum-sweeps" : fs::path(m_sweep_dir);
    const std::vector<std::string> preferred = {r.x->pointer, r.y->pointer};
    const std::string name =
        std::string("Sweeping ") + r.x->label + " × " + r.y->label + (measure ? " (measured)" : "");
    // A measured sweep's cost before it starts: its cells, each a run of the editor's settings (passes until the
    // speedup's interval is narrow enough, within the run's budget), at the last run's speed.
    if (measure && m_snap.measured && m_snap.measured->complete)
        if (const std::optional<RunEstimate> e =
                estimate_run(spec.base.get<engine::SpecConfig>(), m_snap.measured->stats.tokens_per_s,
                             m_snap.measured->stats.baseline_tokens_per_s)) {
            const double cells = double(spec.grid_size());
            message(MessageLevel::info, "Measuring " + std::to_string(spec.grid_size()) +
                                            " cells, each repeated to an interval as a run is: about " +
                                            duration_text(cells * e->seconds_min) + " to " +
                                            duration_text(cells * e->seconds_max) +
                                            " (cells already stored are not run again)");
        }
    submit("sweep", name,
           [this, spec, dir, preferred, measure, model = m_model, path = r.model_path,
            now = m_now](jobs::JobContext& ctx) mutable -> Apply {
               // The job's progress says how long the rest will take, at the pace so far.
               const Clock::time_point start = now();
               const ProgressFn to_job       = ctx.progress_fn();
               const ProgressFn progress     = [to_job, start, now](double f, const std::string& what) {
                   const std::string left = time_left_text(f, std::chrono::duration<double>(now() - start).count());
                   to_job(f, left.empty() ? what : left + "; " + what);  // first: the status bar cuts long text
               };
               std::unique_ptr<sweep::Evaluator> evaluator;
               if (measure) {
                   session::Target target = session::open_target(model, path);
                   if (!target.tokenizer) {  // as a measured run does: token-id prompts
                       engine::SpecConfig base = spec.base.get<engine::SpecConfig>();
                       use_token_id_prompt(base, target.model->hparams().n_vocab);
                       spec.base = base;
                   }
                   evaluator = std::make_unique<sweep::EngineEvaluator>(
                       std::move(target), store::file_hash(path, ctx.progress_fn(), ctx.token()));
               } else {
                   evaluator = std::make_unique<sweep::SpecPredictEvaluator>();
               }
               const fs::path file = app_sweep_file(dir, spec, measure ? path : "");
               fs::create_directories(file.parent_path());
               auto store = store::ResultStore::open(file, store::ResultStore::Mode::read_write);
               StoreView view;
               view.path = file.string(), view.title = spec.name, view.preferred_axes = preferred;
               std::mutex mutex;  // events come from the workers evaluating cells in parallel
               const size_t every = measure ? 1 : std::max<size_t>(1, spec.grid_size() / kModeledPosts);
               size_t since_post  = 0;
               const sweep::SweepSummary summary =
                   sweep::run_sweep(spec, *evaluator, *store, ctx.token(), progress, [&](const sweep::SweepEvent& e) {
                       std::lock_guard lock(mutex);
                       view.rows.push_back(store_row_view(store::ResultRow(e.row)));
                       if (++since_post < every) return;
                       since_post   = 0;
                       auto partial = std::make_shared<StoreView>(view);
                       index_store_view(*partial);
                       ctx.post(Apply([this, partial] {
                           m_snap.store = partial;
                           changed();
                       }));
                   });
               store.reset();
               // The final view in the store's order (best first), as speculum-cli results and a reopened file show it.
               auto done            = std::make_shared<StoreView>(load_store_view(file.string(), ctx.token()));
               done->title          = spec.name;
               done->preferred_axes = preferred;
               return [this, done, summary] {
                   m_snap.store = done;
                   message(MessageLevel::info, "Sweep done: " + count_text(summary.evaluated, "cells evaluated") +
                                                   ", " + count_text(summary.cached, "from the store") + ", " +
                                                   count_text(summary.failed, "failed") + "; stored in " + done->path +
                                                   " (speculum-cli results reads it; running it again resumes)");
               };
           });
    changed();
}

void AppController::open_results(const std::string& path) {
    submit("results", "Opening results " + fs::path(path).filename().string(),
           [this, path](jobs::JobContext& ctx) -> Apply {
               auto view = std::make_shared<const StoreView>(load_store_view(path, ctx.token(), ctx.progress_fn()));
               return [this, view] {
                   m_snap.store = view;
                   if (!view->error.empty())
                       message(MessageLevel::error, "Cannot open results: " + view->error);
                   else
                       message(MessageLevel::info, "Opened " + fs::path(view->path).filename().string() + ": " +
                                                       std::to_string(view->rows.size()) + " rows (" +
                                                       std::to_string(view->n_measured) + " measured), " +
                                                       std::to_string(view->axes.size()) + " varying fields");
               };
           });
}

void AppController::load_result_config(const ActionLoadResultConfig& a) {
    ResultConfigLoad r = app_config_from_result(a.config, m_snap.config);
    set_config(r.config);
    std::string text = "Loaded the " + (r.kind.empty() ? std::string("stored") : r.kind) + " configuration" +
                       (a.label.empty() ? "" : " (" + a.label + ")");
    if (!r.not_loaded.empty()) {
        text += "; not loaded: ";
        for (size_t i = 0; i < r.not_loaded.size(); ++i) text += (i ? "; " : "") + r.not_loaded[i];
    }
    message(MessageLevel::info, text);
}

}  // namespace speculum::ui
