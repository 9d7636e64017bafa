// Pareto frontier and best-per-task over result rows (see summary.h). O(n log n) sweep for two metrics.
#include "core/store/summary.h"

#include "core/analytic/pareto.h"

#include <algorithm>

namespace speculum::store {

std::vector<ResultRow> pareto_front(const std::vector<ResultRow>& rows, const ParetoAxis& x, const ParetoAxis& y) {
    std::vector<const ResultRow*> kept;
    std::vector<double> xs, ys;
    for (const auto& r : rows) {
        if (r.status != "done") continue;
        auto vx = r.metric(x.metric);
        auto vy = r.metric(y.metric);
        if (!vx || !vy) continue;
        kept.push_back(&r), xs.push_back(*vx), ys.push_back(*vy);
    }
    using analytic::Goal;
    std::vector<ResultRow> front;
    for (size_t i : analytic::pareto_front(xs, ys, x.maximize ? Goal::maximize : Goal::minimize,
                                           y.maximize ? Goal::maximize : Goal::minimize))
        front.push_back(*kept[i]);
    return front;
}

void ParetoBuilder::add(const ResultRow& row) {
    if (row.status != "done" || !row.metric(m_x.metric) || !row.metric(m_y.metric)) return;
    m_rows.push_back(row);
    if (m_rows.size() >= m_cut_at) compact();
}

void ParetoBuilder::compact() {
    // A row off the front of some rows is dominated by a row on it (dominance is transitive), so it is off the
    // front of any superset too: dropping it never changes the final front.
    m_rows   = pareto_front(m_rows, m_x, m_y);
    m_cut_at = std::max<size_t>(1024, 2 * m_rows.size());
}

std::vector<ResultRow> ParetoBuilder::front() const {
    return pareto_front(m_rows, m_x, m_y);
}

void BestPerTask::add(const ResultRow& r) {
    if (r.status != "done") return;
    auto v = r.metric(m_metric);
    if (!v) return;
    auto it = m_best.find(r.task);
    if (it == m_best.end()) {
        m_best.emplace(r.task, r);
        return;
    }
    double cur = *it->second.metric(m_metric);
    if (m_maximize ? *v > cur : *v < cur) it->second = r;
}

std::map<std::string, ResultRow> best_per_task(const std::vector<ResultRow>& rows, const std::string& metric,
                                               bool maximize) {
    BestPerTask best(metric, maximize);
    for (const auto& r : rows) best.add(r);
    return best.best();
}

std::string speedup_metric(const std::vector<ResultRow>& rows) {
    for (const auto& r : rows)
        if (r.metric("speedup")) return "speedup";
    return "predicted_speedup";
}

}  // namespace speculum::store
