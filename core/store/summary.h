// Summaries over stored results: the Pareto frontier of two metrics (speedup against draft memory, speedup
// against quality for lossy modes) and the best row per task.
#pragma once

#include "core/store/result_store.h"

#include <map>
#include <string>
#include <vector>

namespace speculum::store {

struct ParetoAxis {
    std::string metric;  // a metric column or "objective"
    bool maximize = true;
};

// Rows (status done, both metrics present) that no other row dominates (at least as good on both axes and
// better on one), sorted by the x metric ascending. Exact duplicates on both metrics are all kept.
std::vector<ResultRow> pareto_front(const std::vector<ResultRow>& rows, const ParetoAxis& x, const ParetoAxis& y);

// The best row per task by `metric` (higher is better unless maximize = false); rows without it are skipped.
std::map<std::string, ResultRow> best_per_task(const std::vector<ResultRow>& rows,
                                               const std::string& metric = "objective", bool maximize = true);

// The speedup to show for a row: measured "speedup" when present, else "predicted_speedup".
std::string speedup_metric(const std::vector<ResultRow>& rows);

}  // namespace speculum::store
