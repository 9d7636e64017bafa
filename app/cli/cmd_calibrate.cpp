// `speculum-cli calibrate`: measure this machine (memory bandwidth, SGEMV/SGEMM throughput, per-call overhead) and
// write a hardware profile for `predict --profile-file`; or, with --report, fit the analytic model to measured
// `speculum-cli run --report` files and show measured against predicted (modeled) speedup per run.
#include "cli.h"

#include "core/analytic/run_calibration.h"
#include "core/file_io.h"
#include "core/format.h"
#include "core/hw/microbench.h"
#include "core/session/run_report.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace speculum::cli {

namespace {

// Paths inside names shortened to their file name ("model /a/b/draft.gguf" → "model draft.gguf").
std::string short_name(const std::string& s) {
    std::istringstream in(s);
    std::string word, out;
    while (in >> word) {
        if (auto slash = word.rfind('/'); slash != std::string::npos && slash + 1 < word.size())
            word = word.substr(slash + 1);
        out += (out.empty() ? "" : " ") + word;
    }
    return out;
}

void print_table(std::ostream& os, const analytic::EngineCalibration& c) {
    os << "fitted from the measured runs (times in plain decoding steps of the target, 1 = one step):\n";
    for (const auto& t : c.targets)
        os << "  target " << short_name(t.target) << " (plain step " << fmt("%.3f ms", t.t_plain_s * 1e3)
           << " pooled): verification pass v(w) = " << fmt("%.3f", t.verify_fixed) << " + "
           << fmt("%.3f", t.verify_per_token) << " x w, overhead " << fmt("%.3f", t.overhead_per_step) << " per step ("
           << t.runs << " run" << (t.runs == 1 ? "" : "s") << ")\n";
    for (const auto& t : c.targets) {
        bool any = false;
        for (size_t w = 0; w < t.verify_by_width.size(); ++w)
            if (t.verify_by_width[w] > 0) {
                os << (any ? "," : "    measured passes by width (plain steps):") << " " << w << ": "
                   << fmt("%.3f", t.verify_by_width[w]);
                any = true;
            }
        if (any) os << " (these replace the line where a run gives its widths)\n";
        if (t.verify_per_expert > 0)
            os << "    mixture of experts: v(w) = " << fmt("%.3f", t.verify_fixed) << " + "
               << fmt("%.3f", t.verify_per_token) << " x w + " << fmt("%.4f", t.verify_per_expert)
               << " x D(w), D(w) = distinct experts per layer (measured where passes were; else the runs' usage with "
                  "sharing rho = "
               << fmt("%.2f", t.expert_sharing) << ")\n";
    }
    for (const auto& l : c.levels)
        os << "  level " << short_name(l.name) << (l.role == "drafter" ? "" : " as " + l.role)
           << ": c = " << fmt("%.4f", l.c) << " per " << (l.per_call ? "call" : "modeled unit") << " ("
           << fmt("%.4f", l.c_per_pass) << " per " << (l.per_call ? "measured call" : "measured forward pass") << "; "
           << l.runs << " run" << (l.runs == 1 ? "" : "s") << ")\n";
    os << "per run: speedup measured | predicted (modeled) | residual; tokens per target step measured | modeled\n";
    for (const auto& r : c.runs) {
        os << "  " << r.source << ": " << fmt("%.3fx", r.speedup_measured) << " | " << fmt("%.3fx", r.speedup_predicted)
           << " | " << fmt("%+.1f%%", 100 * r.residual) << "; " << fmt("%.3f", r.tokens_per_step_measured) << " | "
           << fmt("%.3f", r.tokens_per_step_modeled) << "\n";
        os << "    fitted alpha (target, per position):";
        for (double a : r.alpha_target) os << " " << fmt("%.3f", a);
        os << "\n";
        for (size_t j = 1; j < r.levels.size(); ++j) {
            const auto& l = r.levels[j];
            os << "    level " << j << " " << short_name(l.name) << ":";
            if (l.alpha >= 0) os << " fitted alpha " << fmt("%.3f", l.alpha) << ",";
            os << " units measured " << fmt("%.0f", l.units_measured) << " | modeled " << fmt("%.1f", l.units_modeled)
               << "\n";
        }
    }
    os << "mean |residual|: " << fmt("%.1f%%", 100 * c.mean_abs_residual) << ", median "
       << fmt("%.1f%%", 100 * c.median_abs_residual) << "\n";
}

int calibrate_from_reports(const Args& args) {
    std::vector<analytic::MeasuredEngineRun> runs;
    for (const std::string& path : args.values("report")) {
        try {
            runs.push_back(session::load_run_report(path));
        } catch (const std::invalid_argument& e) {
            throw std::runtime_error(e.what());  // names the file and the field
        }
    }
    analytic::EngineCalibration cal;
    try {
        cal = analytic::calibrate_engine_runs(runs);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(std::string("calibration: ") + e.what());
    }
    nlohmann::json j;
    analytic::to_json(j, cal);
    if (auto out = args.value("out")) {
        write_file_atomic(*out, j.dump(2) + "\n");
        std::cerr << "wrote " << *out << '\n';
    }
    if (args.has("json"))
        std::cout << j.dump(2) << '\n';
    else
        print_table(std::cout, cal);
    return 0;
}

}  // namespace

