// Result rows as CSV: one line per row with the keys, every metric column, the objective and the configuration as
// compact JSON. Shared by `speculum-cli results --csv` and `speculum-cli export --format csv`.
#pragma once

#include "core/store/result_store.h"

#include <ostream>
#include <string>
#include <vector>

namespace speculum::store {

// RFC 4180 quoting: fields holding a comma, quote or line break are quoted, quotes doubled.
std::string csv_field(const std::string& s);

void write_results_csv(std::ostream& out, const std::vector<ResultRow>& rows);
// The same, a row at a time (a streamed store): the header line, then one line per row.
void write_results_csv_header(std::ostream& out);
void write_results_csv_row(std::ostream& out, const ResultRow& r);

}  // namespace speculum::store
