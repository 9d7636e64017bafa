// Manifest JSON: writing, and strict reading that names the path of every unknown key and wrong type.
#include "core/export/manifest.h"

#include "core/file_io.h"
#include "core/json_input.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace speculum::exporting {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& why) {
    throw std::invalid_argument(where + ": " + why);
}

// One JSON object read key by key: every read checks the type, and finish() rejects keys nobody asked for.
class Obj {
public:
    Obj(const json& j, std::string where) : m_j(j), m_where(std::move(where)) {
        if (!j.is_object()) bad(m_where, std::string("expected a JSON object, got ") + j.type_name());
    }
    const json* find(const char* key) {
        m_known.push_back(key);
        auto it = m_j.find(key);
        return it == m_j.end() ? nullptr : &*it;
    }
    std::string at(const char* key) const { return m_where + "." + key; }
    void get(const char* key, std::string& out) {
        if (const json* v = find(key)) out = string(*v, at(key));
    }
    void get(const char* key, double& out) {
        if (const json* v = find(key)) out = number(*v, at(key));
    }
    void get(const char* key, int32_t& out) {
        if (const json* v = find(key)) out = static_cast<int32_t>(integer(*v, at(key), INT32_MIN, INT32_MAX));
    }
    void get(const char* key, int64_t& out) {
        if (const json* v = find(key)) out = integer(*v, at(key), INT64_MIN, INT64_MAX);
    }
    void get(const char* key, uint64_t& out) {
        if (const json* v = find(key)) {
            if (!v->is_number_unsigned()) bad(at(key), "expected a non-negative integer, got " + kind(*v));
            out = v->get<uint64_t>();
        }
    }
    void get(const char* key, std::vector<double>& out) {
        if (const json* v = find(key)) {
            if (!v->is_array()) bad(at(key), "expected an array of numbers, got " + kind(*v));
            out.clear();
            for (size_t i = 0; i < v->size(); ++i)
                out.push_back(number((*v)[i], at(key) + "[" + std::to_string(i) + "]"));
        }
    }
    void get(const char* key, std::vector<int64_t>& out) {
        if (const json* v = find(key)) {
            if (!v->is_array()) bad(at(key), "expected an array of integers, got " + kind(*v));
            out.clear();
            for (size_t i = 0; i < v->size(); ++i)
                out.push_back(integer((*v)[i], at(key) + "[" + std::to_string(i) + "]", INT64_MIN, INT64_MAX));
        }
    }
    void ignore(const char* key) { m_known.push_back(key); }  // written for readers, recomputed on load
    void finish() const {
        for (auto it = m_j.begin(); it != m_j.end(); ++it) {
            bool known = false;
            for (const char* k : m_known) known |= it.key() == k;
            if (!known) bad(m_where + "." + it.key(), "is not a known key");
        }
    }

    static std::string kind(const json& v) {
        if (v.is_number_float()) return "a fractional number";
        if (v.is_number_integer()) return "an integer";
        return v.type_name();
    }
    static std::string string(const json& v, const std::string& where) {
        if (!v.is_string()) bad(where, "expected a string, got " + kind(v));
        return v.get<std::string>();
    }
    static double number(const json& v, const std::string& where) {
        if (!v.is_number()) bad(where, "expected a number, got " + kind(v));
        return v.get<double>();
    }
    static int64_t integer(const json& v, const std::string& where, int64_t lo, int64_t hi) {
        if (!v.is_number_integer()) bad(where, "expected an integer, got " + kind(v));
        if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
            bad(where, "is out of range");
        const int64_t x = v.get<int64_t>();
        if (x < lo || x > hi) bad(where, "is out of range");
        return x;
    }

private:
    const json& m_j;
    std::string m_where;
    std::vector<const char*> m_known;
};

json measured_json(const MeasuredFigures& m) {
    return json{{"speedup", m.speedup},
                {"tokens_per_s", m.tokens_per_s},
                {"baseline_tokens_per_s", m.baseline_tokens_per_s},
                {"mean_accepted_length", m.mean_accepted_length},
                {"bytes_per_token", m.bytes_per_token},
                {"pos_reached", m.pos_reached},
                {"pos_accepted", m.pos_accepted},
                {"alpha", m.alpha()},
                {"acceptance_rate_per_position", m.acceptance_rate_per_position()},
                {"cost_ratio", m.cost_ratio},
                {"n_generated", m.n_generated},
                {"n_steps", m.n_steps},
                {"n_prompts", m.n_prompts},
                {"lossless_mismatch", m.lossless_mismatch},
                {"source", m.source}};
}

MeasuredFigures read_measured(const json& j, const std::string& where) {
    MeasuredFigures m;
    Obj o(j, where);
    o.get("speedup", m.speedup);
    o.get("tokens_per_s", m.tokens_per_s);
    o.get("baseline_tokens_per_s", m.baseline_tokens_per_s);
    o.get("mean_accepted_length", m.mean_accepted_length);
    o.get("bytes_per_token", m.bytes_per_token);
    o.get("pos_reached", m.pos_reached);
    o.get("pos_accepted", m.pos_accepted);
    o.ignore("alpha");
    o.ignore("acceptance_rate_per_position");
    o.get("cost_ratio", m.cost_ratio);
    o.get("n_generated", m.n_generated);
    o.get("n_steps", m.n_steps);
    o.get("n_prompts", m.n_prompts);
    o.get("lossless_mismatch", m.lossless_mismatch);
    o.get("source", m.source);
    o.finish();
    return m;
}

