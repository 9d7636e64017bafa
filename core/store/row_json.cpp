// ResultRow <-> JSON (see row_json.h). The checks mirror what the store would accept, so a row that passes
// row_from_json can be put() as is.
#include "core/store/row_json.h"
#include "core/json_reader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>

namespace speculum::store {

namespace {

using nlohmann::json;

std::string text(JsonReader& r, const char* name) {
    std::string s;
    r.need(name), r.get(name, s);
    return s;
}

const json& object(JsonReader& r, const char* name) {
    const json& v = r.need(name);
    if (!v.is_object()) r.fail(r.at(name), "expected a JSON object, got " + json_kind(v));
    return v;
}

// A number, or null for a value that was not finite when written (NULL in the store either way).
std::optional<double> number_or_null(const JsonReader& r, const json& v, const std::string& path) {
    if (v.is_null()) return std::nullopt;
    if (!v.is_number()) r.fail(path, "expected a number or null, got " + json_kind(v));
    return v.get<double>();
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
    JsonReader in(j, "row");
    ResultRow r;
    JsonReader key(object(in, "key"), in.at("key"));
    for (auto [name, out] : {std::pair{"config_hash", &r.key.config_hash},
                             {"model_hash", &r.key.model_hash},
                             {"dataset_hash", &r.key.dataset_hash}}) {
        *out = text(key, name);
        if (out->empty()) key.fail(key.at(name), "must not be empty");
    }
    key.finish();
    r.sweep   = text(in, "sweep");
    r.task    = text(in, "task");
    r.status  = text(in, "status");
    r.message = text(in, "message");
    if (r.status != "done" && r.status != "failed") in.fail(in.at("status"), "must be done or failed");
    r.config      = object(in, "config");
    r.stats       = object(in, "stats");
    r.predictions = object(in, "predictions");
    for (const auto& [name, v] : object(in, "metrics").items()) {
        const auto& columns    = metric_columns();
        const std::string path = json_path(in.at("metrics"), name);
        if (std::find(columns.begin(), columns.end(), name) == columns.end()) in.fail(path, "is not a metric column");
        if (const auto x = number_or_null(in, v, path)) r.metrics[name] = *x;
    }
    r.objective = number_or_null(in, in.need("objective"), in.at("objective"));
    in.need("prompts"), in.get("prompts", r.prompts, 0, std::numeric_limits<int32_t>::max());
    in.need("wall_s"), in.get("wall_s", r.wall_s, 0.0);
    in.finish();
    return r;
}

}  // namespace speculum::store
