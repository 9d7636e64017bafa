// Strict JSON for the k-matrix cascade (see kmatrix.h): every error names its path, e.g. "kmatrix.alpha[1][2]".
#include "core/analytic/checks.h"
#include "core/analytic/kmatrix.h"
#include "core/json_reader.h"

#include <nlohmann/json.hpp>

#include <limits>
#include <utility>

namespace speculum::analytic {

namespace {

using nlohmann::json;

const json& array(const JsonReader& r, const json& v, const std::string& path, size_t max) {
    if (!v.is_array()) r.fail(path, "expected an array, got " + json_kind(v));
    if (v.size() > max) r.fail(path, "is too long (at most " + std::to_string(max) + " entries)");
    return v;
}

template <class T, class Fn>
std::vector<std::vector<T>> matrix(const JsonReader& r, const json& v, const std::string& path, Fn&& cell) {
    std::vector<std::vector<T>> out;
    const json& rows = array(r, v, path, 64);
    for (size_t i = 0; i < rows.size(); ++i) {
        const std::string row = json_path(path, i);
        const json& cols      = array(r, rows[i], row, 64);
        out.emplace_back();
        for (size_t j = 0; j < cols.size(); ++j) out.back().push_back(T(cell(cols[j], json_path(row, j))));
    }
    return out;
}

}  // namespace

const char* to_string(KMatrixMode mode) {
    return mode == KMatrixMode::truncate ? "truncate" : "threshold";
}

KMatrixCascade kmatrix_from_json(const json& j) {
    static constexpr std::pair<const char*, KMatrixMode> kModes[] = {{"truncate", KMatrixMode::truncate},
                                                                     {"threshold", KMatrixMode::threshold}};
    JsonReader r(j, "kmatrix", &throw_invalid_input);  // validate() names fields the same way
    KMatrixCascade m;
    r.get_enum("mode", m.mode, kModes);
    auto integer = [&](const json& v, const std::string& p) { return r.integer(v, p, -1000000000, 1000000000); };
    auto number  = [&](const json& v, const std::string& p) {
        return r.number(v, p, -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity());
    };
    const json* k     = r.sub("k");
    const json* alpha = r.sub("alpha");
    const json* lv    = r.sub("levels");
    const json* t     = r.sub("target_alpha");
    r.finish();  // an unknown key first, then what is missing
    if (!k) r.fail(r.at("k"), "missing: the (n+1)×(n+1) k-matrix, row 0 = the target's draft");
    if (!alpha) r.fail(r.at("alpha"), "missing: the (n+1)×(n+1) acceptance matrix");
    m.k     = matrix<int>(r, *k, r.at("k"), integer);
    m.alpha = matrix<double>(r, *alpha, r.at("alpha"), number);
    if (!lv) r.fail(r.at("levels"), "missing: one {c, block} per draft level");
    const json& levels = array(r, *lv, r.at("levels"), 64);
    for (size_t l = 0; l < levels.size(); ++l) {
        JsonReader e(levels[l], json_path(r.at("levels"), l), &throw_invalid_input);
        bool mag = false;
        e.get("max_gram", mag);
        double c  = mag ? 0.0 : 0.05;
        int block = mag ? (m.mode == KMatrixMode::threshold ? 10 : 0) : 1;
        e.get("c", c);
        e.get("block", block, -1000000000, 1000000000);
        e.finish();
        m.c.push_back(c);
        m.block.push_back(block);
    }
    if (t)
        for (size_t p = 0; p < array(r, *t, r.at("target_alpha"), 4096).size(); ++p)
            m.target_alpha.push_back(number((*t)[p], json_path(r.at("target_alpha"), p)));
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
