// `speculum-cli export`: a chosen configuration in the forms deployments and reports use — the versioned manifest,
// the level-1 draft as a standalone GGUF, llama.cpp / vLLM / SGLang snippets (saying what each engine cannot
// express and what the export falls back to), sweep results as CSV, the JSON report, and plots as SVG or PNG.
#include "cli.h"
#include "export_inputs.h"

#include "core/export/draft_export.h"
#include "core/export/plot_svg.h"
#include "core/export/report.h"
#include "core/export/snippets.h"
#include "core/file_io.h"
#include "core/format.h"
#include "core/model/model.h"
#include "core/store/csv.h"
#include "core/store/filter.h"
#include "core/store/summary.h"
#ifdef SPECULUM_CLI_HAVE_UI
#include "ui/plot_font.h"
#endif

#include <oneapi/tbb/global_control.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

namespace speculum::cli {

namespace {

const char* kFormats = "manifest, draft-gguf, llama.cpp, vllm, sglang, csv, report, svg, png";

const char* kExportHelp = R"(Formats (--format):
  manifest    versioned JSON record of the configuration: target path + SHA-256 + architecture, every draft
              level, verification, decoding parameters, measured/predicted figures, hardware (docs/export.md);
              `speculum-cli run --config MANIFEST` reproduces the run
  draft-gguf  draft level --level as a standalone GGUF llama.cpp loads with -md (needs -o)
  llama.cpp   llama-server / llama-speculative-simple command lines
  vllm        `vllm serve --speculative-config '{...}'` (the speculative_config JSON)
  sglang      `python -m sglang.launch_server --speculative-...` flags
  csv         sweep results of --db (filtered by --filter)
  report      JSON report: manifest, acceptance per position, speedup figures, the run report (--run-report)
  svg, png    --plot acceptance | speedup (from the figures), waterfall (where the speedup went, from
              --run-report) or heatmap (from --db, axes --x/--y, --metric)
Inputs: --config takes a manifest or a SpecConfig (docs/engine.md); measured figures come from a manifest or
from `speculum-cli run --report FILE` given as --run-report. Engine snippets print what the engine cannot
express and what the export falls back to, in the snippet and on stderr.)";

// Text to -o FILE or stdout.
void emit(const std::optional<std::string>& out, const std::string& text, const std::string& what) {
    if (!out) {
        std::cout << text;
        return;
    }
    write_file_atomic(*out, text);
    std::cout << "wrote " << what << ": " << *out << "\n";
}

std::pair<int, int> parse_size(const std::string& s) {
    int a = 0, b = 0;
    char x = 0, extra = 0;
    if (std::sscanf(s.c_str(), "%d%c%d%c", &a, &x, &b, &extra) != 3 || x != 'x' || a < 64 || b < 64 || a > 8192 ||
        b > 8192)
        throw UsageError("--size: expected WIDTHxHEIGHT with each in 64..8192, got '" + s + "'");
    return {a, b};
}

std::vector<store::ResultRow> query_rows(const Args& args) {
    if (!args.has("db")) throw UsageError("--db FILE (a sweep result store) is required for this format/plot");
    std::vector<store::Filter> filters;
    try {
        filters = store::parse_filters(args.value_or("filter", ""));
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    auto db = store::ResultStore::open(*args.value("db"), store::ResultStore::Mode::read_only);
    return db->query(filters);
}

// Where the speedup went, from a run report's waterfall: each step a measured bar, the headroom a modeled one.
exporting::Plot waterfall_plot(const nlohmann::json& report, int w, int h) {
    if (report.is_null()) throw UsageError("--plot waterfall needs --run-report FILE (speculum-cli run --report)");
    const nlohmann::json wf = report.value("waterfall", nlohmann::json::object());
    if (!wf.contains("steps"))
        throw std::runtime_error("the run report has no waterfall: " +
                                 wf.value("unavailable", std::string("it was written before the waterfall existed "
                                                                     "(run it again with this build)")));
    std::vector<exporting::SpeedupBar> bars;
    for (const auto& s : wf["steps"])
        bars.push_back({(bars.empty() ? "" : "- ") + s.at("name").get<std::string>(), s.at("speedup").get<double>(),
                        !s.value("modeled", false)});
    if (wf.contains("headroom"))
        bars.push_back({"headroom: always-right drafter", wf["headroom"].at("oracle_speedup").get<double>(), false});
    return exporting::speedup_plot(bars, "where the speedup went, from the run's own times", w, h);
}

exporting::Plot make_plot(const Args& args, const exporting::Manifest& m, const nlohmann::json& run_report) {
    const std::string which = args.value_or("plot", "");
    if (which.empty()) throw UsageError("--plot is required for svg/png: acceptance, speedup, waterfall or heatmap");
    const bool heat = which == "heatmap";
    auto [w, h]     = parse_size(args.value_or("size", heat ? "640x480" : "640x400"));
    if (which == "acceptance") {
        if (!m.figures.measured && !m.figures.predicted)
            throw std::runtime_error("the acceptance plot needs figures: a manifest with figures, or --run-report");
        return exporting::acceptance_plot(exporting::acceptance_data(m), w, h);
    }
    if (which == "speedup") {
        if (!m.figures.measured && !m.figures.predicted)
            throw std::runtime_error("the speedup plot needs figures: a manifest with figures, or --run-report");
        return exporting::speedup_plot(exporting::speedup_bars(m), exporting::describe_config(m.config), w, h);
    }
    if (heat) {
        const auto rows = query_rows(args);
        if (!args.has("x") || !args.has("y"))
            throw UsageError(
                "the heatmap needs --x and --y: JSON pointers into the stored configurations, e.g. "
                "--x /gamma/0 --y /levels/0/prune/ratio");
        const std::string metric = args.value_or("metric", store::speedup_metric(rows));
        exporting::HeatmapData d;
        try {
            d = exporting::heatmap_from_rows(rows, *args.value("x"), *args.value("y"), metric);
        } catch (const std::invalid_argument& e) {
            throw UsageError(e.what());
        }
        if (d.values.empty())
            throw std::runtime_error("no stored row has numbers at " + *args.value("x") + " and " + *args.value("y") +
                                     " and the metric '" + metric + "'");
        return exporting::heatmap_plot(d, w, h);
    }
    if (which == "waterfall") return waterfall_plot(run_report, w, h);
    throw UsageError("--plot: expected acceptance, speedup, waterfall or heatmap, got '" + which + "'");
}

void print_limits(std::ostream& os, const exporting::EngineSnippet& s) {
    const std::string e = exporting::engine_name(s.engine);
    if (s.cannot_express.empty()) os << e << " expresses everything in this configuration\n";
    for (const auto& c : s.cannot_express) os << e << " cannot express: " << c << "\n";
    for (const auto& f : s.fallbacks) os << "export falls back to: " << f << "\n";
    if (s.needs_draft_export)
        os << "the snippet loads the exported draft " << s.draft_file << ": write it with --format draft-gguf -o "
           << s.draft_file << "\n";
}

}  // namespace

int cmd_export(int argc, char** argv) {
    Args args("export",
              {{"format", 'f', true, "FORMAT", kFormats},
               {"config", 'c', true, "FILE", "a manifest or a SpecConfig JSON (default: the default config)"},
               {"model", 'm', true, "FILE", "target GGUF (default: the manifest's target, else the bundled one)"},
               {"run-report", 0, true, "FILE", "measured figures from `speculum-cli run --report FILE`"},
               {"hardware", 0, true, "ID|FILE", "hardware profile to record (bundled id or JSON file)"},
               {"name", 0, true, "TEXT", "manifest: a name for the configuration"},
               {"no-hash", 0, false, "", "manifest: do not compute the target's SHA-256"},
               {"level", 0, true, "N", "draft-gguf: the draft level to write (default 1)"},
               {"drop-unsupported", 0, false, "", "draft-gguf: write a layer-skip / KV-transform draft without them"},
               {"target", 0, true, "PATH", "snippets: the target as the engine loads it (default: the manifest's)"},
               {"draft", 0, true, "PATH", "snippets: the exported draft GGUF (default: <target>-draft.gguf)"},
               {"db", 0, true, "FILE", "csv / heatmap: the sweep result store"},
               {"filter", 0, true, "EXPR", "csv / heatmap: rows matching field<op>value clauses (see results)"},
               {"plot", 0, true, "NAME", "svg / png: acceptance, speedup, waterfall or heatmap"},
               {"x", 0, true, "PTR", "heatmap: x axis, a JSON pointer into the configurations (e.g. /gamma/0)"},
               {"y", 0, true, "PTR", "heatmap: y axis (e.g. /levels/0/prune/ratio)"},
               {"metric", 0, true, "NAME", "heatmap: metric column (default: speedup, else predicted_speedup)"},
               {"size", 0, true, "WxH", "svg / png: pixels (default 640x400, heatmap 640x480)"},
               {"out", 'o', true, "FILE", "output file (default: stdout; required for draft-gguf and png)"},
               {"threads", 't', true, "N", "worker threads; 0 = all cores (default 0)"}},
              {});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
                         "Export a chosen configuration for deployment (manifest, draft GGUF, engine "
                         "snippets) and its results as reports (CSV, JSON, SVG, PNG).")
                  << "\n"
                  << kExportHelp << "\n";
        return 0;
    }
    if (!args.has("format")) throw UsageError(std::string("--format is required: ") + kFormats);
    const std::string format = *args.value("format");
    const auto out           = args.value("out");
    const int threads        = static_cast<int>(args.int_or("threads", 0, 0, 4096));
    std::unique_ptr<tbb::global_control> limit;
    if (threads > 0)
        limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);

    if (format == "csv") {
        const auto rows = query_rows(args);
        std::ostringstream s;
        store::write_results_csv(s, rows);
        emit(out, s.str(), std::to_string(rows.size()) + " row(s) as CSV");
        return 0;
    }
    const bool heatmap = (format == "svg" || format == "png") && args.value_or("plot", "") == "heatmap";
    const auto engine  = exporting::parse_engine(format);
    const bool known   = engine || heatmap || format == "manifest" || format == "draft-gguf" || format == "report" ||
                       format == "svg" || format == "png";
    if (!known) throw UsageError("--format: unknown format '" + format + "' (one of: " + kFormats + ")");
    if ((format == "draft-gguf" || format == "png") && !out) throw UsageError("--format " + format + " needs -o FILE");
    if (out) check_output_file(*out);

    ExportInputOptions io;
    io.config                    = args.value_or("config", "");
    io.model                     = args.value_or("model", "");
    io.run_report                = args.value_or("run-report", "");
    io.hardware                  = args.value_or("hardware", "");
    io.name                      = args.value_or("name", "");
    io.need_target               = format == "manifest" || format == "draft-gguf";
    io.hash                      = format == "manifest" && !args.has("no-hash");
    const ExportInputs in        = heatmap ? ExportInputs{} : load_export_inputs(io);
    const exporting::Manifest& m = in.manifest;

    if (format == "manifest") {
        emit(out, nlohmann::json(m).dump(2) + "\n", "manifest");
        return 0;
    }
    if (format == "report") {
        emit(out, exporting::make_report(m, in.run_report).dump(2) + "\n", "report");
        return 0;
    }
    if (engine) {
        exporting::SnippetOptions so;
        so.target        = args.value_or("target", "");
        so.draft         = args.value_or("draft", "");
        so.manifest_path = io.config.empty() ? "manifest.json" : io.config;
        exporting::EngineSnippet s;
        try {
            s = exporting::make_snippet(*engine, m, so);
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(e.what());
        }
        emit(out, s.text, std::string(exporting::engine_name(*engine)) + " snippet");
        print_limits(out ? std::cout : std::cerr, s);
        return 0;
    }
    if (format == "draft-gguf") {
        const int64_t level           = args.int_or("level", 1, 1, int64_t(m.config.levels.size()));
        const drafts::DraftSpec& spec = m.config.levels[size_t(level - 1)];
        const model::Model target     = model::Model::load(in.target_path, {}, {}, model::WeightMemory::mapped);
        exporting::DraftExportOptions eo;
        eo.drop_unsupported = args.has("drop-unsupported");
        eo.drafter.progress = [last = -1](double f, const std::string& what) mutable {
            const int pct = static_cast<int>(f * 100.0);
            if (pct / 25 != last / 25) std::cerr << "building: " << pct << "% " << what << "\n";
            last = pct;
        };
        exporting::DraftExportResult r;
        try {
            r = exporting::export_draft_gguf(target, spec, *out, eo);
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error("draft level " + std::to_string(level) + ": " + e.what());
        }
        std::cout << "wrote draft level " << level << " (" << r.description << "): " << r.path << ", " << r.n_layer
                  << " layers, " << mib(r.file_bytes) << "\n";
        for (const auto& d : r.dropped) std::cout << "not carried by the file: " << d << "\n";
        std::cout << "llama.cpp: llama-server -m " << in.target_path << " -md " << r.path << " --draft-max "
                  << m.config.draft_length(level - 1) << "\n";
        return 0;
    }
    // svg / png
    const exporting::Plot plot = make_plot(args, m, in.run_report);
    if (format == "svg") {
        emit(out, exporting::to_svg(plot), "SVG plot");
        return 0;
    }
#ifdef SPECULUM_CLI_HAVE_UI
    exporting::write_file(*out, exporting::encode_png(exporting::rasterize(plot, &ui::plot_glyphs())));
    std::cout << "wrote PNG plot (" << plot.width << "x" << plot.height << "): " << *out << "\n";
    return 0;
#else
    throw std::runtime_error(
        "PNG text needs the ui library's font, and this speculum-cli was built without it "
        "(SPECULUM_BUILD_APP=OFF); export --format svg instead");
#endif
}

}  // namespace speculum::cli
