// Manifest JSON: writing, and strict reading that names the path of every unknown key and wrong type.
#include "core/export/manifest.h"

#include "core/file_io.h"
#include "core/json_input.h"
#include "core/json_reader.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace speculum::exporting {

namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& why) {
    throw std::invalid_argument(where + ": " + why);
}

using Obj = JsonReader;  // core/json_reader.h

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
    if (const json* v = o.sub("model")) {
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
    if (const json* v = o.sub("config")) {
        try {
            from_json(*v, m.config);
        } catch (const std::invalid_argument& e) {
            bad("manifest.config", e.what());
        } catch (const nlohmann::json::exception& e) {
            bad("manifest.config", e.what());
        }
    }
    if (const json* v = o.sub("figures")) {
        Obj fo(*v, "manifest.figures");
        if (const json* x = fo.sub("measured"); x && !x->is_null())
            m.figures.measured = read_measured(*x, "manifest.figures.measured");
        if (const json* x = fo.sub("predicted"); x && !x->is_null())
            m.figures.predicted = read_predicted(*x, "manifest.figures.predicted");
        fo.finish();
    }
    if (const json* v = o.sub("hardware"); v && !v->is_null()) {
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
