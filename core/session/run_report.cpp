// The run report (see run_report.h).
#include "core/session/run_report.h"

#include "core/engine/spec_config.h"
#include "core/engine/speedup_waterfall.h"
#include "core/json_reader.h"

namespace speculum::session {

namespace {

using nlohmann::json;

json interval_json(const analytic::MedianInterval& m) {
    return {{"median", m.median}, {"lo", m.lo}, {"hi", m.hi}, {"n", m.n}, {"coverage", m.coverage}};
}

analytic::MedianInterval interval_from(const json& j, const std::string& where) {
    analytic::MedianInterval m;
    JsonReader r(j, where);
    r.get("median", m.median);
    r.get("lo", m.lo);
    r.get("hi", m.hi);
    r.get("n", m.n, 0, INT32_MAX);
    r.get("coverage", m.coverage, 0, 1);
    r.finish();
    return m;
}

}  // namespace

void to_json(json& j, const RepeatSummary& rs) {
    j = {{"passes", rs.passes},
         {"wall_s", rs.wall_s},
         {"stop", rs.stop},
         {"speedup_pairs", rs.speedup_pairs},
         {"speedup", interval_json(rs.speedup)},
         {"tokens_per_s", interval_json(rs.tokens_per_s)},
         {"baseline_tokens_per_s", interval_json(rs.baseline_tokens_per_s)},
         {"cost_ratio", interval_json(rs.cost_ratio)}};
    if (rs.other_load) j["other_cpu_load"] = *rs.other_load;
}

void from_json(const json& j, RepeatSummary& rs) {
    rs = {};
    JsonReader r(j, "repeated");
    r.get("passes", rs.passes, 0, INT32_MAX);
    r.get("wall_s", rs.wall_s, 0);
    r.get("stop", rs.stop);
    r.get("speedup_pairs", rs.speedup_pairs);
    const std::pair<const char*, analytic::MedianInterval*> intervals[] = {
        {"speedup", &rs.speedup},
        {"tokens_per_s", &rs.tokens_per_s},
        {"baseline_tokens_per_s", &rs.baseline_tokens_per_s},
        {"cost_ratio", &rs.cost_ratio}};
    for (const auto& [key, out] : intervals)
        if (const json* v = r.sub(key)) *out = interval_from(*v, r.at(key));
    if (r.has("other_cpu_load")) {
        double load = 0;
        r.get("other_cpu_load", load, 0, 1);
        rs.other_load = load;
    }
    r.finish();
}

json run_report(const engine::SpecConfig& cfg, const RunOutcome& outcome, const Target& target, bool random_weights) {
    json report{{"config", cfg},
                {"target", target.path},
                {"random_weights", random_weights},
                {"drafter", outcome.drafter},
                {"target_memory", model::weight_memory_name(target.model->weight_memory())},
                {"verifier_memory", model::weight_memory_name(target.verifying().weight_memory())}};
    if (!outcome.verifier_note.empty())  // levels[0].strict_subset
        report["strict_subset"] = {{"verifier", outcome.verifier_note},
                                   {"split_bytes", outcome.split_bytes},
                                   {"dense_bytes", outcome.split_dense_bytes},
                                   {"draft_bytes", outcome.split_draft_bytes}};
    json runs = json::array();
    for (const PromptRun& pr : outcome.runs) {
        json one    = pr.result;
        one["id"]   = pr.prompt.id;
        one["task"] = pr.prompt.task;
        if (target.tokenizer) one["text"] = target.tokenizer->decode(pr.result.tokens);
        runs.push_back(std::move(one));
    }
    report["runs"]      = std::move(runs);
    report["total"]     = outcome.total;
    report["repeated"]  = outcome.repeats;
    report["waterfall"] = engine::speedup_waterfall(outcome.total);  // where the speedup went
    if (outcome.cassandra_j) report["cassandra_j"] = *outcome.cassandra_j;
    return report;
}

}  // namespace speculum::session
