// `--filter` clauses for the result store: `field<op>value`, e.g. "speedup>1.5", "task=gsm8k",
// "/levels/0/prune/ratio<=0.5". Fields are the scalar columns, the text columns (task, status, sweep, *_hash)
// or a JSON pointer into the stored configuration. Compiled to SQL with bound parameters (no injection).
#pragma once

#include "core/store/result_store.h"

#include <string>
#include <variant>
#include <vector>

namespace speculum::store {

// Throws std::invalid_argument with the clause and the reason (unknown field, missing operator, not a number).
Filter parse_filter(const std::string& clause);
// Clauses separated by commas; an empty string gives no filters.
std::vector<Filter> parse_filters(const std::string& text);

using SqlValue = std::variant<double, std::string>;

// "(<expr> <op> ?)" with its bound value appended to `binds`; validates like parse_filter.
std::string filter_sql(const Filter& f, std::vector<SqlValue>& binds);

// "/levels/0/prune/ratio" -> "$.\"levels\"[0].\"prune\".\"ratio\"" (SQLite json_extract path).
std::string json_pointer_to_sqlite_path(const std::string& pointer);

}  // namespace speculum::store
