// The Design space panel's axes and the SweepSpec of an app sweep (see app_sweep.h).
#include "ui/model/app_sweep.h"

#include "core/store/hash.h"
#include "core/sweep/spec_predict_evaluator.h"
#include "ui/model/modeled.h"

#include <stdexcept>

namespace speculum::ui {

namespace {

std::vector<double> range(double from, double step, int n) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(from + step * i);
    return v;
}

}  // namespace

const std::vector<AppSweepAxis>& app_sweep_axes() {
    using N                                  = AppSweepAxis::Needs;
    static const std::vector<AppSweepAxis> a = {
        {"gamma", "gamma (draft tokens)", "/gamma/0", range(1, 1, 12), true, N::nothing},
        {"alpha", "assumed alpha", "/modeled/levels/0/alpha", range(0.5, 0.05, 10), false, N::model},
        {"c", "assumed cost ratio c", "/modeled/levels/0/c", range(0, 0.03, 11), false, N::model},
        {"budget", "tree node budget", "/tree/node_budget", {2, 4, 8, 12, 16, 24, 32, 48, 64}, true, N::nothing},
        {"prune", "pruning ratio", "/levels/0/prune/ratio", range(0, 0.1, 10), false, N::measurement},
        {"trunc", "weight truncation bits", "/levels/0/weight_trunc_bits", range(0, 1, 8), true, N::measurement},
    };
    return a;
}

const AppSweepAxis* find_app_sweep_axis(const std::string& name) {
    for (const AppSweepAxis& a : app_sweep_axes())
        if (name == a.key || name == a.pointer) return &a;
    return nullptr;
}

bool app_sweep_measured(const AppSweepRequest& r) {
    return r.measure || (r.x && r.x->needs == AppSweepAxis::Needs::measurement) ||
           (r.y && r.y->needs == AppSweepAxis::Needs::measurement);
}

sweep::SweepSpec app_sweep_spec(const AppSweepRequest& r) {
    if (!r.x || !r.y) throw std::invalid_argument("Pick two axes for the sweep.");
    if (r.x == r.y) throw std::invalid_argument(std::string("Pick two different axes (both are ") + r.x->label + ").");
    const bool measured = app_sweep_measured(r);
    for (const AppSweepAxis* a : {r.x, r.y})
        if (measured && a->needs == AppSweepAxis::Needs::model)
            throw std::invalid_argument(std::string("A measured sweep measures alpha and c: ") + a->label +
                                        " is an assumption of the modeled sweep only.");
    AppConfig base = r.config;
    for (const AppSweepAxis* a : {r.x, r.y})
        if (a->pointer == std::string("/tree/node_budget") && tree_mode(base) != TreeMode::optimal_measured)
            set_tree_mode(base, TreeMode::budget);
    // A cell the engine or the analytic model would refuse (pruning a separate draft model, say) is refused here,
    // once, with the reason: the last cell of the grid, where the axes are at their ends.
    const std::string refused =
        std::string("A sweep over ") + r.x->label + " and " + r.y->label + " cannot run on this configuration: ";
    AppConfig probe = base;
    for (const AppSweepAxis* a : {r.x, r.y})
        if (a->needs != AppSweepAxis::Needs::model) {
            const double v = a->values.back();
            const std::string err =
                set_config_pointer(probe, a->pointer, a->integer ? std::to_string(int(v)) : nlohmann::json(v).dump());
            if (!err.empty()) throw std::invalid_argument(refused + err);
        }
    if (const std::vector<std::string> p = probe.problems(); !p.empty())
        throw std::invalid_argument(refused + p.front());

    sweep::SweepSpec spec;
    spec.name = std::string("app: ") + r.x->key + " x " + r.y->key + (measured ? " (measured)" : " (modeled)");
    for (const AppSweepAxis* a : {r.x, r.y}) {
        sweep::Axis axis;
        axis.name = a->key, axis.path = a->pointer;
        for (double v : a->values) axis.values.push_back(a->integer ? nlohmann::json(int(v)) : nlohmann::json(v));
        spec.axes.push_back(std::move(axis));
    }
    if (measured) {
        spec.evaluator        = "engine";
        spec.base             = spec_config_from_app(base, r.source);
        spec.objective.metric = "speedup";
        if (!r.model_path.empty()) spec.target = r.model_path;
    } else {
        sweep::SpecModeled modeled;
        std::string alpha_source, c_source;
        modeled.figures = modeled_figures(base, r.measured, &alpha_source, &c_source);
        spec.name += "; alpha " +
                     (alpha_source == "measured" ? std::string("measured by the last run") : alpha_source) + ", c " +
                     (c_source == "measured" ? "measured by the last run" : "assumed");
        modeled.horizontal    = base.modeled.horizontal;
        spec.evaluator        = "spec-predict";
        spec.base             = sweep::spec_predict_config(spec_with_model_paths(base), modeled);
        spec.objective.metric = "predicted_speedup";
    }
    spec.validate();
    return spec;
}

nlohmann::json editor_config_json(const AppConfig& cfg) {
    sweep::SpecModeled modeled;
    for (const LevelAssumption& l : cfg.modeled.levels) modeled.figures.levels.push_back({{l.alpha}, l.c});
    modeled.horizontal = cfg.modeled.horizontal;
    return sweep::spec_predict_config(cfg.spec, modeled);
}

std::filesystem::path app_sweep_file(const std::filesystem::path& dir, const sweep::SweepSpec& spec,
                                     const std::string& model_identity) {
    const std::string id = store::json_hash({{"spec", spec}, {"model", model_identity}}).substr(0, 12);
    std::string name     = spec.axes.size() == 2 ? spec.axes[0].name + "-" + spec.axes[1].name + "-" : "";
    return dir / ("sweep-" + name + id + ".sqlite");
}

}  // namespace speculum::ui
