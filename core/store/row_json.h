// A result row as JSON, for handing rows between processes (speculum-cli sweep --mpi sends each finished row to
// rank 0). Parsing is strict and bounded: a malformed or foreign message is refused with the field named.
#pragma once

#include "core/store/result_store.h"

#include <nlohmann/json.hpp>

namespace speculum::store {

// Every field of the row except created_at (the store sets it). Non-finite metrics become null (SQLite stores a
// NaN as NULL too, so a row means the same after the trip).
nlohmann::json row_to_json(const ResultRow& row);

// The inverse. Throws std::invalid_argument naming the field for: a missing or mistyped field, an unknown key, a
// status other than done/failed, a metric that is not one of metric_columns(), a negative count or time.
ResultRow row_from_json(const nlohmann::json& j);

}  // namespace speculum::store
