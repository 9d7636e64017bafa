// Pareto front by one sort and a sweep (see pareto.h).
#include "core/analytic/pareto.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace speculum::analytic {

std::vector<size_t> pareto_front(const std::vector<double>& x, const std::vector<double>& y, Goal x_goal, Goal y_goal) {
    if (x.size() != y.size()) throw std::invalid_argument("pareto_front: x and y differ in length");
    // In "larger is better" coordinates, best x first (ties: best y first, then index): a point is on the front when
    // its y beats every point before it, or equals the best exactly on both coordinates (a duplicate).
    struct Item {
        double gx, gy;
        size_t i;
    };
    std::vector<Item> items;
    for (size_t i = 0; i < x.size(); ++i) {
        if (std::isnan(x[i]) || std::isnan(y[i])) continue;
        items.push_back({x_goal == Goal::maximize ? x[i] : -x[i], y_goal == Goal::maximize ? y[i] : -y[i], i});
    }
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        return a.gx != b.gx ? a.gx > b.gx : a.gy != b.gy ? a.gy > b.gy : a.i < b.i;
    });
    std::vector<size_t> front;
    const Item* best = nullptr;  // the point that set the best y so far
    for (const Item& it : items) {
        if (!best || it.gy > best->gy) {
            front.push_back(it.i);
            best = &it;
        } else if (it.gy == best->gy && it.gx == best->gx) {
            front.push_back(it.i);
        }
    }
    std::sort(front.begin(), front.end(), [&](size_t a, size_t b) { return x[a] != x[b] ? x[a] < x[b] : a < b; });
    return front;
}

}  // namespace speculum::analytic
