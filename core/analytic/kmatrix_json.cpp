// Strict JSON for the k-matrix cascade (see kmatrix.h): every error names its path, e.g. "kmatrix.alpha[1][2]".
#include "core/analytic/checks.h"
#include "core/analytic/kmatrix.h"
#include "core/json_reader.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace speculum::analytic {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw InvalidInput(path + " " + what);
}

void only_keys(const json& j, const std::string& path, std::initializer_list<const char*> keys) {
    if (!j.is_object()) fail(path, "must be a JSON object");
    for (const auto& [key, _] : j.items()) {
        bool known = false;
        for (const char* k : keys) known = known || key == k;
        if (!known) throw InvalidInput(unknown_key_message(json_path(path, key)));
    }
}

double number(const json& v, const std::string& path) {
    if (!v.is_number()) fail(path, "must be a number");
    return v.get<double>();
}

int integer(const json& v, const std::string& path) {
    if (!v.is_number() || v.get<double>() != std::floor(v.get<double>())) fail(path, "must be an integer");
    double d = v.get<double>();
    if (d < -1e9 || d > 1e9) fail(path, "is out of range");
    return int(d);
}

const json& array(const json& v, const std::string& path, size_t max) {
    if (!v.is_array()) fail(path, "must be an array");
    if (v.size() > max) fail(path, "is too long");
    return v;
}

template <class T, class Fn>
std::vector<std::vector<T>> matrix(const json& v, const std::string& path, Fn&& cell) {
    std::vector<std::vector<T>> out;
    const json& rows = array(v, path, 64);
    for (size_t i = 0; i < rows.size(); ++i) {
        std::string row  = path + "[" + std::to_string(i) + "]";
        const json& cols = array(rows[i], row, 64);
        out.emplace_back();
        for (size_t j = 0; j < cols.size(); ++j)
            out.back().push_back(cell(cols[j], row + "[" + std::to_string(j) + "]"));
    }
    return out;
}

}  // namespace

const char* to_string(KMatrixMode mode) {
    return mode == KMatrixMode::truncate ? "truncate" : "threshold";
}

KMatrixCascade kmatrix_from_json(const json& j) {
    const std::string path = "kmatrix";  // validate() names fields the same way
    only_keys(j, path, {"mode", "k", "alpha", "levels", "target_alpha"});
    KMatrixCascade m;
    if (j.contains("mode")) {
        const json& v = j["mode"];
        if (v == "truncate")
            m.mode = KMatrixMode::truncate;
        else if (v == "threshold")
            m.mode = KMatrixMode::threshold;
        else
            fail(path + ".mode", "must be \"truncate\" or \"threshold\"");
    }
    if (!j.contains("k")) fail(path + ".k", "missing: the (n+1)×(n+1) k-matrix, row 0 = the target's draft");
    if (!j.contains("alpha")) fail(path + ".alpha", "missing: the (n+1)×(n+1) acceptance matrix");
    m.k     = matrix<int>(j["k"], path + ".k", integer);
    m.alpha = matrix<double>(j["alpha"], path + ".alpha", number);
    if (!j.contains("levels")) fail(path + ".levels", "missing: one {c, block} per draft level");
    const json& levels = array(j["levels"], path + ".levels", 64);
    for (size_t l = 0; l < levels.size(); ++l) {
        std::string lp = path + ".levels[" + std::to_string(l) + "]";
        const json& e  = levels[l];
        only_keys(e, lp, {"c", "block", "max_gram"});
        bool mag = false;
        if (e.contains("max_gram")) {
            if (!e["max_gram"].is_boolean()) fail(lp + ".max_gram", "must be true or false");
            mag = e["max_gram"].get<bool>();
        }
        double c  = mag ? 0.0 : 0.05;
        int block = mag ? (m.mode == KMatrixMode::threshold ? 10 : 0) : 1;
        if (e.contains("c")) c = number(e["c"], lp + ".c");
        if (e.contains("block")) block = integer(e["block"], lp + ".block");
        m.c.push_back(c);
        m.block.push_back(block);
    }
    if (j.contains("target_alpha"))
        for (size_t p = 0; p < array(j["target_alpha"], path + ".target_alpha", 4096).size(); ++p)
            m.target_alpha.push_back(number(j["target_alpha"][p], path + ".target_alpha[" + std::to_string(p) + "]"));
    validate(m);
    return m;
}

void to_json(json& j, const KMatrixCascade& m) {
    json levels = json::array();
    for (size_t l = 0; l < m.c.size(); ++l) levels.push_back({{"c", m.c[l]}, {"block", m.block[l]}});
    j = {{"mode", to_string(m.mode)}, {"k", m.k}, {"alpha", m.alpha}, {"levels", levels}};
    if (!m.target_alpha.empty()) j["target_alpha"] = m.target_alpha;
}

void to_json(json& j, const KMatrixResult& r) {
    json levels = json::array();
    for (const LevelWork& w : r.work)
        levels.push_back({{"calls", w.calls}, {"units", w.units}, {"reviewed", w.reviewed}, {"accepted", w.accepted}});
    j = {{"expected_tokens", r.expected_tokens},
         {"cost", r.cost},
         {"ewif", r.ewif},
         {"levels", levels},
         {"draft_length_distribution", r.draft_length_distribution},
         {"length_semantics", to_string(r.mode)}};
}

}  // namespace speculum::analytic
