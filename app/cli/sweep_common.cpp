// Shared parts of `speculum-cli sweep` (see sweep_common.h).
#include "sweep_common.h"

#include "cli.h"
#include "core/file_io.h"
#include "core/json_input.h"
#include "core/sweep/engine_evaluator.h"
#include "core/sweep/predict_evaluator.h"
#include "core/sweep/spec_predict_evaluator.h"

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

namespace speculum::cli {

sweep::SweepSpec parse_spec(const std::string& text, const std::string& origin) {
    nlohmann::json j;
    try {
        j = parse_json(text, origin);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(e.what());
    }
    try {
        return sweep::sweep_spec_from_json(j);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(origin + ": " + e.what());
    }
}

sweep::SweepSpec load_spec(const std::string& file) {
    return parse_spec(read_input_file(file, kMaxConfigFileBytes, "sweep spec"), file);
}

std::unique_ptr<sweep::Evaluator> make_evaluator(const sweep::SweepSpec& spec, const std::string& resources,
                                                 int slow_ms) {
    if (spec.evaluator == "predict") return std::make_unique<sweep::PredictEvaluator>(resources, slow_ms);
    if (slow_ms > 0 && spec.evaluator == "spec-predict")
        throw UsageError("--slow-ms applies to the predict evaluator only");
    if (spec.evaluator == "spec-predict") return std::make_unique<sweep::SpecPredictEvaluator>();
    if (slow_ms > 0) throw UsageError("--slow-ms applies to the predict evaluator only");
    return std::make_unique<sweep::EngineEvaluator>(spec.target);
}

std::string fmt(double v, int precision) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision, v);
    return buf;
}

std::string duration(double s) {
    if (s < 0) return "?";
    if (s < 60) return fmt(s, 0) + "s";
    if (s < 3600)
        return std::to_string(static_cast<int>(s / 60)) + "m" + std::to_string(static_cast<int>(s) % 60) + "s";
    return fmt(s / 3600, 1) + "h";
}

std::string event_line(const sweep::SweepSpec& spec, const sweep::SweepEvent& e) {
    std::ostringstream line;
    line << '[' << e.done << '/' << e.total << "] " << e.label;
    if (spec.sampling.mode == sweep::SamplingMode::adaptive) line << " rung " << e.rung << " prompts " << e.row.prompts;
    if (e.row.status != "done") {
        line << "  FAILED: " << e.row.message;
        return line.str();
    }
    if (auto v = e.row.metric(spec.objective.metric)) line << "  " << spec.objective.metric << '=' << fmt(*v, 4);
    if (!e.row.objective) line << " (infeasible)";
    if (e.cached) line << "  (cached)";
    return line.str();
}

void print_summary(const sweep::SweepSpec& spec, const sweep::SweepSummary& s) {
    double per_min = s.wall_s > 0 ? static_cast<double>(s.evaluated) / s.wall_s * 60 : 0;
    std::cout << "sweep " << spec.name << ": " << s.planned << " planned, " << s.evaluated << " evaluated, " << s.cached
              << " cached, " << s.failed << " failed in " << fmt(s.wall_s, 2) << " s (" << fmt(per_min, 0)
              << " configurations/min evaluated)\n";
    if (!s.rung_sizes.empty()) {
        std::cout << "successive halving rungs (configurations x prompts):";
        for (size_t i = 0; i < s.rung_sizes.size(); ++i)
            std::cout << ' ' << s.rung_sizes[i] << 'x' << s.rung_prompts[i];
        std::cout << '\n';
    }
    if (s.best) {
        std::cout << "best " << spec.objective.metric << " = " << fmt(*s.best->metric(spec.objective.metric), 4)
                  << (spec.evaluator != "engine" ? " (modeled)" : "") << "  config " << s.best->key.config_hash << ": "
                  << s.best->config.dump() << '\n';
    } else {
        std::cout << "no feasible configuration (failed, or outside the constraints)\n";
    }
}

}  // namespace speculum::cli
