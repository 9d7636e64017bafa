// `speculum-cli run`: one speculative decoding experiment from a SpecConfig JSON file or a deployment manifest
// (which names its target and is checked against its SHA-256) — every prompt through the engine and the
// autoregressive baseline, a readable summary (speedup, mean accepted length, α per position, per-level cost,
// lossless check when greedy) on stdout, the full report as JSON with --report, a manifest with --manifest-out.
#include "cli.h"

#include "core/analytic/cost.h"
#include "core/engine/acceptance_profile.h"
#include "core/engine/speedup_waterfall.h"
#include "core/export/manifest.h"
#include "core/file_io.h"
#include "core/format.h"
#include "core/json_input.h"
#include "core/model/model.h"
#include "core/model/synthetic.h"
#include "core/session/run.h"
#include "core/session/run_report.h"

#include <oneapi/tbb/global_control.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

namespace speculum::cli {

namespace {

std::vector<int32_t> parse_id_list(const std::string& s) {
    std::vector<int32_t> ids;
    std::string w;
    std::istringstream in(s);
    while (std::getline(in, w, ',')) {
        std::istringstream words(w);
        std::string t;
        while (words >> t) {
            size_t used = 0;
            long long v = -1;
            try {
                v = std::stoll(t, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used != t.size() || v < 0 || v > INT32_MAX)
                throw UsageError("--prompt-ids: '" + t + "' is not a token id");
            ids.push_back(static_cast<int32_t>(v));
        }
    }
    if (ids.empty()) throw UsageError("--prompt-ids: no token ids given");
    return ids;
}

void print_summary(std::ostream& os, const engine::RunStats& s, bool greedy, bool baseline, bool repacked) {
    os << "generated " << s.n_generated << " tokens in " << s.n_steps << " target passes; drafted " << s.n_drafted
       << ", accepted " << s.n_accepted << "\n";
    os << "mean accepted length (tokens per target pass): " << fmt("%.3f", s.mean_accepted_length()) << "\n";
    os << "alpha per position (accepted/reached):";
    const std::vector<double> a = s.alpha();
    for (size_t i = 0; i < a.size(); ++i)
        os << "  " << i + 1 << ":" << fmt("%.3f", a[i]) << " (" << s.pos_accepted[i] << "/" << s.pos_reached[i] << ")";
    os << "\naccepted-length histogram:";
    for (size_t i = 0; i < s.accepted_len_hist.size(); ++i) os << "  " << i << ":" << s.accepted_len_hist[i];
    os << "\nlevels:\n";
    for (const engine::LevelStats& l : s.levels) {
        os << "  " << l.level << " " << (l.level == 0 ? "target " : "draft  ") << l.name << ": calls " << l.n_calls
           << ", passes " << l.n_forward << ", " << fmt("%.3f s", l.t_s) << ", c = " << fmt("%.3f", l.cost_ratio)
           << ", read " << mib(l.bytes_weights + l.bytes_kv)
           << (l.bytes_modeled || l.bytes_kv_modeled ? " (modeled)" : "");
        if (l.flops > 0) os << ", " << fmt("%.3g", l.flops / 1e9) << " GFLOP";
        if (l.n_reviewed > 0) os << ", reviewed " << l.n_reviewed << " accepted " << l.n_review_accepted;
        os << "\n";
    }
    double drafts_prompt = 0.0;  // the drafters' prompt passes, inside the prefill time
    for (size_t i = 1; i < s.levels.size(); ++i) drafts_prompt += s.levels[i].t_prefill_s;
    os << "time: prefill " << fmt("%.3f s", s.t_prefill_s);
    if (drafts_prompt > 0.0005) os << " (drafts " << fmt("%.3f s", drafts_prompt) << ")";
    os << ", decode " << fmt("%.3f s", s.t_decode_s) << " (draft " << fmt("%.3f s", s.t_draft_s) << ", verify "
       << fmt("%.3f s", s.t_verify_s) << ")\n";
    os << "bytes read per generated token (BPT): " << mib(static_cast<uint64_t>(s.bytes_per_token))
       << (s.any_bytes_modeled() ? " (modeled: a draft's compressed weights or KV are counted as modeled)" : "")
       << "\n";
    if (const engine::ExpertUsage& u = s.experts; !u.empty()) {
        // A mixture of experts: what the verification passes read, measured, beside the modeled union under
        // independent uniform routing (analytic::expected_distinct_experts).
        os << "experts (" << u.n_expert_used << " of " << u.n_expert << " per token): distinct experts per layer and "
           << "pass, measured (modeled uniform):";
        for (size_t w = 1; w < u.width_passes.size(); ++w)
            if (u.width_passes[w] > 0)
                os << "  " << w << " tokens: " << fmt("%.1f", u.mean_distinct(w)) << " ("
                   << fmt("%.1f", analytic::expected_distinct_experts(u.n_expert, u.n_expert_used, int(w))) << ")";
        os << "\n";
    }
    if (const engine::RecurrentReport& r = s.recurrent; !r.empty()) {
        // A hybrid target: what its recurrent state cost to keep and roll back (measured; bytes held by the strategy).
        const double per = r.passes > 0 ? 1e3 / double(r.passes) : 0.0;
        os << "recurrent state (" << r.strategy << " rollback): " << r.rollbacks << " rollbacks in " << r.passes
           << " verification passes; per pass " << fmt("%.3f ms", (r.keep_s + r.restore_s) * per) << " (keep "
           << fmt("%.3f", r.keep_s * per) << ", restore " << fmt("%.3f", r.restore_s * per) << ")";
        if (r.tokens_rerun > 0) os << ", " << r.tokens_rerun << " tokens rerun";
        os << "; held at most " << mib(r.peak_bytes) << " beside the " << mib(r.state_bytes) << " state\n";
    }
    if (s.bpt_cats_eq4 > 0 && s.cats_layers.size() == 3)
        os << "CATS BPT (Eq. 4, decoder weights only; layers: draft 0.." << s.cats_layers[0] - 1
           << ", shallow verifier " << s.cats_layers[0] << ".." << s.cats_layers[1] - 1 << ", target "
           << s.cats_layers[1] << ".." << s.cats_layers[2] - 1 << "): " << mib(static_cast<uint64_t>(s.bpt_cats_eq4))
           << "\n";
    os << "speculative: " << fmt("%.2f", s.tokens_per_s) << " tokens/s";
    if (baseline)
        os << " | autoregressive: " << fmt("%.2f", s.baseline_tokens_per_s) << " tokens/s | speedup "
           << fmt("%.3f", s.speedup) << "x";
    os << "\n";
    const std::string ref = repacked ? "the repacked verifier's" : "the target's";
    if (greedy && s.lossless_checked)
        os << "lossless check: "
           << (s.lossless_mismatch < 0
                   ? "identical to " + ref + " own greedy output"
                   : "DIFFERS from " + ref + " greedy output at token " + std::to_string(s.lossless_mismatch))
           << "\n";
    if (greedy && s.lossless_checked && repacked)
        os << "repacked verifier vs file layout: "
           << (s.verifier_mismatch < 0 ? "identical greedy output"
                                       : "greedy outputs part at token " + std::to_string(s.verifier_mismatch) +
                                             " (int8 activations round differently; docs/engine.md)")
           << "\n";
}

// Where the speedup went, from acceptance alone to the measured speedup, and the headroom above it.
void print_waterfall(std::ostream& os, const engine::SpeedupWaterfall& w) {
    if (!w.unavailable.empty()) return;
    os << "where the speedup went (measured, from this run's times):\n";
    for (const engine::WaterfallStep& s : w.steps) {
        std::string head = (&s == &w.steps.front() ? "  " : "  - ") + s.name;
        head.resize(std::max<size_t>(head.size(), 22), ' ');
        os << head << fmt("%6.2fx", s.speedup);
        if (&s != &w.steps.front()) os << fmt(" (%+.2f)", s.delta);
        os << "  " << s.detail << (s.modeled ? " (modeled)" : "") << "\n";
    }
    if (w.oracle_width > 0)
        os << "headroom (modeled): " << fmt("%.2f", w.oracle_speedup) << "x, " << w.oracle_detail << "\n";
}

// A random-weight target from a SyntheticSpec JSON file (missing keys keep their defaults).
model::SyntheticSpec read_synthetic(const std::string& path) {
    const std::string text = read_input_file(path, kMaxConfigFileBytes, "synthetic model spec");
    model::SyntheticSpec spec;
    try {
        from_json(parse_json(text, "spec"), spec);
        spec.validate();
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    return spec;
}

}  // namespace

int cmd_run(int argc, char** argv) {
    Args args(
        "run",
        {{"config", 0, true, "CFG.json",
          "speculative decoding config (docs/engine.md) or a deployment manifest "
          "(docs/export.md)"},
         {"model", 'm', true, "FILE", "target GGUF (default: the manifest's target, else the bundled one)"},
         {"synthetic", 0, true, "SPEC.json", "target = a random-weight model of this SyntheticSpec (benchmarks)"},
         {"dataset", 0, true, "FILE.jsonl", "prompt suite; overrides the config's prompt"},
         {"task", 0, true, "NAME", "only the dataset's prompts of this task"},
         {"prompt", 'p', true, "TEXT", "prompt text (overrides the config's)"},
         {"prompt-ids", 0, true, "LIST", "prompt as token ids, e.g. 1,15,30 (overrides the config's)"},
         {"max-new", 'n', true, "N", "tokens to generate per prompt (overrides the config's)"},
         {"report", 0, true, "FILE", "write the full JSON report here"},
         {"profile-out", 0, true, "FILE",
          "write the measured acceptance as speculation_profile.json (conditional and marginal rates per position, "
          "for predict --acceptance, vLLM's and llama.cpp's synthetic acceptance)"},
         {"manifest-out", 0, true, "FILE",
          "write a deployment manifest of this run (target SHA-256, "
          "measured and predicted figures)"},
         {"no-baseline", 0, false, "", "skip the autoregressive baseline (no speedup, no lossless check)"},
         {"repeats", 0, true, "N",
          "passes over the prompts, each prompt's speculative run and baseline back to back (A B A B): exactly N, "
          "or at most N with --min-time/--ci-width/--max-time (default 1)"},
         {"min-time", 0, true, "S", "repeat passes for at least S seconds (up to --repeats, default 1000)"},
         {"max-time", 0, true, "S", "start no pass after S seconds"},
         {"ci-width", 0, true, "W",
          "stop once the 95 % interval of the median speedup is narrower than W of it (e.g. 0.05; up to "
          "--repeats, default 1000)"},
         {"reference", 0, false, "", "use the scalar reference forward pass (exact batched = sequential)"},
         {"repack", 0, false, "",
          "keep the target in the file's layout and verify on a copy of it in large pages with its Q8_0 "
          "matrices repacked (q8_0_x8) for the AVX-512 VNNI kernels; drafts and the baseline read the file "
          "layout (a second copy of the weights in memory)"},
         {"no-repack", 0, false, "",
          "keep the target in the file's layout (default: Q8_0 matrices repacked to q8_0_x8 in large pages "
          "where the CPU has the AVX-512 VNNI kernels)"},
         {"threads", 't', true, "N", "worker threads; 0 = all cores (default 0)"}},
        {});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
            "Run speculative decoding as a config describes (draft levels, chain or tree, "
            "cascades) and measure it against plain decoding of the same target.");
        return 0;
    }
    const auto cfg_path = args.value("config");
    if (!cfg_path) throw UsageError("--config is required");
    for (const char* o :
         {"report", "manifest-out", "profile-out"})  // a bad output path is refused before the run, not after
        if (auto out = args.value(o)) check_output_file(*out);
    engine::SpecConfig cfg;
    std::optional<exporting::Manifest> manifest;  // when --config names a manifest
    {
        const std::string text = read_input_file(*cfg_path, kMaxConfigFileBytes, "config file");
        nlohmann::json j;
        try {
            j = parse_json(text, "config");
            if (exporting::is_manifest(j)) {
                manifest = j.get<exporting::Manifest>();
                manifest->validate();
                cfg = manifest->config;
            } else {
                from_json(j, cfg);
            }
        } catch (const nlohmann::json::parse_error& e) {
            throw std::runtime_error(*cfg_path + ": not valid JSON: " + e.what());
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(*cfg_path + ": " + e.what());
        }
    }
    if (auto v = args.value("dataset")) cfg.dataset = *v;
    if (auto v = args.value("task")) cfg.task = *v;
    if (auto v = args.value("prompt")) cfg.prompt = *v, cfg.dataset.clear();
    if (auto v = args.value("prompt-ids")) cfg.prompt_ids = parse_id_list(*v), cfg.prompt.clear(), cfg.dataset.clear();
    cfg.max_new_tokens = static_cast<int32_t>(args.int_or("max-new", cfg.max_new_tokens, 1, 4096));
    if (args.has("no-baseline")) cfg.baseline = false;
    engine::Repeats& rep = cfg.repeats;
    if (args.has("repeats")) rep.min = rep.max = static_cast<int32_t>(args.int_or("repeats", 1, 1, 1000));
    // --max-time starts no pass after its budget: with --repeats N, N is the most, not a minimum to honour first
    // (`--repeats 1000 --max-time 3` ran all 1,000 passes).
    if (args.has("max-time")) rep.min = 1;
    if (args.has("min-time") || args.has("ci-width")) {
        // Adaptive: at least one pass (or --repeats' count is the most), stopping by time or by precision.
        rep.max = args.has("repeats") ? rep.max : 1000;
        rep.min = 1;
    }
    rep.min_time_s = args.float_or("min-time", rep.min_time_s, 0.0, 86400.0);
    rep.max_time_s = args.float_or("max-time", rep.max_time_s, 0.0, 86400.0);
    // --min-time alone: time decides (no precision target); --ci-width: the interval does.
    rep.rel_width = args.float_or("ci-width", args.has("min-time") ? 0.0 : rep.rel_width, 1e-6, 10.0);
    if (rep.max > 1 && !cfg.baseline) throw UsageError("--repeats, --min-time and --ci-width need the baseline");
    if (args.has("reference")) cfg.context.path = model::ForwardPath::reference;
    const int threads = static_cast<int>(args.int_or("threads", 0, 0, 4096));
    std::unique_ptr<tbb::global_control> limit;
    if (threads > 0)
        limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);

