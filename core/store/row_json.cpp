// ResultRow <-> JSON (see row_json.h). The checks mirror what the store would accept, so a row that passes
// row_from_json can be put() as is.
#include "core/store/row_json.h"
#include "core/json_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <stdexcept>

namespace speculum::store {

namespace {

using nlohmann::json;

const json& field(const json& j, const char* name) {
    auto it = j.find(name);
    if (it == j.end()) throw std::invalid_argument(std::string("row.") + name + " is missing");
    return *it;
}

std::string text(const json& j, const char* name) {
    const json& v = field(j, name);
    if (!v.is_string()) throw std::invalid_argument(std::string("row.") + name + " must be a string");
    return v.get<std::string>();
}

const json& object(const json& j, const char* name) {
    const json& v = field(j, name);
    if (!v.is_object()) throw std::invalid_argument(std::string("row.") + name + " must be an object");
    return v;
}

std::string key_text(const json& key, const char* name) {
    std::string s = text(key, name);
    if (s.empty()) throw std::invalid_argument(std::string("row.key.") + name + " must not be empty");
    return s;
}

}  // namespace

json row_to_json(const ResultRow& row) {
    json metrics = json::object();
    for (const auto& [name, v] : row.metrics) metrics[name] = std::isfinite(v) ? json(v) : json(nullptr);
    json objective = row.objective && std::isfinite(*row.objective) ? json(*row.objective) : json(nullptr);
    return json{{"key",
                 {{"config_hash", row.key.config_hash},
                  {"model_hash", row.key.model_hash},
                  {"dataset_hash", row.key.dataset_hash}}},
                {"sweep", row.sweep},
                {"task", row.task},
                {"status", row.status},
                {"message", row.message},
                {"config", row.config},
                {"stats", row.stats},
                {"predictions", row.predictions},
                {"metrics", metrics},
                {"objective", objective},
                {"prompts", row.prompts},
                {"wall_s", row.wall_s}};
}

ResultRow row_from_json(const json& j) {
    if (!j.is_object()) throw std::invalid_argument("row must be an object");
    check_known_keys(j, "row",
                     {"key", "sweep", "task", "status", "message", "config", "stats", "predictions", "metrics",
                      "objective", "prompts", "wall_s"});
    ResultRow r;
    const json& key = object(j, "key");
    if (key.size() != 3) throw std::invalid_argument("row.key must have config_hash, model_hash, dataset_hash");
    r.key     = {key_text(key, "config_hash"), key_text(key, "model_hash"), key_text(key, "dataset_hash")};
    r.sweep   = text(j, "sweep");
    r.task    = text(j, "task");
    r.status  = text(j, "status");
    r.message = text(j, "message");
    if (r.status != "done" && r.status != "failed") throw std::invalid_argument("row.status must be done or failed");
    r.config      = object(j, "config");
    r.stats       = object(j, "stats");
    r.predictions = object(j, "predictions");
    for (const auto& [name, v] : object(j, "metrics").items()) {
        const auto& columns = metric_columns();
        if (std::find(columns.begin(), columns.end(), name) == columns.end())
            throw std::invalid_argument("row.metrics." + name + " is not a metric column");
        if (v.is_null()) continue;  // non-finite on the sender: NULL in the store either way
        if (!v.is_number()) throw std::invalid_argument("row.metrics." + name + " must be a number or null");
        r.metrics[name] = v.get<double>();
    }
    const json& objective = field(j, "objective");
    if (objective.is_number())
        r.objective = objective.get<double>();
    else if (!objective.is_null())
        throw std::invalid_argument("row.objective must be a number or null");
    const json& prompts = field(j, "prompts");
    if (!prompts.is_number_integer() || prompts.get<int64_t>() < 0 ||
        prompts.get<int64_t>() > std::numeric_limits<int32_t>::max())
        throw std::invalid_argument("row.prompts must be a non-negative integer");
    r.prompts          = static_cast<int>(prompts.get<int64_t>());
    const json& wall_s = field(j, "wall_s");
    if (!wall_s.is_number() || !(wall_s.get<double>() >= 0))
        throw std::invalid_argument("row.wall_s must be a number >= 0");
    r.wall_s = wall_s.get<double>();
    return r;
}

}  // namespace speculum::store
