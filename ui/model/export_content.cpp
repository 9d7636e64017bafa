// Export documents from a UiSnapshot (see export_content.h).
#include "ui/model/export_content.h"

#include "core/engine/acceptance_profile.h"

#include "core/export/draft_export.h"
#include "core/export/plot_raster.h"
#include "core/export/plot_svg.h"
#include "core/export/report.h"
#include "core/export/snippets.h"
#include "core/store/csv.h"
#include "core/version.h"
#include "ui/model/engine_measurer.h"
#include "ui/model/run_compare.h"

#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>

namespace speculum::ui {

namespace {

exporting::MeasuredFigures measured_from_view(const MeasuredView& r) {
    return exporting::measured_from_stats(r.stats, std::max(1, int(r.prompts.size())),
                                          r.complete ? "speculum app" : "speculum app (still streaming)");
}

std::vector<exporting::SpeedupBar> speedup_bars(const UiSnapshot& snap) {
    // The Speedup panel's figures, in its order.
    const auto& o = snap.modeled.output;
    std::vector<exporting::SpeedupBar> b;
    if (snap.modeled.error.empty()) {
        b.push_back({"chain EWIF (k=" + std::to_string(snap.config.gamma()) + ")", o.ewif, false});
        b.push_back({"best k=" + std::to_string(o.best_k), o.best_ewif, false});
        if (o.kmatrix) b.push_back({"cascade EWIF (truncate, as measured)", o.kmatrix->ewif, false});
        if (o.cascade) b.push_back({"cascade, Thm. 4.3 (fixed steps)", o.cascade->ewif, false});
        if (o.horizontal_ewif) b.push_back({"horizontal", *o.horizontal_ewif, false});
        if (tree_mode(snap.config) != TreeMode::chain) b.push_back({"tree", snap.modeled.tree_speedup, false});
        if (o.timing && snap.profile_index >= 0)
            b.push_back({"on " + snap.profiles[size_t(snap.profile_index)].id, o.timing->speedup, false});
    }
    if (snap.measured && snap.measured->speedup() > 0)
        b.push_back(
            {snap.measured->repeats.speedup.n > 1 ? "measured (median)" : "measured", snap.measured->speedup(), true});
    return b;
}

exporting::AcceptanceData acceptance(const UiSnapshot& snap) {
    exporting::AcceptanceData d;
    const auto& a = snap.modeled.input.alpha;
    for (int i = 0; i < snap.config.gamma(); ++i)
        d.predicted.push_back(a.empty() ? snap.config.level1().alpha : a[std::min(size_t(i), a.size() - 1)]);
    if (snap.measured) d.reached = snap.measured->stats.pos_reached, d.accepted = snap.measured->stats.pos_accepted;
    d.subtitle = describe_draft(snap.config.draft()) + ", gamma " + std::to_string(snap.config.gamma()) +
                 (snap.measured ? "" : " (modeled only: no measured run)");
    return d;
}

// The grid the Design space panel shows, as the exported heatmap.
exporting::HeatmapData heatmap(const StoreView& view, const DesignSelection& selection) {
    const StoreGrid g = store_grid(view, selection);
    exporting::HeatmapData d;
    if (g.x_axis < 0) return d;
    auto fill = [](const std::vector<nlohmann::json>& values, std::vector<double>& num,
                   std::vector<std::string>& text) {
        for (size_t i = 0; i < values.size(); ++i) {
            num.push_back(values[i].is_number() ? values[i].get<double>() : double(i));
            text.push_back(axis_value_text(values[i]));
        }
    };
    fill(g.xs, d.xs, d.x_text);
    fill(g.ys, d.ys, d.y_text);
    int measured = 0, rows = 0;
    for (const StoreCell& c : g.cells) {
        d.values.push_back(c.count > 0 ? c.value : std::numeric_limits<double>::quiet_NaN());
        measured += c.n_measured, rows += c.count;
    }
    d.x_label = view.axes[size_t(g.x_axis)].pointer;
    d.y_label = g.y_axis >= 0 ? view.axes[size_t(g.y_axis)].pointer : "(one row)";
    d.metric  = (g.aggregate == CellAggregate::best ? "best " : "mean ") + g.metric;
    d.source  = measured == 0 ? "modeled" : measured == rows ? "measured" : "measured and modeled";
    return d;
}

// Every row of the store view: status, measured or modeled, task, each varying field, each metric.
std::string sweep_csv(const StoreView& view) {
    std::ostringstream o;
    o.precision(10);
    o << "status,source,task";
    for (const StoreAxis& a : view.axes) o << ',' << store::csv_field(a.pointer);
    for (const std::string& m : view.metrics) o << ',' << store::csv_field(m);
    o << '\n';
    for (const StoreRowView& r : view.rows) {
        o << store::csv_field(r.status) << ',' << (r.measured ? "measured" : "modeled") << ','
          << store::csv_field(r.task);
        for (const StoreAxis& a : view.axes) {
            const nlohmann::json v = config_value(r.config, a.pointer);
            o << ',' << (v.is_null() ? "" : store::csv_field(v.is_string() ? v.get<std::string>() : v.dump()));
        }
        for (const std::string& m : view.metrics) {
            o << ',';
            if (auto it = r.metrics.find(m); it != r.metrics.end()) o << it->second;
        }
        o << '\n';
    }
    return o.str();
}

}  // namespace

const char* export_format_name(ExportFormat f) {
    switch (f) {
        case ExportFormat::manifest:
            return "Manifest (JSON)";
        case ExportFormat::llama_cpp:
            return "llama.cpp flags";
        case ExportFormat::vllm:
            return "vLLM speculative_config";
        case ExportFormat::sglang:
            return "SGLang flags";
        case ExportFormat::report:
            return "Report (JSON)";
        case ExportFormat::run_report:
            return "Run report (JSON, as speculum-cli run --report)";
        case ExportFormat::acceptance_profile:
            return "Acceptance profile (speculation_profile.json)";
        case ExportFormat::csv:
            return "Sweep results (CSV)";
        case ExportFormat::history_csv:
            return "Run history (CSV)";
        case ExportFormat::prompts_csv:
            return "Run history per prompt (CSV)";
        case ExportFormat::svg_acceptance:
            return "Acceptance plot (SVG)";
        case ExportFormat::svg_speedup:
            return "Speedup plot (SVG)";
        case ExportFormat::svg_heatmap:
            return "Design-space heatmap (SVG)";
        case ExportFormat::png_acceptance:
            return "Acceptance plot (PNG)";
        case ExportFormat::png_speedup:
            return "Speedup plot (PNG)";
        case ExportFormat::png_heatmap:
            return "Design-space heatmap (PNG)";
    }
    return "?";
}

const char* export_default_file(ExportFormat f) {
    switch (f) {
        case ExportFormat::manifest:
            return "speculum-manifest.json";
        case ExportFormat::llama_cpp:
            return "speculum-llama-cpp.sh";
        case ExportFormat::vllm:
            return "speculum-vllm.sh";
        case ExportFormat::sglang:
            return "speculum-sglang.sh";
        case ExportFormat::report:
            return "speculum-report.json";
        case ExportFormat::run_report:
            return "speculum-run-report.json";
        case ExportFormat::acceptance_profile:
            return "speculation_profile.json";
        case ExportFormat::csv:
            return "speculum-sweep.csv";
        case ExportFormat::history_csv:
            return "speculum-runs.csv";
        case ExportFormat::prompts_csv:
            return "speculum-runs-per-prompt.csv";
        case ExportFormat::svg_acceptance:
            return "speculum-acceptance.svg";
        case ExportFormat::svg_speedup:
            return "speculum-speedup.svg";
        case ExportFormat::svg_heatmap:
            return "speculum-heatmap.svg";
        case ExportFormat::png_acceptance:
            return "speculum-acceptance.png";
        case ExportFormat::png_speedup:
            return "speculum-speedup.png";
        case ExportFormat::png_heatmap:
            return "speculum-heatmap.png";
    }
    return "speculum-export.txt";
}

bool export_format_binary(ExportFormat f) {
    return f == ExportFormat::png_acceptance || f == ExportFormat::png_speedup || f == ExportFormat::png_heatmap;
}

engine::SpecConfig export_spec_config(const UiSnapshot& snap, std::vector<std::string>& notes) {
    MeasureSource source;
    if (snap.dataset) source.dataset = snap.dataset->path;
    source.task          = snap.task;
    engine::SpecConfig s = spec_config_from_app(snap.config, source);
    if (!snap.config.modeled.horizontal.empty())
        notes.push_back(
            "the horizontal split of the draft positions is an analytic what-if in the editor; the "
            "manifest keeps the vertical chain");
    return s;
}

exporting::Manifest manifest_from_snapshot(const UiSnapshot& snap, const std::string& model_sha256,
                                           std::vector<std::string>& notes) {
    exporting::Manifest m;
    m.generator = "speculum " + snap.build.version;
    m.name      = describe_draft(snap.config.draft()) + ", gamma " + std::to_string(snap.config.gamma());
    if (snap.model) {
        m.model.path       = std::filesystem::absolute(snap.model->path).lexically_normal().string();
        m.model.name       = snap.model->name;
        m.model.file_bytes = snap.model->file_bytes;
        m.model.sha256     = model_sha256;
        if (snap.model->hparams) {
            m.model.architecture = snap.model->hparams->arch;
            m.model.n_layer      = snap.model->hparams->n_layer;
            m.model.n_vocab      = snap.model->hparams->n_vocab;
            m.model.n_embd       = snap.model->hparams->n_embd;
        }
    }
    m.config = export_spec_config(snap, notes);
    if (snap.measured) m.figures.measured = measured_from_view(*snap.measured);
    if (snap.modeled.error.empty()) {
        const auto& o = snap.modeled.output;
        exporting::PredictedFigures p;
        p.speedup         = o.predicted_speedup;
        p.ewif            = o.ewif;
        p.expected_tokens = o.expected_tokens;
        p.alpha           = snap.modeled.input.alpha;
        p.cost_ratio      = snap.modeled.input.c;
        p.basis           = "alpha " + snap.modeled.alpha_source + ", c = " + std::to_string(snap.modeled.input.c) +
                  (o.timing ? ", hardware roofline" : ", EWIF");
        m.figures.predicted = p;
    }
    if (snap.profile_index >= 0 && size_t(snap.profile_index) < snap.profiles.size())
        m.hardware = snap.profiles[size_t(snap.profile_index)];
    return m;
}

ExportDocument make_export(ExportFormat f, const UiSnapshot& snap, const std::string& model_sha256,
                           const exporting::GlyphSource* glyphs) {
    ExportDocument doc;
    try {
        const exporting::Manifest m = manifest_from_snapshot(snap, model_sha256, doc.notes);
        auto need_model             = [&] {
            if (!snap.model) throw std::invalid_argument("open a model first: the export names its target file");
        };
        exporting::Plot plot;
        switch (f) {
            case ExportFormat::manifest:
                need_model();
                m.validate();
                doc.text = nlohmann::json(m).dump(2) + "\n";
                return doc;
            case ExportFormat::llama_cpp:
            case ExportFormat::vllm:
            case ExportFormat::sglang: {
                need_model();
                const exporting::Engine e = f == ExportFormat::llama_cpp ? exporting::Engine::llama_cpp
                                            : f == ExportFormat::vllm    ? exporting::Engine::vllm
                                                                         : exporting::Engine::sglang;
                exporting::SnippetOptions so;
                so.manifest_path = export_default_file(ExportFormat::manifest);
                // The draft the app built for this very level 1 (Build draft GGUF): the snippets load that file.
                const bool built = snap.built_draft && snap.built_draft->spec == snap.config.draft();
                if (built) so.draft = snap.built_draft->path, so.draft_written = true;
                const exporting::EngineSnippet s = exporting::make_snippet(e, m, so);
                doc.text                         = s.text;
                for (const auto& c : s.cannot_express)
                    doc.notes.push_back(std::string(exporting::engine_name(e)) + " cannot express: " + c);
                for (const auto& fb : s.fallbacks) doc.notes.push_back("falls back to: " + fb);
                if (s.needs_draft_export && !built)
                    doc.notes.push_back("write the draft GGUF with: speculum-cli export --format draft-gguf --config " +
                                        std::string(export_default_file(ExportFormat::manifest)) + " -o " +
                                        s.draft_file + " (or Build draft GGUF below)");
                if (built) doc.notes.push_back("the draft is the one built: " + snap.built_draft->path);
                if (built && snap.built_draft->dense && snap.built_draft->target_bytes > 0)
                    doc.notes.push_back(
                        exporting::dense_draft_warning(snap.built_draft->file_bytes, snap.built_draft->target_bytes));
                else if (exporting::stored_dense(snap.config.draft()))
                    doc.notes.push_back(
                        "the draft GGUF stores the pruned or truncated weights at full size: the engines read it "
                        "dense (about the target's bytes per layer kept), not in the compact form Speculum measures");
                if (snap.config.draft().strict_subset)
                    doc.notes.push_back(
                        "strict-subset storage (the target kept as the draft plus the rest of its bits) is Speculum's "
                        "own: no engine loads it; the engines get the target and a separate dense draft");
                // The saved file carries what the panel says beside it (shell comments).
                if (!doc.notes.empty()) doc.text += "\n# notes from Speculum:\n";
                for (const std::string& n : doc.notes) doc.text += "# " + n + "\n";
                return doc;
            }
            case ExportFormat::run_report:
                if (!snap.measured || !snap.measured->complete || !snap.measured->report)
                    throw std::invalid_argument("no finished measured run yet: the report is written when a run ends");
                doc.text = snap.measured->report->dump(2) + "\n";
                return doc;
            case ExportFormat::acceptance_profile: {
                if (!snap.measured || !snap.measured->complete)
                    throw std::invalid_argument("no finished measured run yet: the profile is its acceptance");
                const AppConfig& ran = snap.measured_config ? *snap.measured_config : snap.config;
                engine::MeasurementConditions c;
                c.dataset     = snap.dataset ? std::filesystem::path(snap.dataset->path).filename().string() : "prompt";
                c.osl         = ran.spec.max_new_tokens;
                c.num_samples = int32_t(snap.measured->prompts.size());
                c.target      = snap.model ? std::filesystem::path(snap.model->path).filename().string() : "";
                c.drafter     = describe_draft(ran.draft());
                c.num_speculative_tokens          = ran.gamma();
                c.temperature                     = ran.spec.sampling.temperature;
                const engine::AcceptanceProfile p = engine::acceptance_profile(snap.measured->stats, std::move(c));
                doc.text                          = nlohmann::json(p).dump(2) + "\n";
                doc.notes.push_back("llama.cpp benchmark replay: " + engine::llama_cpp_synth_rates(p));
                doc.notes.push_back("vLLM speculative_config for a synthetic replay: " +
                                    engine::vllm_synthetic_config(p).dump());
                return doc;
            }
            case ExportFormat::report:
                need_model();
                m.validate();
                doc.text = exporting::make_report(m).dump(2) + "\n";
                return doc;
            case ExportFormat::csv:
                if (!snap.store || !snap.store->error.empty())
                    throw std::invalid_argument("no sweep yet: run one in the Design space panel");
                doc.text = sweep_csv(*snap.store);
                return doc;
            case ExportFormat::history_csv:
            case ExportFormat::prompts_csv:
                if (snap.history.empty())
                    throw std::invalid_argument("no finished measured run yet: the history lists finished runs");
                doc.text = f == ExportFormat::history_csv ? history_csv(snap.history) : prompts_csv(snap.history);
                return doc;
            case ExportFormat::svg_acceptance:
            case ExportFormat::png_acceptance:
                plot = exporting::acceptance_plot(acceptance(snap));
                break;
            case ExportFormat::svg_speedup:
            case ExportFormat::png_speedup:
                plot = exporting::speedup_plot(speedup_bars(snap), describe_draft(snap.config.draft()));
                break;
            case ExportFormat::svg_heatmap:
            case ExportFormat::png_heatmap:
                if (!snap.store || !snap.store->error.empty())
                    throw std::invalid_argument("no sweep yet: run one in the Design space panel");
                plot = exporting::heatmap_plot(heatmap(*snap.store, snap.design_selection));
                break;
        }
        if (!export_format_binary(f)) {
            doc.text = exporting::to_svg(plot);
            return doc;
        }
        doc.bytes = exporting::encode_png(exporting::rasterize(plot, glyphs));
        doc.text  = "PNG image, " + std::to_string(plot.width) + " x " + std::to_string(plot.height) + " pixels, " +
                   std::to_string(doc.bytes.size()) + " bytes: " + plot.title + "\n(no text preview; Save writes it)";
    } catch (const std::exception& e) {
        doc.error = e.what();
    }
    return doc;
}

}  // namespace speculum::ui
