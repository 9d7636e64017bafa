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

std::map<std::string, ResultRow> best_per_task(const std::vector<ResultRow>& rows, const std::string& metric,
                                               bool maximize) {
    std::map<std::string, ResultRow> best;
    for (const auto& r : rows) {
        if (r.status != "done") continue;
        auto v = r.metric(metric);
        if (!v) continue;
        auto it = best.find(r.task);
        if (it == best.end()) {
            best.emplace(r.task, r);
            continue;
        }
        double cur = *it->second.metric(metric);
        if (maximize ? *v > cur : *v < cur) it->second = r;
    }
    return best;
}

std::string speedup_metric(const std::vector<ResultRow>& rows) {
    for (const auto& r : rows)
        if (r.metric("speedup")) return "speedup";
    return "predicted_speedup";
}

}  // namespace speculum::store