int cmd_calibrate(int argc, char** argv) {
    Args args("calibrate",
              {{"report", 'r', true, "RUN.json",
                "fit the model to this `speculum-cli run --report` file instead (repeat for several runs)"},
               {"json", 0, false, "", "with --report: print the calibration as JSON instead of a table"},
               {"out", 'o', true, "FILE", "write the profile JSON here (with --report: the calibration JSON)"},
               {"quick", 0, false, "", "smaller buffers and fewer repetitions (well under a second)"},
               {"threads", 't', true, "N", "threads for the all-thread figures (default: all)"},
               {"id", 0, true, "ID", "profile id (default: this_machine)"}},
              {});
    if (!args.parse(argc, argv)) {
        std::cout << args.help(
            "Without --report: measure this machine and write a hardware profile: memory read bandwidth (1 and all "
            "threads, buffers larger than the LLC), OpenBLAS SGEMV and SGEMM throughput (1 and all threads) and the "
            "per-call overhead of a tiny dispatched call. Takes a few seconds (--quick: well under one). The "
            "profile's memory_bandwidth_gbps is the all-thread read bandwidth and fp32_tflops the all-thread SGEMM "
            "rate.\n\n"
            "With --report RUN.json (repeatable): fit the analytic model's free parameters to measured runs of "
            "`speculum-cli run --report` (chains, vertical/horizontal cascades and token trees; with the "
            "baseline) and print, per run, the measured speedup, the speedup the fitted model predicts (modeled) "
            "and the residual, and the median and mean |residual|. Fitted per run: the target's per-position "
            "acceptance (trees: by depth and rank) and the acceptance at every intermediate reviewer. Times are "
            "taken in plain decoding steps of each run (1 / its baseline tokens/s). Fitted per target over all its "
            "runs: the verification pass by width (older reports: a line in the width; a mixture of experts whose "
            "reports carry their routing: a fixed part, a part per token and a part per distinct expert read), a "
            "per-step overhead. Fitted "
            "per level (target + name + role: drafter, tree drafter, reviewer of w tokens) over all runs: the time "
            "per modeled unit (reviewer step, leaf forward pass, Max-Gram call), i.e. its cost ratio c. With "
            "one report the timing fit reproduces that run's times, so the residual shows only the acceptance "
            "model; several reports (other draft lengths, other stacks) share the fit and test it. See "
            "docs/analytic.md.");
        return 0;
    }
    if (auto out = args.value("out")) check_output_file(*out);  // before the measurement, not after
    if (args.has("report")) {
        for (const char* o : {"quick", "threads", "id"})
            if (args.has(o))
                throw UsageError(std::string("--") + o + " measures the hardware; it cannot go with --report");
        return calibrate_from_reports(args);
    }
    if (args.has("json")) throw UsageError("--json goes with --report (the hardware profile is always JSON)");
    // The id is checked before the measurement, not after it (hw::validate refuses an empty one).
    if (auto id = args.value("id"); id && id->empty()) throw UsageError("--id must not be empty");
    hw::MicrobenchOptions opt;
    opt.quick   = args.has("quick");
    opt.threads = int(args.int_or("threads", 0, 0, 4096));
    auto r      = hw::run_microbenchmarks(opt, CancelToken{}, [](double f, const std::string& what) {
        std::cerr << "\rcalibrating: " << int(f * 100) << "% " << what << "            " << std::flush;
    });
    std::cerr << "\r" << std::string(60, ' ') << "\r";
    auto p = hw::profile_from_microbench(r, args.value_or("id", "this_machine"));
    nlohmann::json j;
    hw::to_json(j, p);
    j["microbench"] = {{"threads", r.threads},
                       {"read_bw_1t_gbps", r.read_bw_1t_gbps},
                       {"read_bw_all_gbps", r.read_bw_all_gbps},
                       {"sgemv_1t_gflops", r.sgemv_1t_gflops},
                       {"sgemv_all_gflops", r.sgemv_all_gflops},
                       {"sgemm_1t_gflops", r.sgemm_1t_gflops},
                       {"sgemm_all_gflops", r.sgemm_all_gflops},
                       {"call_overhead_us", r.call_overhead_us},
                       {"seconds", r.seconds}};
    if (auto out = args.value("out")) {
        hw::save_profile(p, *out);
        std::cerr << "wrote " << *out << '\n';
    }
    std::cout << j.dump(2) << '\n';
    return 0;
}

}  // namespace speculum::cli