json predicted_json(const PredictedFigures& p) {
    return json{{"speedup", p.speedup},
                {"ewif", p.ewif},
                {"expected_tokens", p.expected_tokens},
                {"alpha", p.alpha},
                {"cost_ratio", p.cost_ratio},
                {"basis", p.basis},
                {"modeled", true}};
}

PredictedFigures read_predicted(const json& j, const std::string& where) {
    PredictedFigures p;
    Obj o(j, where);
    o.get("speedup", p.speedup);
    o.get("ewif", p.ewif);
    o.get("expected_tokens", p.expected_tokens);
    o.get("alpha", p.alpha);
    o.get("cost_ratio", p.cost_ratio);
    o.get("basis", p.basis);
    o.ignore("modeled");
    o.finish();
    return p;
}

}  // namespace

void to_json(nlohmann::json& j, const Manifest& m) {
    const ModelIdentity& id = m.model;
    json model              = {{"path", id.path},     {"sha256", id.sha256},        {"architecture", id.architecture},
                               {"name", id.name},     {"n_layer", id.n_layer},      {"n_vocab", id.n_vocab},
                               {"n_embd", id.n_embd}, {"file_bytes", id.file_bytes}};
    json figures            = {{"measured", m.figures.measured ? measured_json(*m.figures.measured) : json()},
                               {"predicted", m.figures.predicted ? predicted_json(*m.figures.predicted) : json()}};
    j                       = json{{"format", kManifestFormat},
             {"version", m.version},
             {"name", m.name},
             {"generator", m.generator},
             {"created_at", m.created_at},
             {"model", std::move(model)},
             {"config", m.config},
             {"figures", std::move(figures)},
             {"hardware", m.hardware ? json(*m.hardware) : json()}};
}

void from_json(const nlohmann::json& j, Manifest& out) {
    Manifest m;
    Obj o(j, "manifest");
    std::string format;
    o.get("format", format);
    if (format != kManifestFormat)
        bad("manifest.format", "expected \"" + std::string(kManifestFormat) + "\", got \"" + format + "\"");
    o.get("version", m.version);
    if (m.version < 1 || m.version > kManifestVersion)
        bad("manifest.version", "this build reads versions 1.." + std::to_string(kManifestVersion) + ", got " +
                                    std::to_string(m.version) +
                                    (m.version > kManifestVersion ? " (written by a newer Speculum)" : ""));
    o.get("name", m.name);
    o.get("generator", m.generator);
    o.get("created_at", m.created_at);
    if (const json* v = o.find("model")) {
        Obj mo(*v, "manifest.model");
        mo.get("path", m.model.path);
        mo.get("sha256", m.model.sha256);
        mo.get("architecture", m.model.architecture);
        mo.get("name", m.model.name);
        mo.get("n_layer", m.model.n_layer);
        mo.get("n_vocab", m.model.n_vocab);
        mo.get("n_embd", m.model.n_embd);
        mo.get("file_bytes", m.model.file_bytes);
        mo.finish();
    }
    if (const json* v = o.find("config")) {
        try {
            from_json(*v, m.config);
        } catch (const std::invalid_argument& e) {
            bad("manifest.config", e.what());
        } catch (const nlohmann::json::exception& e) {
            bad("manifest.config", e.what());
        }
    }
    if (const json* v = o.find("figures")) {
        Obj fo(*v, "manifest.figures");
        if (const json* x = fo.find("measured"); x && !x->is_null())
            m.figures.measured = read_measured(*x, "manifest.figures.measured");
        if (const json* x = fo.find("predicted"); x && !x->is_null())
            m.figures.predicted = read_predicted(*x, "manifest.figures.predicted");
        fo.finish();
    }
    if (const json* v = o.find("hardware"); v && !v->is_null()) {
        try {
            m.hardware = v->get<hw::HardwareProfile>();
        } catch (const std::exception& e) {
            bad("manifest.hardware", e.what());
        }
    }
    o.finish();
    out = std::move(m);
}

bool is_manifest(const nlohmann::json& j) {
    if (!j.is_object()) return false;
    auto it = j.find("format");
    return it != j.end() && it->is_string() && it->get<std::string>() == kManifestFormat;
}

Manifest load_manifest(const std::string& path) {
    const std::string text = read_input_file(path, kMaxConfigFileBytes, "manifest");
    json j;
    try {
        j = parse_json(text, path);
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(e.what());
    }
    Manifest m;
    try {
        from_json(j, m);
        m.validate();
    } catch (const std::invalid_argument& e) {
        throw std::runtime_error(path + ": " + e.what());
    } catch (const json::exception& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
    return m;
}

void save_manifest(const Manifest& m, const std::string& path) {
    write_file_atomic(path, json(m).dump(2) + "\n");
}

}  // namespace speculum::exporting