    if (args.has("model") && args.has("synthetic")) throw UsageError("give at most one of --model and --synthetic");
    std::string manifest_target;  // the manifest's target, found as recorded or beside the manifest
    if (manifest && !args.has("model") && !args.has("synthetic")) {
        manifest_target = exporting::resolve_model_path(*manifest, *cfg_path);
        if (manifest_target.empty())
            throw std::runtime_error(*cfg_path + ": the manifest's target " + manifest->model.path +
                                     " does not exist (nor beside the manifest); give it with -m");
    }
    session::TargetSource source = args.has("model") ? session::TargetSource::file(*args.value("model"))
                                   : args.has("synthetic")
                                       ? session::TargetSource::random(read_synthetic(*args.value("synthetic")))
                                   : !manifest_target.empty() ? session::TargetSource::file(manifest_target)
                                                              : session::TargetSource::bundled();
    const std::string target_path =
        args.has("synthetic") ? "synthetic:" + *args.value("synthetic") : source.resolved_path();
    if (manifest && !args.has("synthetic")) {
        // A different file may decode differently: say so, but run (the user may mean it).
        const std::string warning = exporting::check_model_hash(*manifest, target_path);
        if (!warning.empty()) std::cerr << "warning: " << warning << "\n";
    }
    if (args.has("repack") && args.has("no-repack")) throw UsageError("give at most one of --repack and --no-repack");
    // By default the target's Q8_0 matrices are repacked (WeightMemory::automatic); --repack and --no-repack keep
    // the file layout. --repack: the verification passes run on a repacked copy; drafts derived from the target and
    // the autoregressive baseline read the file layout (docs/engine.md, "A separate verifier").
    session::TargetOptions topts;
    topts.memory               = args.has("no-repack") ? model::WeightMemory::mapped : model::WeightMemory::automatic;
    topts.repacked_verifier    = args.has("repack");
    session::Target tgt        = session::load_target(source, topts);
    tgt.path                   = target_path;
    const model::Model& target = *tgt.model;
    if (args.has("repack") && !tgt.verifier)
        std::cerr << "warning: --repack: " << tgt.verifier_note << "; verifying on the target itself\n";

