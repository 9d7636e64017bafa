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

// pareto_front over rows given one at a time (a store streamed by ResultStore::for_each): only rows that may still
// be on the front are kept (the kept set is cut back to the front whenever it doubles), so memory follows the front,
// not the store. front() equals pareto_front() of every row added, in the same order.
class ParetoBuilder {
public:
    ParetoBuilder(ParetoAxis x, ParetoAxis y) : m_x(std::move(x)), m_y(std::move(y)) {}
    void add(const ResultRow& row);
    std::vector<ResultRow> front() const;

private:
    void compact();
    ParetoAxis m_x, m_y;
    std::vector<ResultRow> m_rows;  // candidates: the front of the rows so far, and those added since the last cut
    size_t m_cut_at = 1024;
};

// best_per_task over rows given one at a time.
class BestPerTask {
public:
    explicit BestPerTask(std::string metric = "objective", bool maximize = true)
        : m_metric(std::move(metric)), m_maximize(maximize) {}
    void add(const ResultRow& row);
    const std::map<std::string, ResultRow>& best() const { return m_best; }

private:
    std::string m_metric;
    bool m_maximize;
    std::map<std::string, ResultRow> m_best;
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
