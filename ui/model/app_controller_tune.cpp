// The controller's tune: sweep::run_tune (the search `speculum-cli tune` runs) on the open model and dataset, on a
// job with progress and cancel, into a result store under the sweep directory (running it again resumes); each
// measurement streams into the snapshot's TuneView so the Tune panel's Pareto front fills while it runs.
#include "ui/model/app_controller.h"

#include "core/session/target.h"
#include "core/store/hash.h"
#include "core/store/result_store.h"
#include "core/sweep/engine_evaluator.h"
#include "core/sweep/tune.h"

#include <filesystem>

namespace speculum::ui {

namespace fs = std::filesystem;

void AppController::start_tune(const ActionRunTune& a) {
    if (!m_model || !m_snap.model) {
        message(MessageLevel::error, "Tune needs a model: open one first (Model and data).");
        return;
    }
    if (!m_snap.dataset) {
        message(MessageLevel::error, "Tune needs prompts: open a dataset first (Model and data).");
        return;
    }
    sweep::TuneOptions o;
    o.dataset     = m_snap.dataset->path;
    o.task        = m_snap.task;
    o.budget_s    = a.budget_s;
    o.self_drafts = a.self_drafts;
    o.max_prompts = std::max(o.min_prompts, a.max_prompts);
    // The bundled target brings its drafts (the small and mid drafts, its EAGLE-3 head and MTP module), however its
    // path was written.
    std::error_code ec;
    for (const std::string& b : m_snap.bundled_models)
        if (fs::path(b).filename() == "speculum-target-bf16.gguf" && fs::equivalent(b, m_snap.model->path, ec))
            o.bundled_drafts = true;
    try {
        o.validate();
    } catch (const std::exception& e) {
        message(MessageLevel::error, std::string("Cannot tune: ") + e.what());
        return;
    }
    const fs::path dir  = m_sweep_dir.empty() ? fs::temp_directory_path() / "speculum-sweeps" : fs::path(m_sweep_dir);
    const fs::path file = dir / ("tune-" + fs::path(m_snap.model->path).stem().string() + ".sqlite");
    auto start          = std::make_shared<TuneView>();
    start->running = true, start->store_path = file.string(), start->phase = "identifying the model";
    m_snap.tune = start;
    submit("tune", "Tuning on " + fs::path(o.dataset).filename().string(),
           [this, o, file, model = m_model, path = m_snap.model->path](jobs::JobContext& ctx) -> Apply {
               session::Target target = session::open_target(model, path);
               sweep::EngineEvaluator evaluator(target, store::file_hash(path, ctx.progress_fn(), ctx.token()));
               fs::create_directories(file.parent_path());
               auto store = store::ResultStore::open(file, store::ResultStore::Mode::read_write);
               TuneView view;
               view.running = true, view.store_path = file.string();
               sweep::TuneHooks hooks;
               hooks.cancel   = ctx.token();
               hooks.progress = ctx.progress_fn();
               hooks.on_event = [&](const sweep::TuneEvent& e) {  // on this job's thread
                   view.phase = e.phase;
                   view.candidates.push_back(e.candidate);
                   auto partial = std::make_shared<const TuneView>(view);
                   ctx.post(Apply([this, partial] {
                       m_snap.tune = partial;
                       changed();
                   }));
               };
               sweep::TuneResult r = sweep::run_tune(o, *target.model, evaluator, *store, hooks);
               auto done           = std::make_shared<TuneView>();
               done->store_path = file.string(), done->candidates = r.candidates, done->phase = "done";
               done->result = std::move(r);
               return [this, done] {
                   m_snap.tune                 = done;
                   const sweep::TuneResult& rr = *done->result;
                   message(
                       MessageLevel::info,
                       "Tune done: " + std::to_string(rr.measured) + " measured, " + std::to_string(rr.cached) +
                           " from the store, " + std::to_string(rr.pruned) + " pruned by the model" +
                           (rr.winner ? "; apply the best in the Tune panel" : "; nothing was measured to the end"));
               };
           });
    changed();
}

}  // namespace speculum::ui
