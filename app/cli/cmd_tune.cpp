// `speculum-cli tune`: the best way to draft for a target on this machine, measured. Runs sweep::run_tune (the
// same search the app's Tune panel runs) into a result store, prints each measurement as it lands, then the
// winner with its confirmed interval, where its speedup went, the headroom, the Pareto front and the snippets for
// llama.cpp, vLLM and SGLang. Ctrl-C stops it; running it again resumes from the store.
#include "cli.h"
#include "sweep_common.h"

#include "core/export/manifest.h"
#include "core/export/snippets.h"
#include "core/file_io.h"
#include "core/format.h"
#include "core/resources.h"
#include "core/store/hash.h"
#include "core/sweep/engine_evaluator.h"
#include "core/sweep/sweep_spec.h"
#include "core/sweep/tune.h"

#include <oneapi/tbb/global_control.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <thread>

namespace speculum::cli {

namespace {

std::atomic<bool> g_stop{false};
extern "C" void on_tune_sigint(int) {
    g_stop = true;
}

// "600", "600s", "10m", "1.5h" -> seconds.
double parse_budget(const std::string& text) {
    size_t used = 0;
    double v    = 0;
    try {
        v = std::stod(text, &used);
    } catch (const std::exception&) {
        throw UsageError("--budget: '" + text + "' is not a duration (e.g. 600, 90s, 10m, 1h)");
    }
    const std::string unit = text.substr(used);
    const double scale     = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : -1;
    if (scale < 0 || !(v > 0)) throw UsageError("--budget: '" + text + "' is not a duration (e.g. 600, 90s, 10m, 1h)");
    return v * scale;
}

std::vector<std::string> files_of(const Args& args, const char* name) {
    std::vector<std::string> out;
    for (const std::string& v : args.values(name)) {
        std::stringstream in(v);
        std::string item;
        while (std::getline(in, item, ','))
            if (!item.empty()) out.push_back(item);
    }
    return out;
}

std::string speedup_text(const std::optional<double>& v) {
    return v ? speculum::fmt("%.2fx", *v) : std::string("-");
}

void print_candidates(const sweep::TuneResult& r, size_t most) {
    std::cout << "\nconfigurations (measured with the most prompts first, then by speedup; * = on the Pareto front of "
                 "speedup against the draft's own weights, beyond the target's):\n";
    size_t shown = 0;
    for (const sweep::TuneCandidate& c : r.candidates) {
        if (shown++ == most) {
            std::cout << "  ... " << r.candidates.size() - most << " more (--out FILE has them all)\n";
            break;
        }
        std::cout << (c.on_front ? "  * " : "    ") << c.label << ": measured " << speedup_text(c.measured_speedup);
        if (c.measured_speedup) std::cout << " (" << c.prompts << (c.prompts == 1 ? " prompt)" : " prompts)");
        if (c.modeled_speedup) std::cout << ", modeled " << speculum::fmt("%.2fx", *c.modeled_speedup);
        if (c.state != "measured") std::cout << " - " << c.state;
        std::cout << "\n";
    }
}

void print_winner(const sweep::TuneResult& r) {
    if (!r.winner) {
        std::cout << "\nno configuration was measured to the end (see the states above)\n";
        return;
    }
    const engine::SpecConfig& w = *r.winner;
    std::cout << "\nbest: " << (w.levels.empty() ? std::string("?") : w.levels[0].name());
    if (w.levels.size() > 1) std::cout << " <- " << w.levels[1].name();
    std::cout << ", gamma " << w.gamma[0] << (w.verification == engine::Verification::tree ? " (tree)" : "") << "\n";
    if (r.confirmed && r.confirmed->speedup.n > 0) {
        const auto& m = r.confirmed->speedup;
        std::cout << "confirmed: speedup " << speculum::fmt("%.3f", m.median) << "x [" << speculum::fmt("%.3f", m.lo)
                  << ", " << speculum::fmt("%.3f", m.hi) << "], " << speculum::fmt("%.0f", 100 * m.coverage)
                  << " % interval of the median of " << m.n << " A/B pairs (measured)\n";
    }
    if (r.waterfall.unavailable.empty() && !r.waterfall.steps.empty()) {
        std::cout << "where its speedup went (measured):\n";
        for (const engine::WaterfallStep& s : r.waterfall.steps)
            std::cout << "  " << (&s == &r.waterfall.steps.front() ? "" : "- ") << s.name << ": "
                      << speculum::fmt("%.2fx", s.speedup) << "  (" << s.detail << ")\n";
        if (r.waterfall.oracle_width > 0)
            std::cout << "headroom (modeled): " << speculum::fmt("%.2fx", r.waterfall.oracle_speedup) << ", "
                      << r.waterfall.oracle_detail << "\n";
    }
    if (r.combined.speedup > 0)
        std::cout << "per-position best of the drafters tried (modeled combined oracle): "
                  << speculum::fmt("%.2f", 1 + r.combined.accepted_length) << " tokens per pass, "
                  << speculum::fmt("%.2fx", r.combined.speedup) << "\n";
}

}  // namespace

int cmd_tune(int argc, char** argv) {
    Args args("tune",
              {{"model", 'm', true, "FILE", "target GGUF (default: the bundled target, with its bundled drafts)"},
               {"dataset", 0, true, "FILE.jsonl", "your prompts (JSONL, docs/datasets.md); required"},
               {"task", 0, true, "NAME", "only the dataset's prompts of this task"},
               {"draft", 0, true, "FILE[,FILE]", "separate draft GGUFs to try (repeatable)"},
               {"eagle3", 0, true, "FILE[,FILE]", "EAGLE-3 heads to try (repeatable)"},
               {"mtp", 0, true, "FILE[,FILE]", "MTP modules to try (the target's own MTP layers are found)"},
               {"block", 0, true, "FILE[,FILE]", "DFlash / DSpark block drafts to try (repeatable)"},
               {"no-self", 0, false, "", "do not try drafts derived from the target (early exit, skip, compact)"},
               {"budget", 0, true, "TIME", "wall time of the search: 600, 90s, 10m, 1h (default 10m)"},
               {"max-new", 'n', true, "N", "tokens to generate per prompt (default 48)"},
               {"min-prompts", 0, true, "N", "prompts per configuration at the first rung (default 2)"},
               {"max-prompts", 0, true, "N", "prompts at the last rung and for the confirmation (default 8)"},
               {"bayes", 0, true, "N",
                "configurations Bayesian optimisation measures for the compact self-draft's pruning and truncation "
                "(default 8; 0 = off)"},
               {"db", 0, true, "FILE", "result store (default: tune-<target>.sqlite here); resumes when present"},
               {"out", 'o', true, "FILE", "write the whole result as JSON (every configuration and its state)"},
               {"manifest-out", 0, true, "FILE", "write the winner as a deployment manifest (docs/export.md)"},
               {"threads", 't', true, "N", "worker threads; 0 = all cores (default 0)"},
               {"quiet", 'q', false, "", "no line per measurement"}},
              {});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
            "Find how to draft for a target on this machine: which drafters apply (n-gram and suffix decoding, "
            "the target's MTP layers, your draft models and heads, drafts derived from its weights), at which "
            "draft length, tree and cascade. Each drafter is measured once, its variants are modeled from that "
            "measurement and pruned when they cannot win, the rest are measured with successive halving over "
            "prompts, and the winner is confirmed by repeated A/B runs with an interval. Prints the winner, where "
            "its speedup went, the Pareto front and the llama.cpp, vLLM and SGLang settings.");
        return 0;
    }
    sweep::TuneOptions o;
    if (!args.has("dataset")) throw UsageError("--dataset is required: the prompts to tune on (JSONL)");
    o.dataset           = *args.value("dataset");
    o.task              = args.value_or("task", "");
    o.draft_models      = files_of(args, "draft");
    o.eagle3_heads      = files_of(args, "eagle3");
    o.mtp_modules       = files_of(args, "mtp");
    o.block_drafts      = files_of(args, "block");
    o.self_drafts       = !args.has("no-self");
    o.budget_s          = parse_budget(args.value_or("budget", "10m"));
    o.max_new_tokens    = int32_t(args.int_or("max-new", 48, 1, 4096));
    o.min_prompts       = int32_t(args.int_or("min-prompts", 2, 1, 10000));
    o.max_prompts       = int32_t(args.int_or("max-prompts", 8, 1, 10000));
    o.bundled_drafts    = !args.has("model");
    o.bayes_evaluations = int32_t(args.int_or("bayes", 8, 0, sweep::kMaxBayesianBudget));
    try {
        o.validate();
    } catch (const std::invalid_argument& e) {
        throw UsageError(e.what());
    }
    for (const char* out : {"out", "manifest-out"})
        if (auto v = args.value(out)) check_output_file(*v);
    const int threads = int(args.int_or("threads", 0, 0, 4096));
    std::unique_ptr<tbb::global_control> limit;
    if (threads > 0)
        limit = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, threads);

    const session::TargetSource source =
        args.has("model") ? session::TargetSource::file(*args.value("model")) : session::TargetSource::bundled();
    const session::Target target = session::load_target(source);
    std::cout << "target: " << target.path << " (" << target.model->hparams().n_layer << " layers, "
              << mib(target.model->weight_bytes_total()) << ")\n";
    if (!target.tokenizer)
        throw std::runtime_error(target.path + ": no tokenizer, so the dataset's text cannot be used");
    const std::string db =
        args.value_or("db", "tune-" + std::filesystem::path(target.path).stem().string() + ".sqlite");
    std::cout << "identifying the target (hashing " << mib(target.model->weight_bytes_total()) << ")...\n";
    const std::string model_hash = store::file_hash(target.path);
    auto store                   = store::ResultStore::open(db, store::ResultStore::Mode::read_write);
    const size_t stored_before   = store->count();
    std::cout << "store: " << db << (stored_before > 0 ? " (" + std::to_string(stored_before) + " rows: resuming)" : "")
              << "\nbudget: " << duration(o.budget_s) << " of search, then the winner's confirmation\n";
    for (const sweep::TuneFamily& f : sweep::tune_families(o, *target.model))
        std::cout << "  drafter: " << f.name << "\n";

    g_stop        = false;
    auto previous = std::signal(SIGINT, on_tune_sigint);
    CancelToken cancel;
    std::thread watcher([&] {
        while (!cancel.cancelled() && !g_stop) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        cancel.cancel();
    });
    sweep::TuneHooks hooks;
    hooks.cancel = cancel;
    if (!args.has("quiet"))
        hooks.on_event = [](const sweep::TuneEvent& e) {
            std::cout << e.phase << ": " << e.candidate.label << ": "
                      << (e.candidate.measured_speedup ? speculum::fmt("%.2fx", *e.candidate.measured_speedup)
                                                       : e.candidate.state)
                      << (e.cached ? " (from the store)" : "") << "\n";
        };
    sweep::TuneResult r;
    int rc = 0;
    try {
        sweep::EngineEvaluator evaluator(target, model_hash);
        r = sweep::run_tune(o, *target.model, evaluator, *store, hooks);
    } catch (const Cancelled&) {
        rc = 130;
    }
    cancel.cancel();
    watcher.join();
    std::signal(SIGINT, previous);
    if (rc) {
        std::cout << "stopped: what was measured is in " << db << "; run the same command again to resume\n";
        return rc;
    }
    std::cout << "\n"
              << r.measured << " configurations measured, " << r.cached << " from the store, " << r.pruned
              << " pruned by the model, " << r.failed << " failed; " << duration(r.wall_s)
              << (r.budget_exhausted ? " (the budget ended the search)" : "") << "\n";
    if (r.bayes_families > 0)
        std::cout << "Bayesian optimisation searched the compact self-draft's pruning and truncation\n";
    if (r.prompt_scale > 1)
        std::cout << "the budget allowed " << r.prompt_scale
                  << " times the prompts per rung: " << o.min_prompts * r.prompt_scale << " to "
                  << o.max_prompts * r.prompt_scale << "\n";
    print_candidates(r, 14);
    print_winner(r);
    if (auto out = args.value("out")) {
        write_file_atomic(*out, nlohmann::json(r).dump(2) + "\n");
        std::cout << "result: " << *out << "\n";
    }
    if (r.winner) {
        exporting::Manifest m;
        m.name             = "tune " + std::filesystem::path(o.dataset).stem().string();
        m.generator        = exporting::generator_string();
        m.created_at       = exporting::utc_now_iso8601();
        m.model            = exporting::identify_model(*target.model, target.path);
        m.config           = *r.winner;
        m.config.repeats   = {};
        m.figures.measured = exporting::measured_from_stats(r.winner_stats, o.max_prompts, "speculum-cli tune");
        std::cout << "\n";
        for (exporting::Engine e : {exporting::Engine::llama_cpp, exporting::Engine::vllm, exporting::Engine::sglang}) {
            try {
                std::cout << "---- " << exporting::engine_name(e) << " ----\n"
                          << exporting::make_snippet(e, m).text << "\n";
            } catch (const std::invalid_argument& ex) {
                std::cout << "---- " << exporting::engine_name(e) << ": cannot export: " << ex.what() << "\n";
            }
        }
        if (auto out = args.value("manifest-out")) {
            exporting::save_manifest(m, *out);
            std::cout << "manifest: " << *out << "\n";
        }
    }
    return 0;
}

}  // namespace speculum::cli
