// Sessions as JSON files (see session_file.h).
#include "ui/model/session_file.h"

#include "core/export/manifest.h"
#include "core/file_io.h"
#include "core/json_input.h"
#include "core/json_reader.h"
#include "core/session/run_report.h"

#include <stdexcept>

namespace speculum::ui {

namespace {

[[noreturn]] void fail_at(const std::string& path, const std::string& what) {
    throw std::invalid_argument(path + ": " + what);
}

}  // namespace

nlohmann::json measured_view_json(const MeasuredView& v) {
    nlohmann::json prompts = nlohmann::json::array();
    for (const PromptView& p : v.prompts) prompts.push_back({{"id", p.id}, {"task", p.task}});
    nlohmann::json j = {{"stats", v.stats},
                        {"repeated", v.repeats},
                        {"prompts", prompts},
                        {"prompts_total", v.prompts_total},
                        {"drafter", v.drafter},
                        {"source", v.source},
                        {"lossless_checked", v.lossless_checked},
                        {"lossless_mismatches", v.lossless_mismatches},
                        {"n_generated", v.n_generated},
                        {"n_steps", v.n_steps},
                        {"cancelled", v.cancelled}};
    j["report"]      = v.report ? *v.report : nlohmann::json(nullptr);
    return j;
}

MeasuredView measured_view_from_json(const nlohmann::json& j, const std::string& where) {
    JsonReader r(j, where);
    MeasuredView v;
    try {
        v.stats = engine::run_figures_from_json(r.need("stats"));
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(where + "." + e.what());  // "stats.n_steps: why" under this run's path
    }
    if (const nlohmann::json* rep = r.sub("repeated")) {
        try {
            v.repeats = rep->get<session::RepeatSummary>();
        } catch (const std::exception& e) {
            fail_at(r.at("repeated"), e.what());
        }
    }
    if (const nlohmann::json* prompts = r.sub("prompts")) {
        if (!prompts->is_array()) r.fail(r.at("prompts"), "must be an array");
        for (size_t i = 0; i < prompts->size(); ++i) {
            JsonReader pr((*prompts)[i], json_path(r.at("prompts"), i));
            PromptView& p = v.prompts.emplace_back();
            pr.get("id", p.id), pr.get("task", p.task);
            pr.finish();
        }
    }
    r.get("prompts_total", v.prompts_total, 0, INT32_MAX);
    r.get("drafter", v.drafter), r.get("source", v.source);
    r.get("lossless_checked", v.lossless_checked, 0, INT32_MAX);
    r.get("lossless_mismatches", v.lossless_mismatches, 0, INT32_MAX);
    r.get("n_generated", v.n_generated, 0, INT64_MAX), r.get("n_steps", v.n_steps, 0, INT64_MAX);
    r.get("cancelled", v.cancelled);
    if (const nlohmann::json* rep = r.sub("report"); rep && !rep->is_null()) {
        if (!rep->is_object()) r.fail(r.at("report"), "must be a run report (an object) or null");
        v.report = std::make_shared<const nlohmann::json>(*rep);
    }
    r.finish();
    v.complete = true;  // only finished runs enter the history
    return v;
}

nlohmann::json session_json(const SessionState& s) {
    nlohmann::json history = nlohmann::json::array();
    for (const RunRecord& r : s.history)
        history.push_back({{"id", r.id},
                           {"when", r.when},
                           {"pinned", r.pinned},
                           {"config", r.config},
                           {"run", measured_view_json(r.view)}});
    return {{kSessionFormatMarker, kSessionVersion},
            {"saved_at", s.saved_at.empty() ? exporting::utc_now_iso8601() : s.saved_at},
            {"config", s.config},
            {"model", s.model_path},
            {"dataset", s.dataset_path},
            {"task", s.task},
            {"results", s.results_path},
            {"history", history}};
}

SessionState session_from_json(const nlohmann::json& j, const std::string& source) {
    if (!j.is_object() || !j.contains(kSessionFormatMarker))
        fail_at(source, std::string("not a Speculum session (no \"") + kSessionFormatMarker + "\" key)");
    JsonReader r(j, source);
    int version = 0;
    r.get(kSessionFormatMarker, version, 1, INT32_MAX);
    if (version != kSessionVersion)
        fail_at(r.at(kSessionFormatMarker), "version " + std::to_string(version) + "; this Speculum reads version " +
                                                std::to_string(kSessionVersion));
    SessionState s;
    r.get("saved_at", s.saved_at);
    auto config = [&](const nlohmann::json& c, const std::string& at) {
        try {
            AppConfig cfg = c.get<AppConfig>();
            cfg.validate();
            return cfg;
        } catch (const std::exception& e) {
            fail_at(at, e.what());
        }
    };
    s.config = config(r.need("config"), r.at("config"));
    r.get("model", s.model_path), r.get("dataset", s.dataset_path), r.get("task", s.task);
    r.get("results", s.results_path);
    if (const nlohmann::json* h = r.sub("history")) {
        if (!h->is_array()) r.fail(r.at("history"), "must be an array");
        if (h->size() > kMaxSessionRuns)
            r.fail(r.at("history"),
                   std::to_string(h->size()) + " runs; a session keeps at most " + std::to_string(kMaxSessionRuns));
        int last_id = 0;
        for (size_t i = 0; i < h->size(); ++i) {
            const std::string at = json_path(r.at("history"), i);
            JsonReader hr((*h)[i], at);
            RunRecord& rec = s.history.emplace_back();
            hr.get("id", rec.id, 1, INT32_MAX);
            if (rec.id <= last_id) hr.fail(hr.at("id"), "runs must be in the order they finished (ids increasing)");
            last_id = rec.id;
            hr.get("when", rec.when), hr.get("pinned", rec.pinned);
            rec.config = config(hr.need("config"), hr.at("config"));
            rec.view   = measured_view_from_json(hr.need("run"), hr.at("run"));
            hr.finish();
        }
    }
    r.finish();
    return s;
}

void save_session_file(const std::string& path, const SessionState& s) {
    write_file_atomic(path, session_json(s).dump(1) + "\n");
}

SessionState load_session_file(const std::string& path) {
    const std::string text = read_input_file(path, kMaxSessionFileBytes, "session file");
    return session_from_json(parse_json(text, path), path);
}

}  // namespace speculum::ui