    session::RunHooks hooks;
    hooks.on_start = [&](const std::string& drafter, const std::vector<session::RunPrompt>&) {
        std::cout << "target: " << target_path << " (" << target.hparams().n_layer << " layers, "
                  << mib(target.weight_bytes_per_token()) << " read per token, weights "
                  << model::weight_memory_name(target.weight_memory()) << ")\n"
                  << "drafter: " << drafter << "\n"
                  << (tgt.verifier ? "verifier: " + tgt.verifier_note + "\n" : "");
        if (args.has("synthetic"))  // costs are real; what a random model accepts says nothing about a trained one
            std::cout << "note: random weights: times, bytes and experts read are real; acceptance and speedup are "
                         "meaningless for any trained model\n";
    };
    hooks.on_prompt_done = [&](size_t, const session::PromptRun& pr, const engine::RunStats&) {
        const session::RunPrompt& p = pr.prompt;
        const engine::RunResult& r  = pr.result;
        std::cout << "prompt " << p.id << (p.task.empty() ? "" : " [" + p.task + "]") << ": " << p.tokens.size()
                  << " tokens in, " << r.tokens.size() << " out, mean accepted length "
                  << fmt("%.3f", r.stats.mean_accepted_length());
        if (cfg.baseline) std::cout << ", speedup " << fmt("%.3f", r.stats.speedup) << "x";
        std::cout << "\n";
    };
    session::RunOutcome outcome;
    try {
        outcome = session::run(cfg, tgt, hooks);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(*cfg_path + ": " + e.what());
    }
    const engine::RunStats& total    = outcome.total;
    const session::RepeatSummary& rs = outcome.repeats;
    if (!outcome.verifier_note.empty()) std::cout << "verifier: " << outcome.verifier_note << "\n";
    std::cout << "---- all prompts ----\n";
    print_summary(std::cout, total, cfg.greedy(), cfg.baseline, tgt.verifier != nullptr);
    if (cfg.baseline) print_waterfall(std::cout, engine::speedup_waterfall(total));
    if (rs.passes > 1) {
        auto line = [](const char* what, const analytic::MedianInterval& m, const char* unit) {
            std::cout << what << fmt(" %.3f", m.median) << unit << " [" << fmt("%.3f", m.lo) << ", "
                      << fmt("%.3f", m.hi) << "]";
        };
        std::cout << "repeated: " << rs.passes << " passes, " << rs.speedup.n << " speedup pairs in "
                  << fmt("%.1f", rs.wall_s) << " s (stopped: " << rs.stop << ")\n";
        line("  speedup median", rs.speedup, "x");
        std::cout << fmt(", %.0f %% interval", 100.0 * rs.speedup.coverage) << "\n";
        line("  tokens/s median", rs.tokens_per_s, "");
        line(", autoregressive", rs.baseline_tokens_per_s, "");
        std::cout << "\n";
        if (rs.cost_ratio.n > 0) {
            line("  level-1 c median", rs.cost_ratio, "");
            std::cout << "\n";
        }
    }
    if (rs.loaded())
        std::cerr << "warning: other processes used " << fmt("%.0f", 100.0 * *rs.other_load)
                  << " % of the CPU during the run: the timings are suspect; measure on a quiet machine\n";
    const nlohmann::json report = session::run_report(cfg, outcome, tgt, args.has("synthetic"));
    if (outcome.cassandra_j) {
        std::cout << "Cassandra J (measured acceptance "
                  << fmt("%.3f", double(total.n_accepted) / double(total.n_drafted)) << ", mean context "
                  << fmt("%.0f", outcome.mean_context) << " tokens): " << fmt("%.4g", *outcome.cassandra_j)
                  << " per bit\n";
    }
    if (auto out = args.value("manifest-out")) {
        if (args.has("synthetic")) throw UsageError("--manifest-out needs a target file (-m), not --synthetic");
        exporting::Manifest m = manifest ? *manifest : exporting::Manifest{};
        if (!manifest) m.name = std::filesystem::path(*cfg_path).stem().string();
        m.generator  = exporting::generator_string();
        m.created_at = exporting::utc_now_iso8601();
        m.model      = exporting::identify_model(target, target_path);
        m.config     = cfg;
        m.figures.measured =
            exporting::measured_from_stats(total, static_cast<int32_t>(outcome.runs.size()), "speculum-cli run");
        m.figures.predicted = exporting::predict_from_measured(*m.figures.measured, cfg);
        exporting::save_manifest(m, *out);
        std::cout << "manifest: " << *out << "\n";
    }
    if (auto out = args.value("report")) {
        write_file_atomic(*out, report.dump(2) + "\n");
        std::cout << "report: " << *out << "\n";
    }
    if (auto out = args.value("profile-out")) {
        engine::MeasurementConditions c;
        c.dataset     = cfg.dataset.empty() ? "prompt" : std::filesystem::path(cfg.dataset).filename().string();
        c.osl         = cfg.max_new_tokens;
        c.num_samples = int32_t(outcome.runs.size());
        c.target      = std::filesystem::path(target_path).filename().string();
        c.drafter     = cfg.levels.empty() ? "" : cfg.levels[0].name();
        c.num_speculative_tokens          = cfg.gamma.empty() ? 0 : cfg.gamma[0];
        c.temperature                     = cfg.sampling.temperature;
        const engine::AcceptanceProfile p = engine::acceptance_profile(total, std::move(c));
        write_file_atomic(*out, nlohmann::json(p).dump(2) + "\n");
        std::cout << "acceptance profile: " << *out << " (synthetic replay: llama.cpp "
                  << engine::llama_cpp_synth_rates(p) << "; vLLM speculative_config "
                  << engine::vllm_synthetic_config(p).dump() << ")\n";
    }
    return 0;
}

}  // namespace speculum::cli
