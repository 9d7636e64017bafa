// Pareto frontier and best-per-task over result rows (see summary.h). O(n log n) sweep for two metrics.
#include "core/store/summary.h"

#include <algorithm>

namespace speculum::store {

std::vector<ResultRow> pareto_front(const std::vector<ResultRow>& rows, const ParetoAxis& x, const ParetoAxis& y) {
    // Work in "larger is better" coordinates.
    struct Item {
        double gx, gy;
        const ResultRow* row;
    };
    std::vector<Item> items;
    for (const auto& r : rows) {
        if (r.status != "done") continue;
        auto vx = r.metric(x.metric);
        auto vy = r.metric(y.metric);
        if (!vx || !vy) continue;
        items.push_back({x.maximize ? *vx : -*vx, y.maximize ? *vy : -*vy, &r});
    }
    // Best x first (ties: best y first); a row is on the front if its y beats every row with better-or-equal x.
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        if (a.gx != b.gx) return a.gx > b.gx;
        return a.gy > b.gy;
    });
    std::vector<ResultRow> front;
    bool any         = false;
    double best_y    = 0;
    double best_y_gx = 0;  // the x of the row that set best_y (equal x and equal y = duplicate, kept)
    for (const auto& it : items) {
        bool keep = !any || it.gy > best_y || (it.gy == best_y && it.gx == best_y_gx);
        if (keep) {
            front.push_back(*it.row);
            if (!any || it.gy > best_y) best_y_gx = it.gx;
            best_y = it.gy;
            any    = true;
        }
    }
    std::sort(front.begin(), front.end(),
              [&](const ResultRow& a, const ResultRow& b) { return *a.metric(x.metric) < *b.metric(x.metric); });
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
