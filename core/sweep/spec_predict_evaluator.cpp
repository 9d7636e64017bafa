// SpecPredictEvaluator: SpecConfig + modeled figures -> predict_input_of -> predict(), all modeled.
#include "core/sweep/spec_predict_evaluator.h"

#include "core/analytic/trees.h"
#include "core/drafts/draft_kind.h"
#include "core/json_reader.h"
#include "core/store/hash.h"

namespace speculum::sweep {

namespace {

using nlohmann::json;

double acceptance(const JsonReader& r, const json& v, const std::string& path) {
    const double a = r.number(v, path, 0, 1);
    if (a <= 0 || a >= 1) r.fail(path, "must be in (0, 1), got " + v.dump());
    return a;
}

}  // namespace

void to_json(json& j, const SpecModeled& m) {
    j           = json::object();
    json levels = json::array();
    for (const engine::LevelFigures& l : m.figures.levels)
        levels.push_back({{"alpha", l.alpha.size() == 1 ? json(l.alpha[0]) : json(l.alpha)}, {"c", l.c}});
    j["levels"] = std::move(levels);
    if (!m.figures.rank_acceptance.empty()) j["rank_acceptance"] = m.figures.rank_acceptance;
    if (!m.horizontal.empty()) {
        json h = json::array();
        for (const analytic::HorizontalSegment& s : m.horizontal)
            h.push_back({{"alpha", s.alpha}, {"c", s.c}, {"count", s.count}});
        j["horizontal"] = std::move(h);
    }
}

SpecModeled spec_modeled_from_json(const json& j, const engine::SpecConfig& spec, const std::string& where) {
    SpecModeled m;
    if (!j.is_null()) {
        JsonReader r(j, where);
        if (const json* levels = r.sub("levels")) {
            if (!levels->is_array()) r.fail(r.at("levels"), "expected an array, got " + json_kind(*levels));
            if (levels->size() > spec.levels.size())
                r.fail(r.at("levels"), "has " + std::to_string(levels->size()) + " entries for " +
                                           std::to_string(spec.levels.size()) + " draft levels");
            for (size_t i = 0; i < levels->size(); ++i) {
                const std::string at = json_path(r.at("levels"), i);
                JsonReader l((*levels)[i], at);
                engine::LevelFigures f;
                if (const json* a = l.sub("alpha")) {
                    f.alpha.clear();
                    if (a->is_array()) {
                        if (a->empty() || a->size() > 64) l.fail(l.at("alpha"), "needs 1 to 64 values per position");
                        for (size_t p = 0; p < a->size(); ++p)
                            f.alpha.push_back(acceptance(l, (*a)[p], json_path(l.at("alpha"), p)));
                    } else {
                        f.alpha.push_back(acceptance(l, *a, l.at("alpha")));
                    }
                } else {
                    f.alpha = {drafts::draft_kind_info(spec.levels[i].kind).assumed_alpha};
                }
                f.c = drafts::draft_kind_info(spec.levels[i].kind).assumed_c;
                l.get("c", f.c, 0, 1e6);
                l.finish();
                m.figures.levels.push_back(std::move(f));
            }
        }
        if (const json* p = r.sub("rank_acceptance")) {
            if (!p->is_array() || p->size() > 64) r.fail(r.at("rank_acceptance"), "expected up to 64 numbers");
            for (size_t i = 0; i < p->size(); ++i)
                m.figures.rank_acceptance.push_back(r.number((*p)[i], json_path(r.at("rank_acceptance"), i), 0, 1));
        }
        if (const json* h = r.sub("horizontal")) {
            if (!h->is_array() || h->size() > 16) r.fail(r.at("horizontal"), "expected up to 16 segments");
            for (size_t i = 0; i < h->size(); ++i) {
                JsonReader s((*h)[i], json_path(r.at("horizontal"), i));
                analytic::HorizontalSegment seg;
                if (const json* a = s.sub("alpha")) seg.alpha = acceptance(s, *a, s.at("alpha"));
                s.get("c", seg.c, 0, 1e6);
                s.get("count", seg.count, 1, 64);
                s.finish();
                m.horizontal.push_back(seg);
            }
        }
        r.finish();
    }
    for (size_t i = m.figures.levels.size(); i < spec.levels.size(); ++i) {
        const drafts::DraftKindInfo& k = drafts::draft_kind_info(spec.levels[i].kind);
        m.figures.levels.push_back({{k.assumed_alpha}, k.assumed_c});
    }
    return m;
}

SpecPredictConfig parse_spec_predict_config(const json& config) {
    if (!config.is_object()) throw std::invalid_argument("configuration must be a JSON object");
    json spec_json = config;
    spec_json.erase("modeled");
    SpecPredictConfig out;
    from_json(spec_json, out.spec);  // strict: unknown keys name the key
    out.spec.validate();
    out.modeled = spec_modeled_from_json(config.contains("modeled") ? config["modeled"] : json(), out.spec);
    return out;
}

json spec_predict_config(const engine::SpecConfig& spec, const SpecModeled& modeled) {
    json j       = spec;
    j["modeled"] = modeled;
    return j;
}

std::string SpecPredictEvaluator::model_hash() const {
    return store::json_hash({{"evaluator", "spec-predict"}, {"version", SPECULUM_VERSION}});
}

std::string SpecPredictEvaluator::dataset_hash(const json&, int) const {
    return store::json_hash({{"dataset", "none"}});
}

namespace {

// The configuration as predict() takes it, validated (what validate() checks and evaluate() runs).
engine::ModeledConfig modeled_input(const json& config) {
    const SpecPredictConfig c = parse_spec_predict_config(config);
    engine::ModeledConfig m   = engine::predict_input_of(c.spec, c.modeled.figures);
    m.input.horizontal        = c.modeled.horizontal;
    analytic::validate(m.input);
    return m;
}

}  // namespace

void SpecPredictEvaluator::validate(const json& config) const {
    (void)modeled_input(config);
}

EvalResult SpecPredictEvaluator::evaluate(const json& config, const EvalContext& ctx) {
    ctx.token.throw_if_cancelled();
    const engine::ModeledConfig m     = modeled_input(config);
    const analytic::PredictInput& in  = m.input;
    const analytic::PredictOutput out = analytic::predict(in);
    EvalResult r;
    r.predictions = out;
    // The tree the engine would expand (Sequoia's from predict()): its expected length per pass and speedup.
    analytic::TokenTree tree = m.tree;
    if (tree.parent.size() <= 1 && out.sequoia) tree = out.sequoia->tree;
    const analytic::TreeFigures tf = analytic::tree_figures(tree, m.rank_table, in.c);
    r.predictions["tree_speedup"]  = tf.speedup;
    r.predictions["draft_work"]    = double(in.k) * in.c;
    r.predictions["not_modeled"]   = m.not_modeled;
    r.metrics["predicted_speedup"] = out.kmatrix ? out.kmatrix->ewif : out.predicted_speedup;
    r.metrics["accepted_length"]   = out.expected_tokens;
    if (out.cassandra_j) r.metrics["j"] = *out.cassandra_j;
    return r;
}

}  // namespace speculum::sweep
